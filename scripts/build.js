#!/usr/bin/env node
// Compiles what ships to dist/ (tsc -b tsconfig.build.json: incremental, under a second when nothing
// changed), copies the files tsc does not emit (the .cjs runtime of release containers, .d.ts sources)
// and removes outputs whose source is gone (a stale migration would still run). One build at a time:
// test runs in parallel share dist/. Exits with tsc's status. `npm run build`; `npm install` runs it.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const sources = ['config', 'core', 'plugins', 'adapters', 'client', 'test/contract'];
const lock = join(dist, '.build-lock');

const walk = (d) =>
  existsSync(d)
    ? readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]))
    : [];
const emitted = (f) => f.endsWith('.ts') && !f.endsWith('.d.ts');

/** Waits for the build lock (a file created exclusively), taking it over when older than 3 minutes. */
async function withLock(fn) {
  mkdirSync(dist, { recursive: true });
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx' });
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      if (Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now()) > 180_000)
        rmSync(lock, { force: true });
      else await new Promise((r) => setTimeout(r, 200));
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { force: true });
  }
}

/** Builds dist/; returns tsc's exit status and what it printed. */
export function build() {
  return withLock(() => {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    const run = spawnSync(process.execPath, [tsc, '-b', 'tsconfig.build.json'], { cwd: root, encoding: 'utf8' });
    for (const file of sources.flatMap((s) => walk(join(root, s))).filter((f) => !emitted(f))) {
      const to = join(dist, relative(root, file));
      if (statSync(to, { throwIfNoEntry: false })?.mtimeMs >= statSync(file).mtimeMs) continue;
      mkdirSync(dirname(to), { recursive: true });
      copyFileSync(file, to);
    }
    for (const out of sources.flatMap((s) => walk(join(dist, s)))) {
      const src = join(root, relative(dist, out)).replace(/\.(js|d\.ts)$/, '.ts');
      if (!existsSync(src) && !existsSync(join(root, relative(dist, out)))) rmSync(out);
    }
    return { status: run.status ?? 1, output: `${run.stdout}${run.stderr}`.trim() };
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { status, output } = await build();
  if (output) console.error(output);
  process.exit(status);
}
