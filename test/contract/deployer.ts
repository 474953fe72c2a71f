import type { EntityManager } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { Deployment, type ReleaseTarget } from '../../core/entities/deployment.js';
import { StageError } from '../../core/operations/stage-error.js';
import type { Deployer, ReleaseSpec } from '../../core/ports/deployer.js';
import type { Storage } from '../../core/ports/storage.js';
import { zipOf } from '../helpers/live.js';

/** A deployer under test, with what the suite needs around it. */
export interface DeployerUnderTest {
  deployer: Deployer;
  /** The storage the deployer fetches artifacts from. */
  storage: Storage;
  em: EntityManager;
  /** As after a restart of the host: the releases stop running; returns a fresh deployer instance. */
  restart(): Promise<Deployer>;
  /** What remains of a deployment's resources (directories, processes, containers, images); [] when nothing. */
  leftovers(deploymentId: string): Promise<string[]>;
  cleanup(): Promise<void>;
}

/** A dependency-free server that answers with its marker, an env variable and the path; listens where the deployer says. */
const server = (marker: string, { delayMs = 0, before = '' } = {}) => `
${before}
const http = require('http');
setTimeout(() => {
  http.createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ marker: ${JSON.stringify(marker)}, greeting: process.env.GREETING || null, path: req.url }));
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

/** Records the release as a live deployment, as the Deploy stage does once it switches to it. */
async function live(em: EntityManager, spec: ReleaseSpec, target: ReleaseTarget): Promise<void> {
  const id = () => randomUUID();
  await em.fork().persist(Object.assign(new Deployment(), { id: spec.deploymentId, accountId: id(), projectId: spec.projectId, versionId: id(), buildId: id(), operationId: id(), status: 'live', target })).flush();
}

/** Polls until nothing answers at the target any more (the release's process is gone); fails after 30 s. */
async function gone(target: ReleaseTarget): Promise<void> {
  const end = Date.now() + 30_000;
  while (Date.now() < end) {
    const res = await fetchRelease(target, '/').catch(() => null);
    if (!res || res.status >= 500) return;
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
  throw new assert.Assertion({ message: 'expected a rejection', operator: 'rejects', actual: 'resolved', expects: 'rejected' });
}

/**
 * Registers and runs the Deployer contract: every Deployer plugin must pass it. `make` gives a
 * fresh deployer for each test.
 */
export function deployerContract(name: string, make: () => Promise<DeployerUnderTest>): void {
  const test = suite<{ d: DeployerUnderTest; made: string[] }>(`deployer contract: ${name}`);
  test.before.each(async (ctx) => {
    ctx.d = await make();
    ctx.made = [];
  });
  test.after.each(async (ctx) => {
    for (const id of ctx.made) await ctx.d.deployer.remove(id).catch(() => {});
    await ctx.d?.cleanup();
  });

  /** Stores a ZIP of `files` as an artifact and returns the release spec of a new deployment. */
  async function release(ctx: { d: DeployerUnderTest; made: string[] }, runtime: 'static' | 'node', files: Record<string, string>, extra: Partial<ReleaseSpec> = {}): Promise<ReleaseSpec> {
    const deploymentId = randomUUID();
    const artifactKey = `artifacts/${deploymentId}.zip`;
    await ctx.d.storage.put(artifactKey, Readable.from([await zipOf(files)]));
    ctx.made.push(deploymentId);
    return { deploymentId, projectId: randomUUID(), slug: `s-${deploymentId.slice(0, 8)}`, runtime, artifactKey, startCommand: runtime === 'node' ? 'node server.js' : null, env: {}, ...extra };
  }
  const control = (signal = new AbortController().signal, log: (line: string) => void = () => {}) => ({ signal, log });

  test('a static release is served through its target; remove takes it down and is idempotent', async (ctx) => {
    const spec = await release(ctx, 'static', { 'index.html': '<h1>static one</h1>', 'about/index.html': 'about page' });
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
    const spec = await release(ctx, 'node', { 'package.json': '{"name":"app"}', 'server.js': server('node one') }, { env: { GREETING: 'hello from env' } });
    const target = await ctx.d.deployer.prepare(spec, control());
    assert.is(target.kind, 'http');
    const res = await fetchRelease(target, '/some/path?x=1');
    assert.is(res.status, 200);
    assert.equal(JSON.parse(res.body), { marker: 'node one', greeting: 'hello from env', path: '/some/path?x=1' });
    await ctx.d.deployer.remove(spec.deploymentId);
    assert.equal(await ctx.d.leftovers(spec.deploymentId), []);
    await gone(target);
    await ctx.d.deployer.remove(spec.deploymentId);
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
    const spec = await release(ctx, 'node', { 'server.js': server('slow', { delayMs: 60_000, before: "console.log('warming up')" }) });
    const abort = new AbortController();
    const err = await rejection(ctx.d.deployer.prepare(spec, control(abort.signal, () => setTimeout(() => abort.abort(), 300))));
    assert.is(err.code, 'deploy_canceled');
    assert.equal(await ctx.d.leftovers(spec.deploymentId), []);
  });

  test('a release that never answers fails with deploy_unhealthy and its last log lines; nothing is left', async (ctx) => {
    const spec = await release(ctx, 'node', { 'server.js': "console.log('booting the app'); console.error('never listening'); setInterval(() => {}, 1000);" });
    const err = await rejection(ctx.d.deployer.prepare(spec, control()));
    assert.is(err.code, 'deploy_unhealthy');
    assert.match(err.message, 'never listening');
    assert.ok((err.details.last_lines as string[]).some((l) => l.includes('booting the app')), JSON.stringify(err.details));
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
    assert.is(err.retryable, false);
    assert.equal(await ctx.d.leftovers(spec.deploymentId), []);
  });

  test('a live release that keeps crashing is marked failed with deploy_crash_loop', async (ctx) => {
    // Answers, then crashes a moment later on every start.
    const spec = await release(ctx, 'node', { 'server.js': "require('http').createServer((q, r) => r.end('up')).listen(Number(process.env.PORT), process.env.HOST); setTimeout(() => process.exit(1), 300);" });
    const target = await ctx.d.deployer.prepare(spec, control());
    await live(ctx.d.em, spec, target);
    const end = Date.now() + 120_000;
    let row: Deployment;
    do {
      await new Promise((r) => setTimeout(r, 250));
      row = await ctx.d.em.fork().findOneOrFail(Deployment, { id: spec.deploymentId });
    } while (row.status === 'live' && Date.now() < end);
    assert.is(row.status, 'failed');
    assert.is(row.error?.code, 'deploy_crash_loop');
  });

  test('restore brings live releases back after a restart and records where they answer', async (ctx) => {
    const spec = await release(ctx, 'node', { 'server.js': server('restored') });
    const target = await ctx.d.deployer.prepare(spec, control());
    await live(ctx.d.em, spec, target);

    const deployer = await ctx.d.restart();
    ctx.d.deployer = deployer;
    await gone(target);
    await deployer.restore([spec]);
    const row = await ctx.d.em.fork().findOneOrFail(Deployment, { id: spec.deploymentId });
    assert.is(row.status, 'live', JSON.stringify(row.error));
    const res = await fetchRelease(row.target!, '/');
    assert.is(JSON.parse(res.body).marker, 'restored');
    await deployer.restore([spec]);
    assert.is(JSON.parse((await fetchRelease((await ctx.d.em.fork().findOneOrFail(Deployment, { id: spec.deploymentId })).target!, '/')).body).marker, 'restored');
  });

  test.run();
}
