import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadPlugins } from '../../adapters/plugin-loader.js';
import { plugins } from '../../adapters/plugins.js';
import { StageError } from '../../core/errors.js';
import type { Analyzer } from '../../core/ports/analyzer.js';
import type { Builder } from '../../core/ports/builder.js';
import { analyzerContract, inputOf, type AnalyzerUnderTest } from '../contract/analyzer.js';
import { builderContract, detection, type BuilderUnderTest } from '../contract/builder.js';
import { markdownSiteMissing, markdownSitePath } from '../helpers/markdown-site.js';

const missing = markdownSiteMissing();
if (missing) throw new Error(`the example plugin cannot load: ${missing}`);

// Loaded as Hoist loads it: by path, checked, from the package's default export.
const loaded = await loadPlugins(markdownSitePath, plugins);
const analyzer = (await loaded.find((p) => p.port === 'analyzer')!.create({})) as Analyzer;
const builder = (await loaded.find((p) => p.port === 'builder')!.create({})) as Builder;
const OUT = '.hoist-markdown-site';
const md = detection({ framework: 'markdown', outputDir: OUT });

analyzerContract('analyzer-markdown (examples/plugin-markdown-site)', (): AnalyzerUnderTest => ({
  analyzer,
  claims: [{ files: { 'README.md': '# hi' } }, { files: { 'docs/a.md': 'a', 'docs/b.MD': 'b', 'logo.png': '' } }],
  declines: [
    { files: { 'index.html': '', 'README.md': '' } },
    { files: { 'package.json': '{}', 'README.md': '' } },
    { files: { 'notes.txt': '' } },
    { files: { 'README.md': '' }, settings: { build_command: 'make' } },
  ],
}));

builderContract('builder-markdown (examples/plugin-markdown-site)', (): BuilderUnderTest => ({
  builder,
  builds: [
    {
      files: { 'README.md': '# Home', 'docs/guide.md': '# Guide' },
      detection: md,
      outputs: ['index.html', 'docs/guide.html'],
    },
    {
      files: { 'a.md': 'no index here', 'img/x.png': 'png' },
      detection: md,
      outputs: ['index.html', 'a.html', 'img/x.png'],
    },
  ],
  refuses: [detection(), detection({ runtime: 'node', framework: 'markdown' })],
}));

/** Builds `files` in a fresh workspace; returns the output's `read` and the workspace. */
async function build(files: Record<string, string>, before?: (workspace: string) => Promise<void>) {
  const workspace = await mkdtemp(join(tmpdir(), 'hoist-md-'));
  for (const [path, text] of Object.entries(files)) {
    await mkdir(dirname(join(workspace, path)), { recursive: true });
    await writeFile(join(workspace, path), text);
  }
  await before?.(workspace);
  try {
    const { outputDir } = await builder.build({
      workspace,
      detection: md,
      env: {},
      signal: new AbortController().signal,
      log: () => {},
      progress: () => {},
    });
    return { read: (p: string) => readFile(join(outputDir, p), 'utf8'), workspace };
  } catch (err) {
    await rm(workspace, { recursive: true, force: true });
    throw err;
  }
}

test('index.md wins over README.md; links to pages point at their HTML; a title is the first heading', async () => {
  const { read, workspace } = await build({
    'index.md': '# Start\n[readme](README.md) [sub](sub/README.md?x=1#top) [web](https://example.com/a.md)',
    'README.md': 'no heading',
    'sub/README.md': '# Sub page\n[up](../index.md) [missing](nope.md)',
  });
  const index = await read('index.html');
  assert.match(index, '<title>Start</title>');
  assert.match(index, 'href="README.html"');
  assert.match(index, 'href="sub/index.html?x=1#top"');
  assert.match(index, 'href="https://example.com/a.md"');
  assert.match(await read('README.html'), '<title>README</title>');
  const sub = await read('sub/index.html');
  assert.match(sub, 'href="../index.html"');
  assert.match(sub, 'href="nope.html"');
  await rm(workspace, { recursive: true, force: true });
});

test('a name with HTML in it and raw HTML in a page are escaped', async () => {
  const { read, workspace } = await build({ 'x.md': '# <img src=x onerror=alert(1)>\n<script>alert(2)</script>' });
  const page = await read('x.html');
  assert.not.match(page, '<script>');
  assert.not.match(page, '<img');
  assert.match(await read('index.html'), 'href="x.html"');
  await rm(workspace, { recursive: true, force: true });
});

test('a link leaving the workspace and an oversized page fail the build with a stage error', async () => {
  const outside = await build({ 'a.md': 'a' }, (w) => symlink('/etc/hostname', join(w, 'leak.md'))).catch((e) => e);
  assert.instance(outside, StageError);
  assert.is(outside.code, 'build_link_outside');
  const big = await build({ 'big.md': 'x'.repeat(3 * 1024 * 1024) }).catch((e) => e);
  assert.instance(big, StageError);
  assert.is(big.code, 'build_page_too_large');
});

test('the analyzer reads no file: it decides on the names alone', async () => {
  const input = inputOf({ files: { 'README.md': '# hi' } });
  await analyzer.detect(input);
  assert.equal(input.reads, []);
});

test.run();
