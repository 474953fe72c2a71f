// legs: db
// A static site with nothing to build takes its artifact straight from the upload (never unpacked in
// Build): the project's output_directory still picks the folder that is served, and is still checked.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { STORAGE, type Storage } from '../../core/ports/storage.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
});
test.after(async () => h?.close());

/**
 * Creates a project with these build settings and uploads `files` to it; returns the project and the finished
 * operation.
 */
async function deploy(name: string, settings: Record<string, string>, files: Record<string, string>) {
  const created = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, settings }),
  });
  const project = await created.json();
  assert.is(created.status, 201, JSON.stringify(project));
  const res = await h.upload(token, `/api/v1/projects/${project.id}/local-to-live`, await zipOf(files));
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  return { project, op: await h.waitFor(token, body.operation.id) };
}

test('the output directory is what goes live, and only it', async () => {
  const { project, op } = await deploy(
    'out-dir',
    { output_directory: 'public' },
    {
      'index.html': 'the source page',
      'public/index.html': 'the public page',
      'public/css/app.css': 'body{}',
    },
  );
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.ok(op.build_log.last_lines.includes('Plain static site: nothing to build.'), JSON.stringify(op.build_log));
  const host = hostOf(project.url);
  assert.is((await h.site(host)).body, 'the public page');
  assert.is((await h.site(host, '/css/app.css')).status, 200);
  assert.is((await h.site(host, '/public/index.html')).status, 404);
});

test('the upload is the artifact: no artifact object is written, and only its output folder goes live', async () => {
  const storage = h.running.kernel.get<Storage>(STORAGE);
  const artifacts = async () => {
    const keys: string[] = [];
    for await (const o of storage.list('artifacts/')) keys.push(o.key);
    return keys.sort();
  };
  const before = await artifacts();
  // One top-level folder (unwrapped), and the output directory inside it.
  const { project, op } = await deploy(
    'out-dir-as-is',
    { output_directory: 'public' },
    {
      'site/index.html': 'the wrapped source page',
      'site/public/index.html': 'the wrapped public page',
      'site/public/js/app.js': 'console.log(1)',
    },
  );
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.equal(await artifacts(), before, 'no artifact object written');
  const builds = await h.get(token, `/api/v1/projects/${project.id}/builds`);
  const [build] = builds.body.builds;
  assert.match(build.artifact.key, /^uploads\//, JSON.stringify(build));
  assert.ok(
    build.log.last_lines.some((l: string) => l.includes(', folder public (')),
    JSON.stringify(build.log.last_lines),
  );
  const host = hostOf(project.url);
  assert.is((await h.site(host)).body, 'the wrapped public page');
  assert.is((await h.site(host, '/js/app.js')).body, 'console.log(1)');
  assert.is((await h.site(host, '/public/index.html')).status, 404);
  assert.is((await h.site(host, '/site/index.html')).status, 404);
});

test('an output directory the upload lacks fails Build with build_output_missing; nothing goes live', async () => {
  const { project, op } = await deploy(
    'out-dir-missing',
    { output_directory: 'dist' },
    { 'index.html': 'no dist here' },
  );
  assert.is(op.status, 'failed', JSON.stringify(op));
  assert.is(op.stages.analyze.status, 'succeeded');
  assert.is(op.stages.build.error.code, 'build_output_missing');
  assert.is(op.stages.deploy.status, 'canceled');
  assert.is((await h.site(hostOf(project.url))).status, 404);
});

test('an output directory without index.html fails Build with build_output_no_index_html', async () => {
  const { op } = await deploy(
    'out-dir-no-index',
    { output_directory: 'public' },
    { 'index.html': 'root', 'public/readme.txt': 'no page' },
  );
  assert.is(op.status, 'failed', JSON.stringify(op));
  assert.is(op.stages.build.error.code, 'build_output_no_index_html');
});

test.run();
