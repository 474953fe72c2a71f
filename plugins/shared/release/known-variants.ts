import { stat } from 'node:fs/promises';
import type { FileIndex, FileVariant } from '../../../core/ports/file-index.js';
import { COMPRESS_MIN_BYTES, compressible } from './release-files.js';
import type { KnownVariants, PackedVariant } from './variant-pack.js';

/** How many contents' variants KnownVariantsMemory keeps (about 300 bytes each: 30 MB when full). */
export const KNOWN_CONTENTS = 100_000;

/**
 * The precompressed variants of the releases this process stored lately, by their content's SHA-256, for the next
 * release to copy instead of compressing them again (storeReleaseFiles' `known`): where each is in its pack, or
 * null when it was not smaller. The least recently used are forgotten first, beyond `max` contents. Only in memory:
 * after a restart, a redeploy compresses again.
 */
export class KnownVariantsMemory {
  private readonly known = new Map<string, KnownVariants>();

  constructor(private readonly max = KNOWN_CONTENTS) {}

  /** The variants known for a content, or undefined. */
  get(sha256: string): KnownVariants | undefined {
    const found = this.known.get(sha256);
    if (found) {
      // Map keeps insertion order: taken again, it goes to the end, the last to be forgotten.
      this.known.delete(sha256);
      this.known.set(sha256, found);
    }
    return found;
  }

  /**
   * Learns the variants of a release from its index and its pack at `packPath` (the pack as it is now: any other
   * file there later is not read). Variants of a release stored before packs are not learnt.
   */
  async learn(index: FileIndex, packPath: string): Promise<void> {
    const { ino, size, mtimeMs } = await stat(packPath);
    const pack = { path: packPath, ino, size, mtimeMs };
    const at = (v: FileVariant | undefined): PackedVariant | null =>
      v ? { pack, offset: v.offset!, size: v.size } : null;
    for (const file of Object.values(index.files)) {
      if (file.size < COMPRESS_MIN_BYTES || !compressible(file.type)) continue;
      if ([file.br, file.gzip].some((v) => v && v.offset === undefined)) continue;
      const sha = file.etag.slice(1, -1);
      this.known.delete(sha);
      this.known.set(sha, { br: at(file.br), gzip: at(file.gzip) });
    }
    for (const sha of this.known.keys()) {
      if (this.known.size <= this.max) break;
      this.known.delete(sha);
    }
  }
}
