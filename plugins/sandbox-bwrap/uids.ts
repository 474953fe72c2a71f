import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SandboxError } from '../../core/ports/sandbox.js';

/** Host-wide record of the uids runs hold, shared by every Hoist process on the machine. */
const DIR = '/run/hoist-sandbox/uids';
const RANGE = 65536;

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
};

/**
 * Takes a uid from `base` up that no other run on this machine holds, in this process or another
 * (each run's processes count against their uid's process limit, and a uid names the files of one
 * run only). A lease is a file naming its process; a dead process' leases are taken over.
 */
export function takeUid(base: number): number {
  mkdirSync(DIR, { recursive: true, mode: 0o700 });
  for (let i = 0; i < RANGE; i++) {
    const uid = base + i;
    const file = join(DIR, String(uid));
    try {
      writeFileSync(file, String(process.pid), { flag: 'wx' });
      return uid;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST')
        throw new SandboxError(`cannot lease a sandbox uid in ${DIR}: ${(err as Error).message}`);
      const owner = Number(readFileSync(file, 'utf8') || 0);
      if (owner && alive(owner)) continue;
      try {
        unlinkSync(file);
        writeFileSync(file, String(process.pid), { flag: 'wx' });
        return uid;
      } catch {
        // another process took it first
      }
    }
  }
  throw new SandboxError(`no free sandbox uid: ${RANGE} runs at once on this machine`);
}

/** Gives a uid back. */
export function releaseUid(uid: number): void {
  try {
    unlinkSync(join(DIR, String(uid)));
  } catch {
    // already gone
  }
}
