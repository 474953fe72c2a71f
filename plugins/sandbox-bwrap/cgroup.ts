import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup';
const GROUP = 'hoist-sandbox';
/** The period of the kernel's CPU bandwidth control (its default), µs: a run's CPU quota is a share of it. */
const CPU_PERIOD_US = 100_000;
/** The smallest quota the kernel takes, µs. */
const MIN_CPU_QUOTA_US = 1000;

/** Memory, process and CPU limits of one run, enforced by the kernel for all its processes together. */
export interface RunCgroup {
  /** Moves a process (and its future children) into the group. */
  add(pid: number): Promise<void>;
  /** True when the kernel killed a process of the group for memory. */
  oomKilled(): Promise<boolean>;
  /** Removes the group (once its processes are gone; retried briefly). */
  remove(): Promise<void>;
}

/** What one run's processes may use together. */
export interface CgroupLimits {
  /** Memory, MiB. */
  memoryMb: number;
  /** Processes and threads at once. */
  processes: number;
  /** CPU time, thousandths of a CPU: 1000 is one CPU's worth each period, however many CPUs it is spread over. */
  cpuMillis: number;
}

/**
 * Where cgroups can be made: v2 (unified, delegated or as root) or v1 memory + pids hierarchies (as root). `cpu` says
 * whether runs get a CPU limit: v2's cpu controller enabled for Hoist's groups, or v1's cpu hierarchy (null without).
 */
export type CgroupMode =
  { kind: 'v2'; base: string; cpu: boolean } | { kind: 'v1'; memory: string; pids: string; cpu: string | null } | null;

/** Whether `p` fulfils. */
const succeeds = (p: Promise<unknown>): Promise<boolean> =>
  p.then(
    () => true,
    () => false,
  );

/**
 * Finds a writable cgroup hierarchy with the memory and pids controllers, and prepares Hoist's
 * parent group in it. Null when there is none (limits then come from rlimits only, and CPU is not limited). The cpu
 * controller is used where it is there too; without it runs get memory and process limits alone.
 */
export async function detectCgroups(): Promise<CgroupMode> {
  const v2 = await prepareV2().catch(() => null);
  if (v2) return v2;
  const memory = join(ROOT, 'memory', GROUP);
  const pids = join(ROOT, 'pids', GROUP);
  const cpu = join(ROOT, 'cpu', GROUP);
  try {
    if (!existsSync(join(ROOT, 'memory', 'cgroup.procs')) || !existsSync(join(ROOT, 'pids', 'cgroup.procs')))
      return null;
    await mkdir(memory, { recursive: true });
    await mkdir(pids, { recursive: true });
    const hasCpu =
      existsSync(join(ROOT, 'cpu', 'cpu.cfs_quota_us')) && (await succeeds(mkdir(cpu, { recursive: true })));
    return { kind: 'v1', memory, pids, cpu: hasCpu ? cpu : null };
  } catch {
    return null;
  }
}

async function prepareV2(): Promise<CgroupMode> {
  const mounted = readFileSync('/proc/self/mounts', 'utf8')
    .split('\n')
    .some((l) => l.split(' ')[1] === ROOT && l.split(' ')[2] === 'cgroup2');
  if (!mounted) return null;
  // Our own group's parent is where a delegated manager (systemd, a container runtime) lets us make children.
  const own = readFileSync('/proc/self/cgroup', 'utf8').match(/^0::(.*)$/m)?.[1] ?? '/';
  for (const at of [ROOT, join(ROOT, own)]) {
    const controllers = (await readFile(join(at, 'cgroup.controllers'), 'utf8').catch(() => '')).split(/\s+/);
    if (!controllers.includes('memory') || !controllers.includes('pids')) continue;
    try {
      await writeFile(join(at, 'cgroup.subtree_control'), '+memory +pids');
      const base = join(at, GROUP);
      await mkdir(base, { recursive: true });
      await writeFile(join(base, 'cgroup.subtree_control'), '+memory +pids');
      // On its own: a kernel that refuses it (real-time threads in the tree) still gives memory and pids.
      const cpu =
        controllers.includes('cpu') &&
        (await succeeds(
          writeFile(join(at, 'cgroup.subtree_control'), '+cpu').then(() =>
            writeFile(join(base, 'cgroup.subtree_control'), '+cpu'),
          ),
        ));
      return { kind: 'v2', base, cpu };
    } catch {
      // not delegated here: try the next place
    }
  }
  return null;
}

/** The quota of `cpuMillis` thousandths of a CPU in each CPU_PERIOD_US, µs. */
const cpuQuotaUs = (cpuMillis: number) => Math.max(MIN_CPU_QUOTA_US, Math.round((cpuMillis * CPU_PERIOD_US) / 1000));

/**
 * The group of `tenant`'s runs, named from a hash of it (any string): its runs are its children, so that under
 * contention the kernel shares CPU time between tenants (each tenant group has the default weight), not between runs:
 * an account running ten releases gets no more of a busy machine than one running one.
 */
export const tenantGroup = (tenant: string) =>
  `tenant-${createHash('sha256').update(tenant).digest('hex').slice(0, 24)}`;

/**
 * Makes the group of one run with its memory, process and (where the mode has the controller) CPU limits. With a
 * `tenant`, its CPU group is a child of the tenant's (made when missing; with v2 every controller is the tenant's).
 */
export async function runCgroup(
  mode: Exclude<CgroupMode, null>,
  name: string,
  limits: CgroupLimits,
  tenant?: string,
): Promise<RunCgroup> {
  const bytes = String(limits.memoryMb * 1024 * 1024);
  const quota = String(cpuQuotaUs(limits.cpuMillis));
  if (mode.kind === 'v2') {
    const parent = tenant ? join(mode.base, tenantGroup(tenant)) : mode.base;
    const dir = join(parent, name);
    const controllers = mode.cpu ? '+memory +pids +cpu' : '+memory +pids';
    await makeUnder(parent, dir, tenant ? (at) => writeFile(join(at, 'cgroup.subtree_control'), controllers) : null);
    await limitOrRemove([dir], async () => {
      await writeFile(join(dir, 'memory.max'), bytes);
      await writeFile(join(dir, 'memory.swap.max'), '0').catch(() => {
        // no swap accounting: memory.max alone
      });
      await writeFile(join(dir, 'pids.max'), String(limits.processes));
      if (mode.cpu) await writeFile(join(dir, 'cpu.max'), `${quota} ${CPU_PERIOD_US}`);
    });
    return {
      add: (pid) => writeFile(join(dir, 'cgroup.procs'), String(pid)),
      oomKilled: async () => /oom_kill [1-9]/.test(await readFile(join(dir, 'memory.events'), 'utf8').catch(() => '')),
      remove: () => removeDir([dir]).then(() => (tenant ? removeIfEmpty(parent) : undefined)),
    };
  }
  const mem = join(mode.memory, name);
  const pids = join(mode.pids, name);
  const cpuParent = mode.cpu && (tenant ? join(mode.cpu, tenantGroup(tenant)) : mode.cpu);
  const cpu = cpuParent && join(cpuParent, name);
  const dirs = cpu ? [mem, pids, cpu] : [mem, pids];
  const made: string[] = [];
  await limitOrRemove(made, async () => {
    for (const dir of dirs)
      made.push(await (dir === cpu ? makeUnder(cpuParent as string, cpu, null) : mkdir(dir)).then(() => dir));
    await writeFile(join(mem, 'memory.limit_in_bytes'), bytes);
    await writeFile(join(mem, 'memory.memsw.limit_in_bytes'), bytes).catch(() => {
      // no swap accounting: the memory limit alone
    });
    await writeFile(join(pids, 'pids.max'), String(limits.processes));
    if (cpu) {
      await writeFile(join(cpu, 'cpu.cfs_period_us'), String(CPU_PERIOD_US));
      await writeFile(join(cpu, 'cpu.cfs_quota_us'), quota);
    }
  });
  return {
    add: async (pid) => {
      for (const dir of dirs) await writeFile(join(dir, 'cgroup.procs'), String(pid));
    },
    oomKilled: async () => {
      const control = await readFile(join(mem, 'memory.oom_control'), 'utf8').catch(() => '');
      if (/oom_kill [1-9]/.test(control)) return true;
      return Number(await readFile(join(mem, 'memory.failcnt'), 'utf8').catch(() => '0')) > 0;
    },
    remove: () => removeDir(dirs).then(() => (tenant && cpuParent ? removeIfEmpty(cpuParent) : undefined)),
  };
}

/**
 * Makes group `dir` in group `parent`, making `parent` first when missing (then `prepare`, when given, on it each
 * time). A run of the same tenant that ended meanwhile may remove `parent` between the two (removeIfEmpty): then
 * both are made again.
 */
async function makeUnder(parent: string, dir: string, prepare: ((at: string) => Promise<void>) | null): Promise<void> {
  for (let tries = 1; ; tries++) {
    await mkdir(parent, { recursive: true });
    await prepare?.(parent);
    const err = await mkdir(dir).then(
      () => null,
      (e: NodeJS.ErrnoException) => e,
    );
    if (!err) return;
    if (err.code !== 'ENOENT' || tries === 5) throw err;
  }
}

/** Removes a tenant's group when no run of it is left; a group that still holds one (EBUSY) stays. */
const removeIfEmpty = (dir: string): Promise<void> => rmdir(dir).catch(() => undefined);

/** Runs `limit` on the run's new groups `dirs`; when it fails, removes them (no group is left behind) and throws. */
async function limitOrRemove(dirs: string[], limit: () => Promise<void>): Promise<void> {
  try {
    await limit();
  } catch (err) {
    await removeDir(dirs).catch(() => undefined);
    throw err;
  }
}

async function removeDir(dirs: string[]): Promise<void> {
  for (const dir of dirs) {
    for (let i = 0; i < 20; i++) {
      const err = await rmdir(dir).then(
        () => null,
        (e: NodeJS.ErrnoException) => e,
      );
      if (!err || err.code === 'ENOENT') break;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}
