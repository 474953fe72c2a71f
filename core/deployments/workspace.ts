import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Storage } from '../ports/storage.js';

/** Runs `fn` in a fresh directory under `<dataDir>/work`, removed afterwards whatever happens. */
export async function withWorkspace<T>(dataDir: string, label: string, fn: (dir: string) => Promise<T>): Promise<T> {
  await mkdir(join(dataDir, 'work'), { recursive: true });
  const dir = await mkdtemp(join(dataDir, 'work', `${label}-`));
  try {
    return await fn(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Copies a stored object to a local file. */
export async function download(storage: Storage, key: string, path: string, signal?: AbortSignal): Promise<void> {
  await pipeline(await storage.get(key), createWriteStream(path), { signal });
}
