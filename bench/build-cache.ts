// What an account's build cache (npm's download cache, kept between builds: core/deployments/build-cache.ts) spares
// a Node.js build: builder-node's whole build of an Express app from its lockfile (`npm ci`, 72 packages), in the
// configured sandbox, without a cache and with a warm one, alternating. The lockfile is made here first
// (`npm install --package-lock-only`, on the registry npm is configured with).
// Run: node --import tsx bench/build-cache.ts [rounds]   (HOIST_SANDBOX=bwrap|docker)   Prints figures only.
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { NodeBuilder } from '../plugins/builder-node/node-builder.js';
import { benchSandbox, median } from './bench-hoist.js';

const ROUNDS = Number(process.argv[2] ?? 5);
const { dataDir, config, sandbox } = await benchSandbox('hoist-bench-build-cache-');
const builder = new NodeBuilder(config, sandbox);

const manifest = JSON.stringify({
  name: 'bench-app',
  version: '1.0.0',
  private: true,
  scripts: { start: 'node server.js' },
  dependencies: { express: '4.21.2' },
});
const lockDir = join(dataDir, 'lock');
mkdirSync(lockDir);
writeFileSync(join(lockDir, 'package.json'), manifest);
execFileSync('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund'], { cwd: lockDir, stdio: 'ignore' });
const lock = readFileSync(join(lockDir, 'package-lock.json'));

let n = 0;
/** One build of the app in a fresh workspace (with `cache`, when given); resolves its wall time, ms. */
async function build(cache?: string): Promise<number> {
  const workspace = join(dataDir, 'work', `build-${++n}`, 'src');
  mkdirSync(workspace, { recursive: true });
  for (const dir of [join(dataDir, 'work'), join(workspace, '..'), workspace]) chmodSync(dir, 0o711);
  writeFileSync(join(workspace, 'package.json'), manifest);
  writeFileSync(join(workspace, 'package-lock.json'), lock);
  writeFileSync(join(workspace, 'server.js'), '');
  const started = performance.now();
  await builder.build({
    workspace,
    detection: {
      runtime: 'node',
      framework: null,
      outputDir: '.',
      installCommand: 'npm ci --no-audit --no-fund',
      buildCommand: null,
      startCommand: 'npm start',
      packageManager: 'npm',
      nodeVersion: null,
      reasons: {},
      warnings: [],
    },
    env: {},
    signal: new AbortController().signal,
    log: () => {},
    progress: () => {},
    ...(cache && { cache }),
  });
  const ms = performance.now() - started;
  rmSync(join(workspace, '..'), { recursive: true, force: true });
  return ms;
}

const cache = join(dataDir, 'cache');
mkdirSync(cache, { mode: 0o700 });
await build(cache); // warms the cache
const cold: number[] = [];
const warm: number[] = [];
const load0 = loadavg()[0];
try {
  for (let i = 0; i < ROUNDS; i++) {
    cold.push(await build());
    warm.push(await build(cache));
  }
} finally {
  rmSync(dataDir, { recursive: true, force: true });
}
const fmt = (xs: number[]) => `${median(xs).toFixed(0)} ms (min ${Math.min(...xs).toFixed(0)})`;
console.log(`builder-node, an Express app from its lockfile (npm ci), sandbox ${config.sandbox}, ${ROUNDS} rounds`);
console.log(`load average ${load0.toFixed(1)} at start, ${loadavg()[0].toFixed(1)} at end (2 cores)`);
console.log(`no build cache:        ${fmt(cold)}`);
console.log(`the account's, warm:   ${fmt(warm)}`);
