import { join } from 'node:path';
import type { Archive, ArchiveManifest } from '../../../core/ports/archive.js';
import { objectFile, type Storage } from '../../../core/ports/storage.js';

/**
 * A release's artifact (a ZIP in Storage) as a local file: in place, or copied to `<work>/artifact.zip` (`work` is
 * a workspace of the caller); checks it with every check of the Archive port. `prefix` (ReleaseSpec.artifactRoot)
 * takes only that folder of the artifact as the root.
 */
export async function fetchArtifact(
  deps: { storage: Storage; archive: Archive },
  artifactKey: string,
  work: string,
  signal?: AbortSignal,
  prefix?: string,
): Promise<{ zip: string; manifest: ArchiveManifest }> {
  const zip = await objectFile(deps.storage, artifactKey, async () => join(work, 'artifact.zip'), signal);
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
