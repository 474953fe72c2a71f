import { chmodSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { Sandbox, SandboxLimits } from '../../core/ports/sandbox.js';
import { BwrapSandbox } from '../../plugins/sandbox-bwrap/bwrap-sandbox.js';

/** Limits small enough for tests to hit them quickly. */
export const testLimits: SandboxLimits = {
  timeMs: 30_000,
  memoryMb: 256,
  processes: 128,
  outputBytes: 1_000_000,
  diskMb: 64,
};

/**
 * A started bubblewrap sandbox keeping its files in `dataDir` (made traversable, as Hoist's data
 * directory is), for tests of the code that runs tenant commands; a served release gets `serveCpuMillis` (one CPU,
 * releaseCpuMillis' default, unless told).
 */
export async function testSandbox(dataDir: string, serveCpuMillis = 1000): Promise<Sandbox> {
  chmodSync(dataDir, 0o711);
  const sandbox = new BwrapSandbox({ dataDir, uidBase: 1_900_000_000, denyCidrs: [], serveCpuMillis });
  await sandbox.prepare();
  return sandbox;
}

/** A fresh workspace directory under `root`, traversable by the sandbox's uid. */
export function workspaceIn(root: string, name: string): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true, mode: 0o711 });
  chmodSync(dir, 0o711);
  return dir;
}
