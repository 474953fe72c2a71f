import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

const ROOT = '/sys/fs/cgroup';
const GROUP = 'hoist-sandbox';

/** Memory and process limits of one run, enforced by the kernel for all its processes together. */
export interface RunCgroup {
  /** Moves a process (and its future children) into the group. */
  add(pid: number): Promise<void>;
  /** True when the kernel killed a process of the group for memory. */
  oomKilled(): Promise<boolean>;
  /** Removes the group (once its processes are gone; retried briefly). */
  remove(): Promise<void>;
}

/** Where cgroups can be made: v2 (unified, delegated or as root) or v1 memory + pids hierarchies (as root). */
export type CgroupMode = { kind: 'v2'; base: string } | { kind: 'v1'; memory: string; pids: string } | null;

/**
 * Finds a writable cgroup hierarchy with the memory and pids controllers, and prepares Hoist's
 * parent group in it. Null when there is none (limits then come from rlimits only).
 */
export async function detectCgroups(): Promise<CgroupMode> {
  const v2 = await prepareV2().catch(() => null);
  if (v2) return v2;
  const memory = join(ROOT, 'memory', GROUP);
  const pids = join(ROOT, 'pids', GROUP);
  try {
    if (!existsSync(join(ROOT, 'memory', 'cgroup.procs')) || !existsSync(join(ROOT, 'pids', 'cgroup.procs')))
      return null;
    await mkdir(memory, { recursive: true });
    await mkdir(pids, { recursive: true });
    return { kind: 'v1', memory, pids };
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
      return { kind: 'v2', base };
    } catch {
      // not delegated here: try the next place
    }
  }
  return null;
}

/** Makes the group of one run with its memory (MiB) and process limits. */
export async function runCgroup(
  mode: Exclude<CgroupMode, null>,
  name: string,
  memoryMb: number,
  processes: number,
): Promise<RunCgroup> {
  const bytes = String(memoryMb * 1024 * 1024);
  if (mode.kind === 'v2') {
    const dir = join(mode.base, name);
    await mkdir(dir);
    await writeFile(join(dir, 'memory.max'), bytes);
    await writeFile(join(dir, 'memory.swap.max'), '0').catch(() => {
      // no swap accounting: memory.max alone
    });
    await writeFile(join(dir, 'pids.max'), String(processes));
    return {
      add: (pid) => writeFile(join(dir, 'cgroup.procs'), String(pid)),
      oomKilled: async () => /oom_kill [1-9]/.test(await readFile(join(dir, 'memory.events'), 'utf8').catch(() => '')),
      remove: () => removeDir([dir]),
    };
  }
  const mem = join(mode.memory, name);
  const pids = join(mode.pids, name);
  await mkdir(mem);
  await mkdir(pids);
  await writeFile(join(mem, 'memory.limit_in_bytes'), bytes);
  await writeFile(join(mem, 'memory.memsw.limit_in_bytes'), bytes).catch(() => {
    // no swap accounting: the memory limit alone
  });
  await writeFile(join(pids, 'pids.max'), String(processes));
  return {
    add: async (pid) => {
      await writeFile(join(mem, 'cgroup.procs'), String(pid));
      await writeFile(join(pids, 'cgroup.procs'), String(pid));
    },
    oomKilled: async () => {
      const control = await readFile(join(mem, 'memory.oom_control'), 'utf8').catch(() => '');
      if (/oom_kill [1-9]/.test(control)) return true;
      return Number(await readFile(join(mem, 'memory.failcnt'), 'utf8').catch(() => '0')) > 0;
    },
    remove: () => removeDir([mem, pids]),
  };
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
