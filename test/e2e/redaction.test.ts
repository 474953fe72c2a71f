// legs: db
// What a build or a release prints reaches users through the operation, the build and deployment
// records and the stored build log. None of it may show the server's data directory (its
// workspaces, its releases) or a value of the project's environment, nor one of its encodings:
// paths get neutral names and values are masked as ***, while the build and the release still get
// the real values.
import { createHash, randomUUID } from 'node:crypto';
import { realpathSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { RELEASE_REPORTS } from '../../core/deployments/release-reports.js';
import { Deployment } from '../../core/entities/deployment.js';
import { liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
let dataDirs: string[];
/** Every answer the API gave in this file, as text. */
const answers: string[] = [];

test.before(async () => {
  h = await liveHoist({ healthTimeoutSeconds: 4 });
  ({ token } = await h.login());
  dataDirs = [...new Set([h.running.kernel.config.dataDir, realpathSync(h.running.kernel.config.dataDir)])];
});
test.after(async () => h?.close());

// A value with characters every encoding changes, so each form is a distinct string to look for.
const SECRET = `tok_${randomUUID().replace(/-/g, '')}/+=&?"x`;
const forms = [
  SECRET,
  Buffer.from(SECRET).toString('base64'),
  Buffer.from(SECRET).toString('base64url'),
  encodeURIComponent(SECRET),
  JSON.stringify(SECRET).slice(1, -1),
];

async function api(method: string, path: string, body?: unknown): Promise<{ status: number; body: any; text: string }> {
  const res = await fetch(`${h.api}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  answers.push(text);
  return {
    status: res.status,
    body: res.headers.get('content-type')?.includes('json') ? JSON.parse(text) : text,
    text,
  };
}

/** A project with these settings and the variable SECRET_TOKEN. */
async function project(name: string, settings: Record<string, string>): Promise<{ id: string; url: string }> {
  const created = await api('POST', '/api/v1/projects/', { name, settings });
  assert.is(created.status, 201, created.text);
  const set = await api('PUT', `/api/v1/projects/${created.body.id}/environment/SECRET_TOKEN`, {
    value: SECRET,
    scope: 'both',
  });
  assert.ok(set.status === 200 || set.status === 201, set.text);
  return created.body;
}

/** Uploads `files` to the project and polls the operation (every view kept) until it is terminal. */
async function deploy(projectId: string, files: Record<string, string>): Promise<any> {
  const res = await h.upload(token, `/api/v1/projects/${projectId}/local-to-live`, await zipOf(files));
  const text = await res.text();
  answers.push(text);
  assert.is(res.status, 202, text);
  const id = JSON.parse(text).operation.id;
  const end = Date.now() + 90_000;
  for (;;) {
    const op = await api('GET', `/api/v1/operations/${id}`);
    if (['succeeded', 'failed', 'canceled'].includes(op.body.status)) return op.body;
    if (Date.now() > end) throw new Error(`operation did not end: ${op.text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Reads every record of the project the API offers, so their answers are checked too. */
async function readRecords(projectId: string): Promise<{ builds: any[]; deployments: any[]; logs: string[] }> {
  const builds = (await api('GET', `/api/v1/projects/${projectId}/builds`)).body.builds;
  const logs: string[] = [];
  for (const b of builds) {
    await api('GET', `/api/v1/projects/${projectId}/builds/${b.id}`);
    logs.push((await api('GET', `/api/v1/projects/${projectId}/builds/${b.id}/log`)).text);
  }
  const deployments = (await api('GET', `/api/v1/projects/${projectId}/deployments`)).body.deployments;
  for (const d of deployments) await api('GET', `/api/v1/projects/${projectId}/deployments/${d.id}`);
  await api('GET', `/api/v1/projects/${projectId}/releases`);
  return { builds, deployments, logs };
}

const assertClean = (label: string) => {
  for (const text of answers) {
    for (const dir of dataDirs)
      assert.not.ok(text.includes(dir), `${label}: an answer shows the data directory: ${text.slice(0, 400)}`);
    for (const form of forms)
      assert.not.ok(text.includes(form), `${label}: an answer shows the secret (${form}): ${text.slice(0, 400)}`);
  }
};

test('a failing build that prints its paths and the secret: the log, last lines and errors show neither', async () => {
  // The build prints where it runs, the value and its encodings (a second apart, so polls see the
  // lines streamed), checks it got the real value, then fails naming a path of its workspace.
  const p = await project('leaky-build', {
    build_command: [
      'echo "cwd $PWD"',
      'echo "token=$SECRET_TOKEN"',
      'sleep 1',
      `node -e 'const v = process.env.SECRET_TOKEN; ` +
        `console.log(Buffer.from(v).toString("base64")); ` +
        `console.log(encodeURIComponent(v)); console.log(JSON.stringify({ v }))'`,
      `node -e 'if ` +
        `(require("crypto").createHash("sha256").update(process.env.SECRET_TOKEN).digest("hex") ` +
        `=== "${createHash('sha256').update(SECRET).digest('hex')}") console.log("the ` +
        `build got the real value")'`,
      'sleep 1',
      'cat "$PWD/no-such-file"',
    ].join('; '),
    output_directory: '.',
  });
  const op = await deploy(p.id, { 'index.html': '<h1>never served</h1>' });
  assert.is(op.status, 'failed', JSON.stringify(op));
  assert.is(op.stages.build.error.code, 'build_failed');
  const { builds, logs } = await readRecords(p.id);
  const log = logs[0];
  assert.match(log, 'token=***');
  assert.match(log, 'the build got the real value');
  assert.ok(log.split('\n').filter((l) => l === '***').length >= 2, `base64 and URL-encoded forms masked:\n${log}`);
  assert.match(log, '{"v":"***"}');
  assert.match(log, /^cwd \S+/m);
  assert.ok(builds[0].log.last_lines.includes('token=***'), JSON.stringify(builds[0].log));
  assertClean('build');
});

test(
  'a Node.js release that prints its paths and the secret, then crashes: the ' + 'failure message shows neither',
  async () => {
    const p = await project('leaky-release', {});
    const op = await deploy(p.id, {
      'package.json': JSON.stringify({ name: 'leaky', version: '1.0.0', scripts: { start: 'node server.js' } }),
      'server.js':
        `console.log('file ' + __filename); console.log('cwd ' + process.cwd()); ` +
        `console.log('token=' + process.env.SECRET_TOKEN); ` +
        `console.log(Buffer.from(process.env.SECRET_TOKEN).toString('base64')); ` +
        `console.error('boom in ' + __dirname); process.exit(1);`,
    });
    assert.is(op.status, 'failed', JSON.stringify(op));
    const error = op.stages.deploy.error;
    assert.is(error.code, 'deploy_unhealthy');
    assert.match(error.message, 'token=***', error.message);
    assert.match(error.message, /^file \S+server\.js$/m);
    assert.match(error.message, 'boom in');
    assert.is(op.error.message, error.message);
    await readRecords(p.id);
    assertClean('release');
  },
);

test(
  'a failure a deployer records on a deployment later (a crash loop) is shown ' + 'without the paths or the secret',
  async () => {
    const p = await project('leaky-loop', {});
    const op = await deploy(p.id, {
      'package.json': JSON.stringify({ name: 'loop', version: '1.0.0', scripts: { start: 'node server.js' } }),
      'server.js': `process.exit(2);`,
    });
    assert.is(op.status, 'failed', JSON.stringify(op));
    // What deployer-local writes when a live release crashes five times within a minute: the app's last lines.
    const { deployments } = await readRecords(p.id);
    const dataDir = h.running.kernel.config.dataDir;
    const message =
      `The app crashed 5 times within a minute and was stopped. Last ` +
      `lines:\ntoken=${SECRET}\n    at ` +
      `${dataDir}/releases/${deployments[0].id}/server.js:1:9`;
    // Recorded as deployers record it (ReleaseReports, which masks it), on a release that was serving.
    await h.running.kernel.orm.em.fork().nativeUpdate(Deployment, { id: deployments[0].id }, { status: 'live' });
    const [summary, lines] = message.split(' Last lines:\n');
    await h.running.kernel.get(RELEASE_REPORTS).exited(deployments[0].id, summary, lines.split('\n'));
    const stored = await h.running.kernel.orm.em.fork().findOneOrFail(Deployment, { id: deployments[0].id });
    assert.not.match(stored.error!.message, SECRET, 'it is stored masked');
    const shown = (await readRecords(p.id)).deployments[0];
    assert.equal(shown.error, {
      code: 'deploy_crash_loop',
      message:
        'The app crashed 5 times within a minute and was stopped. Last ' +
        'lines:\ntoken=***\n    at <release>/server.js:1:9',
    });
    assertClean('crash loop');
  },
);

test.run();
