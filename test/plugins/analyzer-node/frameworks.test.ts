import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FRAMEWORKS } from '../../../core/projects/build-settings.js';
import { detect, refused } from './tree.js';

const pkg = (deps: Record<string, string>, scripts: Record<string, string> = {}) => ({ scripts, dependencies: deps });

/** Asserts the runtime, framework, build command and output or start of a detection. */
async function expect(
  files: Parameters<typeof detect>[0],
  want: { runtime: string; framework: string; build: string | null; output?: string; start?: string },
) {
  const d = await detect(files);
  assert.ok(d, 'detected');
  assert.is(d!.runtime, want.runtime);
  assert.is(d!.framework, want.framework);
  assert.ok((FRAMEWORKS as readonly string[]).includes(d!.framework!), `${d!.framework} is a known framework name`);
  assert.is(d!.buildCommand, want.build);
  if (want.output) assert.is(d!.outputDir, want.output);
  if (want.start) assert.is(d!.startCommand, want.start);
  if (want.runtime === 'node') assert.is(d!.outputDir, '.');
  else assert.is(d!.startCommand, null);
  return d!;
}

test('Vite builds static files to dist', async () => {
  const d = await expect(
    { 'package.json': pkg({ vite: '^5' }, { dev: 'vite', build: 'vite build' }), 'index.html': '' },
    { runtime: 'static', framework: 'vite', build: 'npm run build', output: 'dist' },
  );
  assert.match(d.reasons.framework, /vite is a dependency/);
  assert.match(d.reasons.output_dir, /vite/);
});

test('a framework without a build script uses its own build command through the package manager', async () => {
  await expect(
    { 'package.json': pkg({ vite: '^5' }) },
    { runtime: 'static', framework: 'vite', build: 'npx --no-install vite build', output: 'dist' },
  );
  await expect(
    { 'package.json': pkg({ vite: '^5' }), 'pnpm-lock.yaml': '' },
    { runtime: 'static', framework: 'vite', build: 'pnpm exec vite build', output: 'dist' },
  );
});

test('Next.js with output: "export" is a static site in out', async () => {
  for (const [file, config] of [
    ['next.config.js', `module.exports = { output: 'export' }`],
    ['next.config.mjs', `export default {\n  output: "export",\n}`],
    ['next.config.ts', `const c: NextConfig = { output:'export' }; export default c`],
  ]) {
    const d = await expect(
      {
        'package.json': pkg({ next: '15', react: '19' }, { build: 'next build', start: 'next start' }),
        [file]: config,
      },
      { runtime: 'static', framework: 'nextjs', build: 'npm run build', output: 'out' },
    );
    assert.match(d.reasons.framework, new RegExp(`${file.replace('.', '\\.')} sets output: 'export'`));
  }
});

test('Next.js without a static export is a server started with next start', async () => {
  const withScripts = await expect(
    {
      'package.json': pkg({ next: '15' }, { build: 'next build', start: 'next start' }),
      'next.config.js': `module.exports = { output: 'standalone' }`,
    },
    { runtime: 'node', framework: 'nextjs', build: 'npm run build', start: 'npm start' },
  );
  assert.match(withScripts.reasons.runtime, /runs as a server/);
  await expect(
    { 'package.json': pkg({ next: '15' }) },
    {
      runtime: 'node',
      framework: 'nextjs',
      build: 'npx --no-install next build',
      start: 'npx --no-install next start',
    },
  );
});

test('Astro without a server adapter is a static site in dist', async () => {
  await expect(
    { 'package.json': pkg({ astro: '^4' }, { build: 'astro build' }) },
    { runtime: 'static', framework: 'astro', build: 'npm run build', output: 'dist' },
  );
});

test('Astro with @astrojs/node is a server', async () => {
  const d = await expect(
    { 'package.json': pkg({ astro: '^4', '@astrojs/node': '^8', vite: '5' }, { build: 'astro build' }) },
    { runtime: 'node', framework: 'astro', build: 'npm run build', start: 'node ./dist/server/entry.mjs' },
  );
  assert.match(d.reasons.runtime, /@astrojs\/node/);
});

test('Create React App builds to build', async () => {
  await expect(
    {
      'package.json': pkg(
        { 'react-scripts': '5', react: '18' },
        { start: 'react-scripts start', build: 'react-scripts build' },
      ),
    },
    { runtime: 'static', framework: 'create-react-app', build: 'npm run build', output: 'build' },
  );
});

test('Docusaurus builds to build', async () => {
  await expect(
    { 'package.json': pkg({ '@docusaurus/core': '3' }, { start: 'docusaurus start', build: 'docusaurus build' }) },
    { runtime: 'static', framework: 'docusaurus', build: 'npm run build', output: 'build' },
  );
});

test('Gatsby builds to public', async () => {
  await expect(
    {
      'package.json': {
        devDependencies: { gatsby: '5' },
        scripts: { develop: 'gatsby develop', build: 'gatsby build' },
      },
    },
    { runtime: 'static', framework: 'gatsby', build: 'npm run build', output: 'public' },
  );
});

test('Eleventy builds to _site', async () => {
  await expect(
    { 'package.json': pkg({ '@11ty/eleventy': '3' }) },
    { runtime: 'static', framework: 'eleventy', build: 'npx --no-install eleventy', output: '_site' },
  );
});

test('SvelteKit is static with adapter-static and a server otherwise, never mistaken for plain Vite', async () => {
  await expect(
    {
      'package.json': pkg(
        { '@sveltejs/kit': '2', '@sveltejs/adapter-static': '3', vite: '5' },
        { build: 'vite build' },
      ),
    },
    { runtime: 'static', framework: 'sveltekit', build: 'npm run build', output: 'build' },
  );
  await expect(
    {
      'package.json': pkg({ '@sveltejs/kit': '2', '@sveltejs/adapter-node': '5', vite: '5' }, { build: 'vite build' }),
    },
    { runtime: 'node', framework: 'sveltekit', build: 'npm run build', start: 'node build' },
  );
});

test('Nuxt is a server started from .output', async () => {
  await expect(
    { 'package.json': pkg({ nuxt: '3' }, { build: 'nuxt build' }) },
    { runtime: 'node', framework: 'nuxt', build: 'npm run build', start: 'node .output/server/index.mjs' },
  );
});

test('server libraries name the framework and start like any Node.js app', async () => {
  for (const [dep, name] of [
    ['express', 'express'],
    ['fastify', 'fastify'],
    ['koa', 'koa'],
    ['hono', 'hono'],
    ['@nestjs/core', 'nestjs'],
  ]) {
    await expect(
      { 'package.json': pkg({ [dep]: '1' }), 'index.js': '' },
      { runtime: 'node', framework: name, build: null, start: 'node index.js' },
    );
  }
});

test('a server framework with no way to start is analyze_no_start_command', async () => {
  const err = await refused({ 'package.json': pkg({ express: '4' }) });
  assert.is(err.code, 'analyze_no_start_command');
});

test.run();
