// Start-up of what ships: `npm start` (and `node bin/hoist.js start`, as the Docker image runs it) on a
// fresh data directory, until GET /healthz answers; also the CPU the process group used by then, which
// a busy machine changes less than the wall clock. Needs dist/ built (npm run build).
// Run: node --import tsx bench/startup.ts [runs]   Prints figures; never fails on the clock.
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/helpers/hoist-process.js';

const RUNS = Number(process.argv[2] ?? 5);
const root = join(import.meta.dirname, '..');
const TICK_MS = 10; // USER_HZ is 100 on Linux

/** CPU time (user + system) of every process in group `pgid`, in ms, from /proc. */
function groupCpuMs(pgid: number): number {
  let ticks = 0;
  for (const pid of readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
      if (Number(fields[2]) === pgid) ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // the process ended meanwhile
    }
  }
  return ticks * TICK_MS;
}

/** Starts `command` on a fresh data directory; resolves with the wall and CPU time until /healthz answers. */
async function once(command: string[]): Promise<{ wall: number; cpu: number }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-bench-startup-'));
  const port = await freePort();
  const env = {
    ...process.env,
    HOIST_DATA_DIR: dataDir,
    HOIST_PORT: String(port),
    HOIST_EDGE_PORT: String(await freePort()),
    HOIST_LOG_LEVEL: 'warn',
  };
  const began = performance.now();
  const child = spawn(command[0], command.slice(1), { cwd: root, env, detached: true, stdio: 'ignore' });
  const exited = new Promise((resolve) => child.once('exit', resolve));
  try {
    for (;;) {
      const ok = await fetch(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) return { wall: performance.now() - began, cpu: groupCpuMs(child.pid!) };
      if (child.exitCode !== null) throw new Error(`${command.join(' ')} exited with ${child.exitCode}`);
      await new Promise((r) => setTimeout(r, 10));
    }
  } finally {
    process.kill(-child.pid!, 'SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(`load average ${loadavg()[0].toFixed(1)}, ${RUNS} runs each`);
for (const command of [
  ['npm', 'start'],
  [process.execPath, 'bin/hoist.js', 'start'],
]) {
  const runs = [];
  for (let i = 0; i < RUNS; i++) runs.push(await once(command));
  const wall = runs.map((r) => r.wall);
  const name = command[0] === 'npm' ? 'npm start' : 'node bin/hoist.js start';
  console.log(
    `${name.padEnd(24)} to /healthz: median ${median(wall).toFixed(0)} ms (min ${Math.min(...wall).toFixed(0)}, ` +
      `max ${Math.max(...wall).toFixed(0)}); CPU median ${median(runs.map((r) => r.cpu))} ms`,
  );
}
