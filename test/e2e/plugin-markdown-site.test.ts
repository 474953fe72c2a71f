// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { markdownSiteMissing, markdownSitePath } from '../helpers/markdown-site.js';

const missing = markdownSiteMissing();
if (missing) throw new Error(`the example plugin cannot load: ${missing}`);

let h: LiveHoist;
let token: string;
test.before(async () => {
  // Loaded by path as an operator would name it (HOIST_PLUGINS=./examples/plugin-markdown-site).
  h = await liveHoist({ plugins: markdownSitePath });
  ({ token } = await h.login());
});
test.after(async () => h?.close());

test('a folder of Markdown files goes live as a rendered site through the example plugin', async () => {
  const zip = await zipOf({
    'notes/README.md': '# My notes\n\nSee the [guide](docs/guide.md#start) and <script>alert(1)</script>.\n',
    'notes/docs/guide.md': '# The guide\n\n## start\n\nBack [home](../README.md).\n',
    'notes/docs/logo.svg': '<svg xmlns="http://www.w3.org/2000/svg"/>',
  });
  const res = await h.upload(token, '/api/v1/local-to-live', zip, { name: 'Markdown Notes' });
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));

  const op = await h.waitFor(token, body.operation.id, undefined, 60_000);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(op.stages.analyze.result.runtime, 'static');
  assert.is(op.stages.analyze.result.framework, 'markdown');

  const host = hostOf(body.project.url);
  const home = await h.site(host);
  assert.is(home.status, 200);
  assert.match(home.body, '<title>My notes</title>');
  assert.match(home.body, '<h1>My notes</h1>');
  assert.match(home.body, 'href="docs/guide.html#start"');
  assert.match(home.body, '&lt;script&gt;', 'raw HTML in the Markdown is shown as text');
  assert.not.match(home.body, '<script>');

  const guide = await h.site(host, '/docs/guide.html');
  assert.is(guide.status, 200);
  assert.match(guide.body, '<title>The guide</title>');
  assert.match(guide.body, 'href="../index.html"');
  assert.is((await h.site(host, '/docs/logo.svg')).status, 200);
});

test('a plain HTML site still goes to the shipped analyzer and builder', async () => {
  const zip = await zipOf({ 'index.html': '<h1>plain</h1>', 'README.md': '# not rendered' });
  const body = await (await h.upload(token, '/api/v1/local-to-live', zip, { name: 'Plain beside markdown' })).json();
  const op = await h.waitFor(token, body.operation.id, undefined, 60_000);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is((await h.site(hostOf(body.project.url))).body, '<h1>plain</h1>');
});

test.run();
