// legs: db
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RateHit } from '../../core/entities/rate-hit.js';
import { User } from '../../core/entities/user.js';
import { liveHoist, type LiveHoist } from '../helpers/live.js';
import { accountWithPassword, remoteCli, type RemoteCli } from '../helpers/remote-cli.js';

let h: LiveHoist;
let cli: RemoteCli;
let key: string;
test.before(async () => {
  h = await liveHoist({ healthTimeoutSeconds: 10 });
  cli = remoteCli(h);
  const user = await accountWithPassword(h, 'free');
  const login = await cli.run(['login'], `${user.email}\n${user.password}\n`);
  assert.is(login.code, 0, login.stderr);
  const { accountId } = await h.running.kernel.orm.em.fork().findOneOrFail(User, { email: user.email });
  key = `manifests:${accountId}`;
});
test.after(async () => h?.close());

/** The free plan's 60 manifests of the hour, all sent `ago` ms ago. */
async function limitReached(ago: number) {
  const em = h.running.kernel.orm.em.fork();
  await em.nativeDelete(RateHit, { key });
  const at = new Date(Date.now() - ago);
  for (let i = 0; i < 60; i++) em.persist(Object.assign(new RateHit(), { key, at }));
  await em.flush();
}

function site(name: string): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'hoist-cli-wait-')), name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'index.html'), `<h1>${name}</h1>`);
  return dir;
}

test('hoist deploy waits out a manifest 429 for its Retry-After, says so, and deploys', async () => {
  // The window ends 12 s from now: room for a CLI that is slow to start on a busy machine.
  await limitReached(3600_000 - 12_000);
  const started = Date.now();
  const r = await cli.run(['deploy', site('waits'), '--name', 'waits']);
  assert.is(r.code, 0, r.stdout + r.stderr);
  const waited = /rate_limited\); waiting (\d+) s as it asks/.exec(r.stdout + r.stderr);
  assert.ok(waited && Number(waited[1]) >= 1 && Number(waited[1]) <= 13, r.stdout + r.stderr);
  assert.ok(Date.now() - started >= 1000, 'it waited');
});

test('a Retry-After past the bound fails at once with the rate_limited error', async () => {
  await limitReached(0);
  const started = Date.now();
  const r = await cli.run(['deploy', site('refused'), '--name', 'refused']);
  assert.is(r.code, 1, r.stdout + r.stderr);
  assert.match(r.stdout + r.stderr, /upload manifests an hour/);
  assert.not.match(r.stdout + r.stderr, /waiting/);
  assert.ok(Date.now() - started < 30_000);
});

test.run();
