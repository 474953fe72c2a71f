import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Archive } from '../../../core/ports/archive.js';
import type { Storage } from '../../../core/ports/storage.js';

/**
 * Unpacks a release's artifact (a ZIP in Storage) into `dest` (absent or empty), with every check of
 * the Archive port. The ZIP is copied to `<work>/artifact.zip` first: `work` is a workspace of the caller.
 * `prefix` (ReleaseSpec.artifactRoot) takes only that folder of the artifact as the root.
 */
export async function unpackArtifact(
  deps: { storage: Storage; archive: Archive },
  artifactKey: string,
  work: string,
  dest: string,
  signal?: AbortSignal,
  prefix?: string,
): Promise<void> {
  const zip = join(work, 'artifact.zip');
  await pipeline(await deps.storage.get(artifactKey), createWriteStream(zip), { signal });
  const manifest = await deps.archive.inspect(zip, { rootDirectory: prefix });
  await deps.archive.extract(zip, manifest, dest, signal);
}
