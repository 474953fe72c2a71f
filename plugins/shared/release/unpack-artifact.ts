import { createWriteStream } from 'node:fs';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Archive, ArchiveManifest } from '../../../core/ports/archive.js';
import type { Storage } from '../../../core/ports/storage.js';

/**
 * Copies a release's artifact (a ZIP in Storage) to `<work>/artifact.zip` (`work` is a workspace of the caller)
 * and checks it with every check of the Archive port. `prefix` (ReleaseSpec.artifactRoot) takes only that folder
 * of the artifact as the root.
 */
export async function fetchArtifact(
  deps: { storage: Storage; archive: Archive },
  artifactKey: string,
  work: string,
  signal?: AbortSignal,
  prefix?: string,
): Promise<{ zip: string; manifest: ArchiveManifest }> {
  const zip = join(work, 'artifact.zip');
  await pipeline(await deps.storage.get(artifactKey), createWriteStream(zip), { signal });
  return { zip, manifest: await deps.archive.inspect(zip, { rootDirectory: prefix }) };
}

/** Unpacks a release's artifact into `dest` (absent or empty), as fetchArtifact takes it. */
export async function unpackArtifact(
  deps: { storage: Storage; archive: Archive },
  artifactKey: string,
  work: string,
  dest: string,
  signal?: AbortSignal,
  prefix?: string,
): Promise<void> {
  const { zip, manifest } = await fetchArtifact(deps, artifactKey, work, signal, prefix);
  await deps.archive.extract(zip, manifest, dest, signal);
}
