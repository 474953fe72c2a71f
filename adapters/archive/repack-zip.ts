import { mkdtemp, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ArchiveManifest } from './archive-types.js';
import { extractZip } from './extract-zip.js';
import { eachManifestEntry, fileBytes } from './manifest-entries.js';
import { openZip } from './open-zip.js';
import { IN_MEMORY_BYTES, packDirectory, packFiles, type PackFile } from './pack-directory.js';

/**
 * Packs the manifest's files under `dir` (relative to the manifest's root; `.` for all) as a ZIP at
 * `destZipPath`: the bytes packDirectory gives for that folder once extracted. Every file of the
 * manifest is checked as extractZip checks it. A tree that fits in memory is never written out;
 * a larger one is extracted beside `destZipPath` and packed from there.
 */
export async function repackZip(path: string, manifest: ArchiveManifest, dir: string, destZipPath: string, opts: { signal?: AbortSignal } = {}): Promise<void> {
  const { signal } = opts;
  signal?.throwIfAborted();
  if (manifest.totalSize > IN_MEMORY_BYTES) {
    const work = await mkdtemp(join(dirname(destZipPath), 'repack-'));
    try {
      await extractZip(path, manifest, work, { signal });
      return await packDirectory(join(work, dir), destZipPath);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  }
  const prefix = dir === '.' ? '' : `${dir}/`;
  const files: PackFile[] = [];
  const zip = await openZip(path, false);
  try {
    await eachManifestEntry(zip, manifest, async (file, entry) => {
      signal?.throwIfAborted();
      const data = await fileBytes(zip, entry, file, signal);
      if (file.path.startsWith(prefix)) files.push({ path: file.path.slice(prefix.length), size: file.size, executable: (file.mode & 0o111) !== 0, data });
    });
  } catch (err) {
    throw signal?.aborted ? signal.reason : err;
  } finally {
    zip.close();
  }
  await packFiles(files, destZipPath);
}
