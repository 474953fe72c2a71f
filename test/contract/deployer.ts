import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { StageError } from '../../core/errors.js';
import type { Deployer, ReleaseReports, ReleaseSpec, ReleaseTarget } from '../../core/ports/deployer.js';
import type { Storage } from '../../core/ports/storage.js';
import { zipOf } from '../helpers/live.js';

/** A deployer under test, with what the suite needs around it. */
export interface DeployerUnderTest {
  deployer: Deployer;
  /** The storage the deployer fetches artifacts from. */
  storage: Storage;
  /** As after a restart of the host: the releases stop running; returns a fresh deployer instance. */
  restart(): Promise<Deployer>;
  /**
   * Damages a prepared release as if it happened while Hoist was down (its files or its container,
   * image and artifact gone), so that `restore` cannot bring it back.
   */
  spoil(spec: ReleaseSpec): Promise<void>;
  /** What remains of a deployment's resources (directories, processes, containers, images); [] when nothing. */
  leftovers(deploymentId: string): Promise<string[]>;
  cleanup(): Promise<void>;
}

/** A dependency-free server answering with its marker, an env variable and the path, where the deployer says. */
const server = (marker: string, { delayMs = 0, before = '' } = {}) => `
${before}
const http = require('http');
setTimeout(() => {
  http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    const greeting = process.env.GREETING || null;
    res.end(JSON.stringify({ marker: ${JSON.stringify(marker)}, greeting, path: req.url }));
  }).listen(Number(process.env.PORT), process.env.HOST || '127.0.0.1');
}, ${delayMs});
`;

/** GET `path` of a release through its target: a file under a static root, or HTTP. */
export async function fetchRelease(target: ReleaseTarget, path: string): Promise<{ status: number; body: string }> {
  if (target.kind === 'static') {
    const file = join(target.root, path.endsWith('/') ? `${path}index.html` : path);
    return readFile(file, 'utf8').then(
      (body) => ({ status: 200, body }),
      () => ({ status: 404, body: '' }),
    );
  }
  const res = await fetch(new URL(path, target.url), { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, body: await res.text() };
}

/** What a deployer reported, in order: ReleaseReports as core's records it, kept for the test to read. */
export class RecordedReports implements ReleaseReports {
  readonly targets: { deploymentId: string; target: ReleaseTarget }[] = [];
  readonly exits: { deploymentId: string; summary: string; lastLines: string[] }[] = [];
  readonly failures: { deploymentId: string; reason: string }[] = [];

  async targetChanged(deploymentId: string, target: ReleaseTarget): Promise<void> {
    this.targets.push({ deploymentId, target });
  }

  async exited(deploymentId: string, summary: string, lastLines: string[]): Promise<void> {
    this.exits.push({ deploymentId, summary, lastLines });
  }

  async failed(deploymentId: string, reason: string): Promise<void> {
    this.failures.push({ deploymentId, reason });
  }

  /** The last address reported for the deployment, if any. */
  lastTarget(deploymentId: string): ReleaseTarget | undefined {
    return [...this.targets].reverse().find((t) => t.deploymentId === deploymentId)?.target;
  }
}

/**
 * Polls until the release whose answers carry `marker` (server's) no longer answers at the target (its process is
 * gone); fails after 30 s. Whatever else answers there does not count: another release may have been given its
 * address since (a Docker network hands a freed address to the next container, of a test running beside this one).
 */
async function gone(target: ReleaseTarget, marker: string): Promise<void> {
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    const res = await fetchRelease(target, '/').catch(() => null);
    if (!res || res.status >= 500 || !res.body.includes(`"marker":${JSON.stringify(marker)}`)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.unreachable(`the release at ${JSON.stringify(target)} still answers`);
}

async function rejection(p: Promise<unknown>): Promise<StageError> {
  try {
    await p;
  } catch (err) {
    assert.instance(err, StageError, String(err));
    return err as StageError;
  }
  throw new assert.Assertion({
    message: 'expected a rejection',
    operator: 'rejects',
    actual: 'resolved',
    expects: 'rejected',
  });
}

/**
 * Registers and runs the Deployer contract: every Deployer plugin must pass it. `make` gives a
 * fresh deployer for each test.
 */
export function deployerContract(name: string, make: () => Promise<DeployerUnderTest>): void {
  const test = suite<{ d: DeployerUnderTest; made: string[] }>(`deployer contract: ${name}`);
  /** What the deployer under test reported in the current test. */
  let reports = new RecordedReports();
  test.before.each(async (ctx) => {
    ctx.d = await make();
    ctx.made = [];
    reports = new RecordedReports();
  });
  test.after.each(async (ctx) => {
    for (const id of ctx.made) await ctx.d.deployer.remove(id).catch(() => {});
    // uvu drops an error thrown here without a word (and ends the suite): say it.
    await ctx.d?.cleanup().catch((err) => {
      console.error(`deployer contract: cleanup failed: ${err?.stack ?? err}`);
      throw err;
    });
  });

  /** Stores a ZIP of `files` as an artifact and returns the release spec of a new deployment. */
  async function release(
    ctx: { d: DeployerUnderTest; made: string[] },
    runtime: 'static' | 'node',
    files: Record<string, string>,
    extra: Partial<ReleaseSpec> = {},
  ): Promise<ReleaseSpec> {
    const deploymentId = randomUUID();
    const artifactKey = `artifacts/${deploymentId}.zip`;
    await ctx.d.storage.put(artifactKey, Readable.from([await zipOf(files)]));
    ctx.made.push(deploymentId);
    return {
      deploymentId,
      accountId: randomUUID(),
      projectId: randomUUID(),
      slug: `s-${deploymentId.slice(0, 8)}`,
      runtime,
      artifactKey,
      startCommand: runtime === 'node' ? 'node server.js' : null,
      env: {},
      ...extra,
    };
  }
  const control = (signal = new AbortController().signal, log: (line: string) => void = () => {}) => ({
    signal,
    log,
    report: reports,
  });

  test('a static release is served through its target; remove takes it down and is idempotent', async (ctx) => {
    const spec = await release(ctx, 'static', {
      'index.html': '<h1>static one</h1>',
      'about/index.html': 'about page',
    });
    const target = await ctx.d.deployer.prepare(spec, control());
    const home = await fetchRelease(target, '/');
    assert.is(home.status, 200);
    assert.match(home.body, 'static one');
    assert.match((await fetchRelease(target, '/about/')).body, 'about page');
    await ctx.d.deployer.remove(spec.deploymentId);
    await ctx.d.deployer.remove(spec.deploymentId);
    assert.equal(await ctx.d.leftovers(spec.deploymentId), []);
    await ctx.d.deployer.remove(randomUUID());
  });

  test('a Node.js release runs its start command with its environment and answers through its target', async (ctx) => {
    const spec = await release(
      ctx,
      'node',
      { 'package.json': '{"name":"app"}', 'server.js': server('node one') },
      { env: { GREETING: 'hello from env' } },
    );
    const target = await ctx.d.deployer.prepare(spec, control());
    assert.is(target.kind, 'http');
    const res = await fetchRelease(target, '/some/path?x=1');
    assert.is(res.status, 200);
    assert.equal(JSON.parse(res.body), { marker: 'node one', greeting: 'hello from env', path: '/some/path?x=1' });
    await ctx.d.deployer.remove(spec.deploymentId);
    assert.equal(await ctx.d.leftovers(spec.deploymentId), []);
    await gone(target, 'node one');
    await ctx.d.deployer.remove(spec.deploymentId);
  });

  test('suspend stops a release and keeps it; resume starts it without its artifact; gone on remove', async (ctx) => {
    const { deployer } = ctx.d;
    if (!deployer.suspend || !deployer.resume) return; // optional: such a deployer's releases are not promotable
    const spec = await release(ctx, 'node', { 'server.js': server('kept') }, { env: { GREETING: 'again' } });
    const first = await deployer.prepare(spec, control());
    await deployer.suspend(spec.deploymentId);
    await deployer.suspend(spec.deploymentId);
    await gone(first, 'kept');
    // The artifact is gone from Storage: resume must not need it.
    await ctx.d.storage.delete(spec.artifactKey);
    const again = await deployer.resume(spec, control());
    assert.equal(JSON.parse((await fetchRelease(again, '/')).body).greeting, 'again');
    const page = await release(ctx, 'static', { 'index.html': 'kept page' });
    await deployer.prepare(page, control());
    await deployer.suspend(page.deploymentId);
    assert.match((await fetchRelease(await deployer.resume(page, control()), '/')).body, 'kept page');
    await deployer.remove(spec.deploymentId);
    await gone(again, 'kept');
    const err = await rejection(deployer.resume(spec, control()));
    assert.is(err.code, 'deploy_release_gone');
    assert.equal(await ctx.d.leftovers(spec.deploymentId), []);
  });

  test('runningReleases names each release that runs, once; not one removed', async (ctx) => {
    const { deployer } = ctx.d;
    if (!deployer.runningReleases) return; // optional: such a deployer's releases stop on its drain timer alone
    const one = await release(ctx, 'static', { 'index.html': 'one' });
    const two = await release(ctx, 'static', { 'index.html': 'two' });
    await deployer.prepare(one, control());
    await deployer.prepare(two, control());
    const listed = await deployer.runningReleases();
    assert.ok(listed.includes(one.deploymentId) && listed.includes(two.deploymentId), JSON.stringify(listed));
    assert.is(new Set(listed).size, listed.length, 'each once');
    await deployer.remove(one.deploymentId);
    const after = await deployer.runningReleases();
    assert.not.ok(after.includes(one.deploymentId), 'a removed release is not named');
    assert.ok(after.includes(two.deploymentId));
  });

  test('two releases run side by side, each answering with its own files', async (ctx) => {
    const one = await release(ctx, 'node', { 'server.js': server('first') });
    const two = await release(ctx, 'node', { 'server.js': server('second') });
    const [a, b] = await Promise.all([ctx.d.deployer.prepare(one, control()), ctx.d.deployer.prepare(two, control())]);
    assert.is(JSON.parse((await fetchRelease(a, '/')).body).marker, 'first');
    assert.is(JSON.parse((await fetchRelease(b, '/')).body).marker, 'second');
  });

  test('cancel mid-prepare rejects with deploy_canceled and leaves nothing', async (ctx) => {
    // The server waits a minute before listening: the deploy is still waiting for it when canceled.
    const spec = await release(ctx, 'node', {
      'server.js': server('slow', { delayMs: 60_000, before: "console.log('warming up')" }),
    });
    const abort = new AbortController();
    const err = await rejection(
      ctx.d.deployer.prepare(
        spec,
        control(abort.signal, () => setTimeout(() => abort.abort(), 300)),
      ),
    );
    assert.is(err.code, 'deploy_canceled');
    assert.equal(await ctx.d.leftovers(spec.deploymentId), []);
  });

  test('a release that never answers fails with deploy_unhealthy and its last lines; nothing is left', async (ctx) => {
    const spec = await release(ctx, 'node', {
      'server.js': "console.log('booting the app'); console.error('never listening'); setInterval(() => {}, 1000);",
    });
    const err = await rejection(ctx.d.deployer.prepare(spec, control()));
    assert.is(err.code, 'deploy_unhealthy');
    assert.match(err.message, 'never listening');
    assert.ok(
      (err.details.last_lines as string[]).some((l) => l.includes('booting the app')),
      JSON.stringify(err.details),
    );
    assert.equal(await ctx.d.leftovers(spec.deploymentId), []);
  });

  test('a release that exits at once fails with what it printed', async (ctx) => {
    const spec = await release(ctx, 'node', { 'server.js': "console.error('boom: missing config'); process.exit(3);" });
    const err = await rejection(ctx.d.deployer.prepare(spec, control()));
    assert.is(err.code, 'deploy_unhealthy');
    assert.match(err.message, 'boom: missing config');
    assert.equal(await ctx.d.leftovers(spec.deploymentId), []);
  });

  test('a Node.js release without a start command fails with deploy_no_start_command; nothing is made', async (ctx) => {
    const spec = await release(ctx, 'node', { 'server.js': server('x') }, { startCommand: null });
    const err = await rejection(ctx.d.deployer.prepare(spec, control()));
    assert.is(err.code, 'deploy_no_start_command');
    assert.equal(await ctx.d.leftovers(spec.deploymentId), []);
  });

  test('a release that keeps crashing is reported as exited, with its last lines', async (ctx) => {
    // Answers, then crashes a moment later on every start.
    const spec = await release(ctx, 'node', {
      'server.js': [
        "console.log('crashing soon');",
        "require('http').createServer((q, r) => r.end('up')).listen(Number(process.env.PORT), process.env.HOST);",
        // A second of life: answering is what the deploy waits for, even on a busy machine.
        'setTimeout(() => process.exit(1), 1000);',
      ].join('\n'),
    });
    await ctx.d.deployer.prepare(spec, control());
    const end = Date.now() + 120_000;
    while (!reports.exits.length && Date.now() < end) await new Promise((r) => setTimeout(r, 250));
    const [exit] = reports.exits;
    assert.ok(exit, 'no exit was reported');
    assert.is(exit.deploymentId, spec.deploymentId);
    assert.match(exit.summary, 'crashed');
    assert.ok(exit.lastLines.includes('crashing soon'), JSON.stringify(exit.lastLines));
    assert.equal(reports.failures, []);
  });

  test('restore brings live releases back after a restart and reports where they answer', async (ctx) => {
    const spec = await release(ctx, 'node', { 'server.js': server('restored') });
    const target = await ctx.d.deployer.prepare(spec, control());

    const deployer = await ctx.d.restart();
    ctx.d.deployer = deployer;
    await gone(target, 'restored');
    await deployer.restore([spec], reports);
    assert.equal(reports.failures, []);
    const restored = reports.lastTarget(spec.deploymentId);
    assert.ok(restored, 'no address was reported');
    assert.is(JSON.parse((await fetchRelease(restored, '/')).body).marker, 'restored');
    await deployer.restore([spec], reports);
    assert.equal(reports.failures, []);
    assert.is(JSON.parse((await fetchRelease(reports.lastTarget(spec.deploymentId)!, '/')).body).marker, 'restored');
  });

  test('restore reports a release it cannot bring back as failed', async (ctx) => {
    const spec = await release(ctx, 'node', { 'server.js': server('restored') });
    await ctx.d.deployer.prepare(spec, control());
    const deployer = await ctx.d.restart();
    ctx.d.deployer = deployer;
    await ctx.d.spoil(spec);
    await deployer.restore([spec], reports);
    assert.is(reports.failures.length, 1, JSON.stringify(reports));
    assert.is(reports.failures[0].deploymentId, spec.deploymentId);
    assert.equal(reports.lastTarget(spec.deploymentId), undefined);
  });

  test.run();
}
