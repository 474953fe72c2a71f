// legs: db
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
let scratch: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
  scratch = mkdtempSync(join(tmpdir(), 'hoist-build-'));
});
test.after(async () => {
  await h?.close();
  rmSync(scratch, { recursive: true, force: true });
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const until = async (cond: () => boolean, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
};

async function project(name: string, settings: Record<string, string>) {
  const res = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, settings }),
  });
  const body = await res.json();
  assert.is(res.status, 201, JSON.stringify(body));
  return body as { id: string; url: string };
}

async function deploy(projectId: string, files: Record<string, string>) {
  const res = await h.upload(token, `/api/v1/projects/${projectId}/local-to-live`, await zipOf(files));
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  return body.operation.id as string;
}

// A build script: writes dist/index.html with `marker`; waits for `gate` first when given, writing its pid.
const buildJs = (marker: string, gate?: string, pidFile?: string) => `
const fs = require('fs');
const finish = () => { fs.mkdirSync('dist', { recursive: true }); fs.writeFileSync('dist/index.html', ${JSON.stringify(marker)}); console.log('built ${marker}'); };
${gate ? `fs.writeFileSync(${JSON.stringify(pidFile)}, String(process.pid)); const t = setInterval(() => { if (fs.existsSync(${JSON.stringify(gate)})) { clearInterval(t); finish(); } }, 50);` : 'console.warn("warning: demo"); finish();'}
`;

test('a site with a build command is built in a workspace and its output served', async () => {
  const p = await project('built-site', { build_command: 'node build.js', output_directory: 'dist' });
  const op = await h.waitFor(token, await deploy(p.id, { 'build.js': buildJs('built v1'), 'src.txt': 'source' }));
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(op.stages.analyze.result.build_command, 'node build.js');
  assert.ok(op.build_log.last_lines.some((l: string) => l.includes('built built v1')), JSON.stringify(op.build_log));
  assert.ok(op.build_log.warnings >= 1);
  assert.is((await h.site(hostOf(p.url))).body, 'built v1');
  assert.is((await h.site(hostOf(p.url), '/build.js')).status, 404, 'only the output directory is served');
});

test('cancel during a build stops its process; the previous release keeps serving', async () => {
  const p = await project('cancel-me', { build_command: 'node build.js', output_directory: 'dist' });
  assert.is((await h.waitFor(token, await deploy(p.id, { 'build.js': buildJs('release one') }))).status, 'succeeded');
  const pidFile = join(scratch, 'cancel.pid');
  const opId = await deploy(p.id, { 'build.js': buildJs('release two', join(scratch, 'never'), pidFile) });
  await h.waitFor(token, opId, (o) => o.stages.build.status === 'running');
  await until(() => existsSync(pidFile) && readFileSync(pidFile, 'utf8').length > 0);
  const pid = Number(readFileSync(pidFile, 'utf8'));
  assert.ok(alive(pid));

  const canceled = await h.post(token, `/api/v1/operations/${opId}/cancel`);
  assert.is(canceled.status, 202, JSON.stringify(canceled.body));
  assert.is(canceled.body.status, 'canceled');
  await until(() => !alive(pid));
  const op = await h.waitFor(token, opId);
  assert.is(op.status, 'canceled');
  assert.is(op.stages.build.status, 'canceled');
  assert.is(op.stages.deploy.status, 'canceled');
  assert.is(op.next_step.action, 'retry');
  assert.is((await h.site(hostOf(p.url))).body, 'release one');
  const build = (await h.get(token, `/api/v1/projects/${p.id}/builds`)).body.builds.find((b: { operation_id: string }) => b.operation_id === opId);
  assert.is(build.status, 'canceled', 'the build record says canceled, not failed');
  assert.is(build.error, null);
  assert.match(await (await fetch(`${h.api}${build.log_url}`, { headers: { authorization: `Bearer ${token}` } })).text(), /Build stopped: operation canceled/);

  const again = await h.post(token, `/api/v1/operations/${opId}/cancel`);
  assert.is(again.status, 409);
  assert.is(again.body.error.code, 'not_cancelable');
});

test('retry after a failed build resumes at the build and reuses the analysis', async () => {
  const flag = join(scratch, 'flag');
  const p = await project('retry-me', { build_command: `test -f ${flag} && node build.js`, output_directory: 'dist' });
  const opId = await deploy(p.id, { 'build.js': buildJs('after retry') });
  const failed = await h.waitFor(token, opId);
  assert.is(failed.status, 'failed');
  assert.is(failed.stages.build.error.code, 'build_failed');
  assert.is(failed.next_step.action, 'retry');
  const notCancelable = await h.post(token, `/api/v1/operations/${opId}/cancel`);
  assert.is(notCancelable.body.error.code, 'not_cancelable');

  writeFileSync(flag, 'ok');
  const retried = await h.post(token, `/api/v1/operations/${opId}/retry`);
  assert.is(retried.status, 202, JSON.stringify(retried.body));
  assert.is(retried.body.status, 'running');
  assert.is(retried.body.attempt, 2);
  const done = await h.waitFor(token, opId);
  assert.is(done.status, 'succeeded', JSON.stringify(done));
  assert.is(done.stages.analyze.started_at, failed.stages.analyze.started_at, 'analyze was not run again');
  assert.is((await h.site(hostOf(p.url))).body, 'after retry');

  const twice = await h.post(token, `/api/v1/operations/${opId}/retry`);
  assert.is(twice.status, 409);
  assert.is(twice.body.error.code, 'not_retryable');
});

test('operations of another account are 404', async () => {
  const other = await h.login();
  const p = await project('mine-only', {});
  const opId = await deploy(p.id, { 'index.html': 'x' });
  for (const [method, path] of [['get', ''], ['post', '/cancel'], ['post', '/retry']] as const) {
    const res = method === 'get' ? await h.get(other.token, `/api/v1/operations/${opId}${path}`) : await h.post(other.token, `/api/v1/operations/${opId}${path}`);
    assert.is(res.status, 404, `${method} ${path}`);
    assert.is(res.body.error.code, 'not_found');
  }
  assert.is((await h.get(token, '/api/v1/operations/not-a-uuid')).status, 404);
  await h.waitFor(token, opId);
});

test.run();
