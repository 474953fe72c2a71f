// legs: db
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { GATE_FILE, processesRunning, waitForGate, workspaceGate } from '../helpers/gated-build.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
});
test.after(async () => h?.close());

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const until = async (cond: () => boolean | Promise<boolean>, ms = 15_000) => {
  const end = Date.now() + ms;
  while (!(await cond())) {
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

// A build script: writes dist/index.html with `marker`; when `gated`, waits for the gate file in
// its workspace first (the sandbox shows it no other host path). `id` (a gate's) goes in a comment.
const gateWait = `const t = setInterval(() => {
  if (fs.existsSync(${JSON.stringify(GATE_FILE)})) { clearInterval(t); finish(); }
}, 50);`;
const buildJs = (marker: string, gated = false, id = '') => `// ${id}
const fs = require('fs');
const finish = () => {
  fs.mkdirSync('dist', { recursive: true });
  fs.writeFileSync('dist/index.html', ${JSON.stringify(marker)});
  console.log('built ${marker}');
};
${gated ? gateWait : 'console.warn("warning: demo"); finish();'}
`;

test('a site with a build command is built in a workspace and its output served', async () => {
  const p = await project('built-site', { build_command: 'node build.js', output_directory: 'dist' });
  const op = await h.waitFor(token, await deploy(p.id, { 'build.js': buildJs('built v1'), 'src.txt': 'source' }));
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(op.stages.analyze.result.build_command, 'node build.js');
  assert.ok(
    op.build_log.last_lines.some((l: string) => l.includes('built built v1')),
    JSON.stringify(op.build_log),
  );
  assert.ok(op.build_log.warnings >= 1);
  assert.is((await h.site(hostOf(p.url))).body, 'built v1');
  assert.is((await h.site(hostOf(p.url), '/build.js')).status, 404, 'only the output directory is served');
});

test('cancel during a build stops its process; the previous release keeps serving', async () => {
  // A command line of its own, to find the build's process on the host (pids inside the sandbox are not the host's).
  const command = `node build.js cancel-${randomUUID()}`;
  const p = await project('cancel-me', { build_command: command, output_directory: 'dist' });
  assert.is((await h.waitFor(token, await deploy(p.id, { 'build.js': buildJs('release one') }))).status, 'succeeded');
  const opId = await deploy(p.id, { 'build.js': buildJs('release two', true) });
  await h.waitFor(token, opId, (o) => o.stages.build.status === 'running');
  await until(() => processesRunning(command).length > 0);
  const [pid] = processesRunning(command);
  assert.ok(alive(pid));

  const canceled = await h.post(token, `/api/v1/operations/${opId}/cancel`);
  assert.is(canceled.status, 202, JSON.stringify(canceled.body));
  assert.is(canceled.body.status, 'canceled');
  await until(() => !alive(pid));
  assert.equal(processesRunning(command), [], 'no process of the build is left');
  const op = await h.waitFor(token, opId);
  assert.is(op.status, 'canceled');
  assert.is(op.stages.build.status, 'canceled');
  assert.is(op.stages.deploy.status, 'canceled');
  assert.is(op.next_step.action, 'retry');
  assert.is((await h.site(hostOf(p.url))).body, 'release one');
  // The stage records its build's end once the sandboxed process is gone and its output drained.
  const buildOf = async () =>
    (await h.get(token, `/api/v1/projects/${p.id}/builds`)).body.builds.find(
      (b: { operation_id: string }) => b.operation_id === opId,
    );
  await until(async () => (await buildOf()).status !== 'running');
  const build = await buildOf();
  assert.is(build.status, 'canceled', 'the build record says canceled, not failed');
  assert.is(build.error, null);
  assert.match(
    await (await fetch(`${h.api}${build.log_url}`, { headers: { authorization: `Bearer ${token}` } })).text(),
    /Build stopped: operation canceled/,
  );

  const again = await h.post(token, `/api/v1/operations/${opId}/cancel`);
  assert.is(again.status, 409);
  assert.is(again.body.error.code, 'not_cancelable');
});

test('retry after a failed build resumes at the build and reuses the analysis', async () => {
  // The fix is the gate file, which the gate writes into the workspaces of builds started after it opens.
  const fix = workspaceGate(h.dataDir, 'build.js');
  const p = await project('retry-me', {
    build_command: `${waitForGate()} test -f ${GATE_FILE} && node build.js`,
    output_directory: 'dist',
  });
  const opId = await deploy(p.id, { 'build.js': buildJs('after retry', false, fix.id) });
  const failed = await h.waitFor(token, opId);
  assert.is(failed.status, 'failed');
  assert.is(failed.stages.build.error.code, 'build_failed');
  assert.is(failed.next_step.action, 'retry');
  const notCancelable = await h.post(token, `/api/v1/operations/${opId}/cancel`);
  assert.is(notCancelable.body.error.code, 'not_cancelable');

  fix.open();
  const retried = await h.post(token, `/api/v1/operations/${opId}/retry`);
  assert.is(retried.status, 202, JSON.stringify(retried.body));
  assert.is(retried.body.status, 'running');
  assert.is(retried.body.attempt, 2);
  const done = await h.waitFor(token, opId);
  fix.close();
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
  for (const [method, path] of [
    ['get', ''],
    ['post', '/cancel'],
    ['post', '/retry'],
  ] as const) {
    const res =
      method === 'get'
        ? await h.get(other.token, `/api/v1/operations/${opId}${path}`)
        : await h.post(other.token, `/api/v1/operations/${opId}${path}`);
    assert.is(res.status, 404, `${method} ${path}`);
    assert.is(res.body.error.code, 'not_found');
  }
  assert.is((await h.get(token, '/api/v1/operations/not-a-uuid')).status, 404);
  await h.waitFor(token, opId);
});

test.run();
