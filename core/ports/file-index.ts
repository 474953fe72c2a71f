/**
 * The file index of a static release: what a deployer that serves files from a directory (deployer-local) writes
 * beside the release's root (`ReleaseTarget` of kind `static`) at deploy time, and what the edge reads instead of
 * the disk (core/deployments/file-index.ts reads and caches it). A data format shared by a plugin and the edge,
 * not a service: no token.
 */
import type { HeaderRule, RedirectRule } from './site-rules.cjs';

/**
 * A precompressed variant of a release file: the file holding it (absolute once read; see FileIndex), its size in
 * bytes, and where it starts in that file. Releases stored before packs have no `offset`: the variant is the whole
 * file (`<id>.variants/<sha256>.br`, a blob).
 */
export interface FileVariant {
  path: string;
  size: number;
  /** Bytes into the release's variant pack (variantsPack). */
  offset?: number;
}

/** What the edge needs to answer for one file of a static release, without touching the disk first. */
export interface IndexedFile {
  size: number;
  /** The Content-Type header (`; charset=utf-8` for text). */
  type: string;
  /** A strong ETag, quoted: the file's SHA-256 in hex. */
  etag: string;
  /** The file's modification time (its blob's: when its content was first stored). */
  mtimeMs: number;
  /** Brotli variant, only when smaller than the file. */
  br?: FileVariant;
  /** Gzip variant, only when smaller than the file. */
  gzip?: FileVariant;
}

/**
 * Every file of a static release, by its path relative to the release root ('/'-separated, no leading '/'). On
 * disk, variant paths are relative to the folder holding the root (`<id>.variants.pack`).
 */
export interface FileIndex {
  files: Record<string, IndexedFile>;
  /**
   * Set while the release's variants are still being made (epoch ms of when that began): the release serves
   * already, its files as they are, and a reader that holds this index reads it again now and then
   * (core/deployments/file-index.ts) until the index without it replaces it.
   */
  variantsPending?: number;
  /** The rules of the site's `_redirects` file (core/ports/site-rules.cjs), checked at deploy. */
  redirects?: RedirectRule[];
  /** The rules of the site's `_headers` file, checked at deploy. */
  headers?: HeaderRule[];
  /**
   * The project whose own blob store holds the release's files (a release that runs tenant code: its app could read
   * a shared blob's link count); absent: the deployer's shared store.
   */
  blobStore?: string;
}

/** Where a release's index is kept: beside its root, so the release directory holds only the site's files. */
export function fileIndexPath(root: string): string {
  return `${root}.index.json`;
}

/** Where a release's precompressed variants are, one after the other in one file: beside its root. */
export function variantsPack(root: string): string {
  return `${root}.variants.pack`;
}

/** Where the precompressed variants of a release stored before packs are linked (each a blob): beside its root. */
export function variantsDir(root: string): string {
  return `${root}.variants`;
}
