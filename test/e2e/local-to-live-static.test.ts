// legs: db
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
});
test.after(async () => h?.close());

test('a plain HTML site goes live at its project URL', async () => {
  const zip = await zipOf({ 'index.html': '<h1>hello hoist</h1>', 'about/index.html': 'about', 'style.css': 'body{}' });
  const res = await h.upload(token, '/api/v1/local-to-live', zip, { name: 'Plain Site' });
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  assert.is(body.action, 'local_to_live_queued');
  assert.is(body.operation.status, 'running');
  assert.is(body.operation.progress, 5);
  assert.match(body.project.url, /^http:\/\/plain-site\.localhost:\d+\/$/);
  assert.type(body.next_step, 'string');

  const op = await h.waitFor(token, body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(op.progress, 100);
  assert.is(op.stages.analyze.status, 'succeeded');
  assert.is(op.stages.analyze.result.runtime, 'static');
  assert.is(op.stages.build.status, 'succeeded');
  assert.is(op.stages.deploy.status, 'succeeded');
  assert.is(op.result.url, body.project.url);
  assert.is(op.next_step.action, 'none');
  // Nothing to build: Build was done in Analyze's claim, committed with its success (no job of its own).
  assert.equal(
    [op.stages.build.started_at, op.stages.build.finished_at, op.stages.build.skipped],
    [op.stages.analyze.finished_at, op.stages.analyze.finished_at, false],
  );
  const lines = ['Building with builder-static (static)', 'Plain static site: nothing to build.'];
  assert.equal(op.build_log.last_lines.slice(0, 2), lines);
  assert.match(op.build_log.last_lines[2], /^Artifact: the upload uploads\/\S+\.zip \(\d+ bytes\), as it is$/);
  // The whole log is stored after the commit.
  let log = await h.get(token, op.build_log.full_log);
  for (let i = 0; log.status === 404 && i < 100; i++) {
    await new Promise((r) => setTimeout(r, 50));
    log = await h.get(token, op.build_log.full_log);
  }
  assert.is(log.status, 200);
  assert.equal(String(log.body).trim().split('\n'), op.build_log.last_lines);

  const page = await h.site(hostOf(body.project.url));
  assert.is(page.status, 200);
  assert.is(page.body, '<h1>hello hoist</h1>');
  assert.is(page.headers['x-robots-tag'], 'noindex');
  const about = await h.site(hostOf(body.project.url), '/about/');
  assert.is(about.body, 'about');
  const css = await h.site(hostOf(body.project.url), '/style.css');
  assert.match(String(css.headers['content-type']), /text\/css/);
});

test('a site wrapped in one folder is unwrapped', async () => {
  const zip = await zipOf({ 'my-site/index.html': 'wrapped', '__MACOSX/my-site/._index.html': 'junk' });
  const body = await (await h.upload(token, '/api/v1/local-to-live', zip, { name: 'wrapped' })).json();
  const op = await h.waitFor(token, body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is((await h.site(hostOf(body.project.url))).body, 'wrapped');
});

test('an archive without index.html fails Analyze with fix_input guidance', async () => {
  const zip = await zipOf({ 'readme.txt': 'no html here' });
  const body = await (await h.upload(token, '/api/v1/local-to-live', zip, { name: 'no-index' })).json();
  const op = await h.waitFor(token, body.operation.id);
  assert.is(op.status, 'failed');
  assert.is(op.stages.analyze.error.code, 'analyze_no_index_html');
  assert.is(op.next_step.action, 'fix_input');
  assert.is(op.stages.build.status, 'canceled');
});

test("_redirects: a single-page app's deep links get index.html; a refused rule fails the deploy only", async () => {
  const redirects = '/old-docs/*  /docs/:splat  301\n/*  /index.html  200\n';
  const zip = await zipOf({
    'index.html': '<div id="app"></div>',
    'docs/a.html': 'docs a',
    _redirects: redirects,
    _headers: '/docs/*\n  Cache-Control: public, max-age=600\n',
  });
  const body = await (await h.upload(token, '/api/v1/local-to-live', zip, { name: 'spa' })).json();
  const op = await h.waitFor(token, body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  const host = hostOf(body.project.url);
  const deep = await h.site(host, '/settings/profile?tab=2');
  assert.is(deep.status, 200);
  assert.is(deep.body, '<div id="app"></div>');
  const docs = await h.site(host, '/docs/a');
  assert.is(docs.body, 'docs a', 'a file answers before the fallback');
  assert.is(docs.headers['cache-control'], 'public, max-age=600', 'the _headers rule');
  assert.is(deep.headers['cache-control'], 'public, max-age=0, must-revalidate');
  const moved = await h.site(host, '/old-docs/a?v=1');
  assert.is(moved.status, 301);
  assert.is(moved.headers.location, '/docs/a?v=1');
  for (const file of ['/_redirects', '/_headers'])
    assert.is((await h.site(host, file)).body, '<div id="app"></div>', `${file} is not served`);

  const releases = () => readdirSync(join(h.dataDir, 'releases')).sort();
  const before = releases();
  const bad = await zipOf({
    'index.html': 'new version',
    _redirects: '/*  /index.html  200\n/api/*  https://backend.internal/:splat  200\n/x /y 302 Role=admin\n',
  });
  const path = `/api/v1/projects/${body.project.id}/local-to-live`;
  const again = await (await h.upload(token, path, bad)).json();
  const failed = await h.waitFor(token, again.operation.id);
  assert.is(failed.status, 'failed');
  assert.is(failed.stages.deploy.error.code, 'deploy_redirects_invalid');
  assert.match(failed.stages.deploy.error.message, /line 2: https:\/\/backend\.internal\/:splat: .*proxying/);
  assert.match(failed.stages.deploy.error.message, /line 3: Role=admin: conditions/);
  assert.is(failed.next_step.action, 'fix_input');
  assert.is((await h.site(host, '/anything')).body, '<div id="app"></div>', 'the live release still answers');
  assert.equal(releases(), before, 'nothing of the refused release is on disk');
});

test('an unknown host gets the 404 page', async () => {
  const res = await h.site('nobody-here.localhost');
  assert.is(res.status, 404);
  assert.match(res.body, /Not found/);
});

test.run();
