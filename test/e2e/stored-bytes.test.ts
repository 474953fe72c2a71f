// legs: db
// The plan's stored_bytes: once a deployment starts, the account's oldest archives and artifacts that no retained
// release or unfinished operation uses are removed until it is within them; what the live release uses stays.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { plans } from '../../core/billing/plans.js';
import { Build } from '../../core/entities/build.js';
import { Version } from '../../core/entities/version.js';
import { STORAGE } from '../../core/ports/storage.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
const limit = plans.free.limits.stored_bytes;
test.before(async () => {
  h = await liveHoist();
  // A plan that keeps less than two deployments' files (a test process's own copy of the plans).
  plans.free.limits.stored_bytes = 1;
});
test.after(async () => {
  plans.free.limits.stored_bytes = limit;
  await h?.close();
});

const waitUntil = async (what: string, ok: () => Promise<boolean>) => {
  for (let i = 0; i < 100 && !(await ok()); i++) await new Promise((r) => setTimeout(r, 100));
  assert.ok(await ok(), what);
};

test('past stored_bytes a deployment removes the oldest files no retained release uses; live stays', async () => {
  const { token } = await h.login('free');
  const { kernel } = h.running;
  const storage = kernel.get(STORAGE);
  const deploy = async (marker: string) => {
    const res = await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': `<h1>${marker}</h1>` }), {
      name: 'stored-bytes',
      visibility: 'public',
    });
    const body = await res.json();
    assert.is(res.status, 202, JSON.stringify(body));
    const op = await h.waitFor(token, body.operation.id);
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    return body.operation.id as string;
  };
  const files = async (operationId: string) => {
    const em = kernel.orm.em.fork();
    const version = await em.findOneOrFail(Version, { operationId });
    const build = await em.findOneOrFail(Build, { operationId });
    return {
      removed: [Boolean(version.archiveRemovedAt), Boolean(build.artifactRemovedAt)],
      stored: [(await storage.stat(version.archiveKey)) !== null, (await storage.stat(build.artifactKey!)) !== null],
    };
  };
  const first = await deploy('one');
  const second = await deploy('two');
  // The first was live when the second started: kept then. The third finds it superseded and pruned.
  assert.equal((await files(first)).removed, [false, false]);
  const third = await deploy('three');
  await waitUntil('the first deployment lets its files go', async () => (await files(first)).stored.every((s) => !s));
  assert.equal((await files(first)).removed, [true, true]);
  for (const op of [second, third]) assert.equal((await files(op)).removed, [false, false], 'retained releases');
  const site = await h.site(hostOf((await h.get(token, '/api/v1/projects/')).body.projects[0].url));
  assert.is(site.body, '<h1>three</h1>');
});

test.run();
