import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { SandboxResult } from '../../../core/ports/sandbox.js';
import { tenantGroup } from '../../../plugins/sandbox-bwrap/cgroup.js';
import { testLimits, testSandbox, workspaceIn } from '../../helpers/sandbox.js';

const dataDir = mkdtempSync(join(tmpdir(), 'hoist-bwrap-cpu-'));
test.after(() => rmSync(dataDir, { recursive: true, force: true }));

const CGROUPS = '/sys/fs/cgroup';
/**
 * Whether this host lets Hoist limit CPU: root, with cgroup v1's cpu hierarchy or v2's cpu controller (read here, not
 * through the code under test, so that a sandbox that leaves the controller unused fails rather than skips).
 */
const cpuLimitable =
  process.getuid?.() === 0 &&
  (existsSync(join(CGROUPS, 'cpu', 'cpu.cfs_quota_us')) ||
    (existsSync(join(CGROUPS, 'cgroup.controllers')) &&
      /\bcpu\b/.test(readFileSync(join(CGROUPS, 'cgroup.controllers'), 'utf8'))));
const skip = (what: string) => console.log(`! skip: ${what}: needs root and the cgroup cpu controller`);

/** Busy loops the sandbox starts, more than this host's CPUs: unlimited, they would take all of them. */
const LOOPS = Math.max(4, availableParallelism() * 2);
/** How long they spin, ms. */
const WINDOW_MS = 2000;

/**
 * A Node.js program for the sandbox: starts LOOPS busy shell loops named `marker` (their $0), and after WINDOW_MS
 * prints the CPU they used together and the wall time since they started, µs (`/proc/<pid>/stat`'s utime + stime, in
 * USER_HZ ticks of 10 ms).
 */
const busy = (marker: string) => `
const { spawn } = require('child_process');
const { readFileSync } = require('fs');
const ticks = (pid) => {
  const f = readFileSync('/proc/' + pid + '/stat', 'utf8').split(') ')[1].split(' ');
  return Number(f[11]) + Number(f[12]);
};
const t0 = process.hrtime.bigint();
const loops = Array.from({ length: ${LOOPS} }, () =>
  spawn('sh', ['-c', 'while :; do :; done', '${marker}'], { stdio: 'ignore' }));
setTimeout(() => {
  const cpuUs = loops.reduce((sum, c) => sum + ticks(c.pid), 0) * 10000;
  const wallUs = Number(process.hrtime.bigint() - t0) / 1000;
  console.log('CPU ' + JSON.stringify({ cpuUs, wallUs }));
  for (const c of loops) c.kill('SIGKILL');
  process.exit(0);
}, ${WINDOW_MS});
`;

/**
 * The CPU limit of the cgroup of the process named `marker`, as seen from the host, in v2's `cpu.max` form ("<quota>
 * <period>" µs, or "max <period>"); waits for the process to appear.
 */
async function cpuLimitOf(marker: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      let cmdline: string, groups: string;
      try {
        cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        groups = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
      } catch {
        continue; // gone meanwhile
      }
      if (!cmdline.split('\0').includes(marker)) continue;
      const v1 = /^\d+:[^:]*\bcpu\b[^:]*:(.*)$/m.exec(groups)?.[1];
      if (v1 === undefined) return readFileSync(join(CGROUPS, /^0::(.*)$/m.exec(groups)![1], 'cpu.max'), 'utf8').trim();
      const read = (file: string) => readFileSync(join(CGROUPS, 'cpu', v1, file), 'utf8').trim();
      const quota = read('cpu.cfs_quota_us');
      return `${quota === '-1' ? 'max' : quota} ${read('cpu.cfs_period_us')}`;
    }
    await delay(50);
  }
  throw new Error(`no process named ${marker} appeared`);
}

/**
 * Runs busy.js through `start` (which gives the lines it prints to the `log` it is handed, and resolves when the
 * sandbox ended) and returns the CPU limit of its loops' cgroup and their CPU over their window as a fraction of
 * what `cpuMillis` allows in it.
 */
async function measure(
  name: string,
  cpuMillis: number,
  start: (workspace: string, log: (line: string) => void) => Promise<SandboxResult>,
): Promise<{ limit: string; share: number }> {
  const marker = `hoist-busy-${randomBytes(6).toString('hex')}`;
  const workspace = workspaceIn(dataDir, name);
  writeFileSync(join(workspace, 'busy.js'), busy(marker));
  const lines: string[] = [];
  const ended = start(workspace, (l) => lines.push(l));
  const limit = await cpuLimitOf(marker);
  const result = await ended;
  const said = lines.find((l) => l.startsWith('CPU '));
  assert.ok(said, `busy.js printed its measure (${JSON.stringify(result)}):\n${lines.join('\n')}`);
  const { cpuUs, wallUs } = JSON.parse(said.slice(4)) as { cpuUs: number; wallUs: number };
  return { limit, share: cpuUs / ((wallUs * cpuMillis) / 1000) };
}

test(`a release's ${LOOPS} busy processes share its CPU limit (serveCpuMillis), not the host's CPUs`, async () => {
  if (!cpuLimitable) return skip("a release's CPU limit");
  const cpuMillis = 200;
  const sandbox = await testSandbox(dataDir, cpuMillis);
  const { timeMs: _, ...limits } = testLimits;
  const { limit, share } = await measure('serve', cpuMillis, async (workspace, log) => {
    const service = await sandbox.serve({
      command: 'node busy.js',
      workspace,
      env: {},
      network: 'none',
      port: 3000,
      limits,
      log,
    });
    return service.exited;
  });
  assert.is(limit, '20000 100000');
  // Unlimited, the loops would take every CPU of the host: 10 times the quota on two.
  assert.ok(share <= 1.5, `the release used ${share.toFixed(2)} times its CPU quota`);
  assert.ok(share >= 0.1, `the loops ran (${share.toFixed(2)} of the quota): the measure works`);
});

test(`a run's (a build's) ${LOOPS} busy processes share one CPU`, async () => {
  if (!cpuLimitable) return skip("a run's CPU limit");
  const sandbox = await testSandbox(dataDir);
  const { limit, share } = await measure('run', 1000, (workspace, log) =>
    sandbox.run({ command: 'node busy.js', workspace, env: {}, network: 'none', limits: testLimits, log }),
  );
  assert.is(limit, '100000 100000');
  assert.ok(share <= 1.3, `the run used ${share.toFixed(2)} CPUs`);
  assert.ok(share >= 0.1, `the loops ran (${share.toFixed(2)} of a CPU): the measure works`);
});

/** The cpu cgroup (its path under the hierarchy) of the process named `marker`; waits for it to appear. */
async function cpuGroupOf(marker: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
      try {
        if (!readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').includes(marker)) continue;
        const groups = readFileSync(`/proc/${pid}/cgroup`, 'utf8');
        return (/^\d+:[^:]*\bcpu\b[^:]*:(.*)$/m.exec(groups) ?? /^0::(.*)$/m.exec(groups))![1];
      } catch {
        continue; // gone meanwhile
      }
    }
    await delay(50);
  }
  throw new Error(`no process named ${marker} appeared`);
}

test("a tenant's runs share one CPU group, each tenant its own: CPU is shared between accounts, not runs", async () => {
  if (!cpuLimitable) return skip("tenants' CPU groups");
  const sandbox = await testSandbox(dataDir);
  const [a, b] = ['account-a', 'account-b'];
  const stop = new AbortController();
  const started = [a, a, b, undefined].map((tenant, i) => {
    const marker = `hoist-tenant-${randomBytes(6).toString('hex')}`;
    const workspace = workspaceIn(dataDir, `tenant-${i}`);
    const command = `sh -c 'while :; do sleep 0.1; done' ${marker}`;
    const run = { command, workspace, env: {}, network: 'none' as const, limits: testLimits, signal: stop.signal };
    const ended = sandbox.run({ ...run, tenant, log() {} });
    return { marker, ended };
  });
  try {
    const groups = await Promise.all(started.map((s) => cpuGroupOf(s.marker)));
    const parentOf = (g: string) => g.split('/').slice(0, -1).join('/');
    assert.is(parentOf(groups[0]), `/hoist-sandbox/${tenantGroup(a)}`);
    assert.is(parentOf(groups[1]), parentOf(groups[0]), "both of a's runs are in a's group");
    assert.is.not(groups[1], groups[0], 'each run has its own group (its own limits) in it');
    assert.is(parentOf(groups[2]), `/hoist-sandbox/${tenantGroup(b)}`);
    assert.is(parentOf(groups[3]), '/hoist-sandbox', 'a run without a tenant is one of its own');
  } finally {
    stop.abort();
    await Promise.all(started.map((s) => s.ended));
  }
  // Each tenant's group goes with its last run.
  const cpuRoot = existsSync(join(CGROUPS, 'cpu', 'cpu.cfs_quota_us')) ? join(CGROUPS, 'cpu') : CGROUPS;
  for (const tenant of [a, b]) {
    const dir = join(cpuRoot, 'hoist-sandbox', tenantGroup(tenant));
    for (let i = 0; i < 40 && existsSync(dir); i++) await delay(50);
    assert.not.ok(existsSync(dir), `${tenant}'s group is removed`);
  }
});

test.run();
