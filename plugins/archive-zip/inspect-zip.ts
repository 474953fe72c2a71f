import type { Entry, ZipFile } from 'yauzl';
import { ArchiveError, quoteName } from './archive-error.js';
import {
  DEFAULT_ARCHIVE_LIMITS,
  type ArchiveLimits,
  type ArchiveManifest,
  type InspectOptions,
} from './archive-types.js';
import { checkEntryName } from './entry-name.js';
import { openZip, zipError } from './open-zip.js';

const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const S_IFDIR = 0o040000;

interface Candidate {
  segments: string[];
  entry: Entry;
}

/**
 * Checks a local ZIP against every shape rule (paths, links, encryption, duplicates, overlaps,
 * counts, sizes, ratios) and describes the tree to deploy: OS metadata ignored, a single top-level
 * folder unwrapped, then `rootDirectory` applied. Throws ArchiveError on the first rule broken.
 */
export async function inspectZip(path: string, options: InspectOptions = {}): Promise<ArchiveManifest> {
  const limits: ArchiveLimits = { ...DEFAULT_ARCHIVE_LIMITS, ...definedOnly(options) };
  const root = rootSegments(options.rootDirectory);
  const zip = await openZip(path);
  try {
    if (zip.entryCount > limits.maxEntries)
      throw new ArchiveError(
        'archive_too_many_entries',
        `The archive holds ${zip.entryCount} entries; at most ${limits.maxEntries} are allowed`,
      );
    const { files, ignored } = await readEntries(zip, limits);
    const warnings = ignored
      ? [`ignored ${ignored} OS metadata ${ignored === 1 ? 'entry' : 'entries'} (__MACOSX/, .DS_Store, Thumbs.db)`]
      : [];
    if (!files.length)
      throw new ArchiveError('archive_empty', `The archive holds no files${ignored ? ' besides OS metadata' : ''}`);

    const top = files[0].segments[0];
    const unwrapped = files.every((f) => f.segments.length > 1 && f.segments[0] === top) ? [top] : [];
    if (unwrapped.length) warnings.push(`unwrapped top-level folder ${top}/`);
    const prefix = [...unwrapped, ...root];
    const kept = files.filter(
      (f) => f.segments.length > prefix.length && prefix.every((s, i) => nfc(f.segments[i]) === nfc(s)),
    );
    if (!kept.length)
      throw new ArchiveError(
        'archive_root_directory_missing',
        `The root directory ${quoteName(root.join('/'))} holds no files in this archive`,
      );

    const out = kept.map(({ segments, entry }) => ({
      path: segments.slice(prefix.length).join('/'),
      name: entry.fileName,
      size: entry.uncompressedSize,
      compressedSize: entry.compressedSize,
      mode: (entry.externalFileAttributes >>> 16) & 0o7777,
    }));
    return {
      files: out,
      prefix: prefix.length ? `${prefix.join('/')}/` : '',
      totalSize: out.reduce((sum, f) => sum + f.size, 0),
      fileCount: out.length,
      warnings,
    };
  } catch (err) {
    throw zipError(err);
  } finally {
    zip.close();
  }
}

/** Walks the central directory once, checking every entry; returns the files that count. */
async function readEntries(zip: ZipFile, limits: ArchiveLimits): Promise<{ files: Candidate[]; ignored: number }> {
  const files: Candidate[] = [];
  const ranges: { start: number; end: number; name: string }[] = [];
  const taken = new Map<string, string | null>();
  let ignored = 0;
  let total = 0;
  let compressed = 0;
  for await (const entry of zip.eachEntry()) {
    const name = entry.fileName;
    const type = (entry.externalFileAttributes >>> 16) & S_IFMT;
    // Names first: every later message shows the name, and no workspace may be given one of these.
    checkEntryName(name, limits, { raw: entry.fileNameRaw, utf8Flag: (entry.generalPurposeBitFlag & 0x800) !== 0 });
    const quoted = quoteName(name);
    if (entry.isEncrypted())
      throw new ArchiveError(
        'archive_encrypted',
        `Entry ${quoted} is encrypted; upload an archive without a password`,
        name,
      );
    if (type === S_IFLNK)
      throw new ArchiveError(
        'archive_symlink',
        `Entry ${quoted} is a symbolic link; archives may hold only files and folders`,
        name,
      );
    if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8)
      throw new ArchiveError(
        'archive_invalid',
        `Entry ${quoted} uses compression method ${entry.compressionMethod}; ` +
          'only stored and deflated entries are supported',
        name,
      );

    total += entry.uncompressedSize;
    compressed += entry.compressedSize;
    if (total > limits.maxUncompressedBytes)
      throw new ArchiveError(
        'archive_too_large_uncompressed',
        `The archive inflates past ${limits.maxUncompressedBytes} bytes (reached at ${quoted})`,
        name,
      );
    if (tooCompressed(entry.uncompressedSize, entry.compressedSize, limits))
      throw new ArchiveError(
        'archive_compression_ratio',
        `Entry ${quoted} inflates more than ${limits.maxCompressionRatio} times its compressed size`,
        name,
      );

    const { fileDataStart } = await zip
      .readLocalFileHeaderPromise(entry, { minimal: true })
      .catch((err) => Promise.reject(zipError(err, name)));
    ranges.push({ start: entry.relativeOffsetOfLocalHeader, end: fileDataStart + entry.compressedSize, name });

    const segments = name.split('/').filter((s) => s !== '' && s !== '.');
    if (name.endsWith('/') || type === S_IFDIR || !segments.length) {
      // A folder has no bytes (an empty deflate stream is 2): data here would be dropped unseen, or hide something.
      if (entry.uncompressedSize > 0 || entry.compressedSize > 2)
        throw new ArchiveError(
          'archive_directory_with_data',
          `Entry ${quoted} is a folder but carries ${entry.uncompressedSize} bytes of data; ` +
            'a folder entry must be empty',
          name,
        );
      continue;
    }
    if (segments[0] === '__MACOSX' || ['.ds_store', 'thumbs.db'].includes(segments.at(-1)!.toLowerCase())) {
      ignored++;
      continue;
    }
    claim(taken, segments, name);
    files.push({ segments, entry });
  }
  if (tooCompressed(total, compressed, limits))
    throw new ArchiveError(
      'archive_compression_ratio',
      `The archive inflates more than ${limits.maxCompressionRatio} times its compressed size`,
    );

  // Sorted by start, any overlap shows between neighbours: this is how "overlapping zip bombs" reuse one payload.
  ranges.sort((a, b) => a.start - b.start);
  for (let i = 1; i < ranges.length; i++)
    if (ranges[i].start < ranges[i - 1].end)
      throw new ArchiveError(
        'archive_overlapping_entries',
        `Entries ${quoteName(ranges[i - 1].name)} and ${quoteName(ranges[i].name)} share the same bytes`,
        ranges[i].name,
      );
  return { files, ignored };
}

const tooCompressed = (size: number, compressedSize: number, limits: ArchiveLimits) =>
  size > limits.ratioMinBytes && size > compressedSize * limits.maxCompressionRatio;

const nfc = (s: string) => s.normalize('NFC');

/**
 * Records a file's path and its folders, refusing a second file with the same name (NFC, any case)
 * or a file named like a folder.
 */
function claim(taken: Map<string, string | null>, segments: string[], name: string) {
  for (let i = 1; i <= segments.length; i++) {
    const key = nfc(segments.slice(0, i).join('/')).toLowerCase();
    const isFile = i === segments.length;
    const prev = taken.get(key);
    if (prev === undefined) taken.set(key, isFile ? name : null);
    else if (isFile || prev !== null)
      throw new ArchiveError(
        'archive_duplicate_entry',
        `Entry ${quoteName(name)} clashes with ${quoteName(prev ?? segments.slice(0, i).join('/') + '/')} ` +
          '(names differ only by case or Unicode form, or a file is named like a folder)',
        name,
      );
  }
}

/** Splits a root directory setting into path segments; refuses one that leaves the archive. */
function rootSegments(value: string | null | undefined): string[] {
  const raw = (value ?? '').trim();
  const segments = raw.split('/').filter((s) => s !== '' && s !== '.');
  if (
    raw.startsWith('/') ||
    /^[a-zA-Z]:/.test(raw) ||
    raw.includes('\\') ||
    segments.includes('..') ||
    raw.includes('\0')
  )
    throw new ArchiveError(
      'archive_root_directory_invalid',
      `The root directory ${quoteName(raw)} must be a relative path inside the archive, without .. or backslashes`,
    );
  return segments;
}

const definedOnly = (o: object) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
