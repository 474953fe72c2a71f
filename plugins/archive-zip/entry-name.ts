import { isUtf8 } from 'node:buffer';
import { ArchiveError, quoteName } from './archive-error.js';

/** Bounds on an entry's name; each is what a filesystem takes under any workspace path. */
export interface NameLimits {
  /** Most bytes (UTF-8) one path segment may take: NAME_MAX of the common filesystems. */
  maxSegmentBytes: number;
  /** Most bytes (UTF-8) a whole path may take, so it stays far below PATH_MAX once under a workspace. */
  maxPathBytes: number;
  /** Most folders deep a path may go. */
  maxDepth: number;
}

// C0 controls (NUL included), DEL and the C1 controls: a terminal or a log viewer acts on them.
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/;

/**
 * Refuses a name a workspace must not be given: control characters (C0, DEL, C1), bytes that are
 * not UTF-8 under the UTF-8 flag, a segment, a path or a depth past `limits`. `raw` and `utf8Flag`
 * are the stored bytes and the entry's UTF-8 flag, when the name comes from an archive (a name
 * without the flag is decoded as CP437, which shows control bytes as symbols, so they are looked
 * for in the bytes). Throws ArchiveError naming the entry (escaped), with what to change.
 */
export function checkEntryName(name: string, limits: NameLimits, stored?: { raw: Buffer; utf8Flag: boolean }): void {
  const quoted = quoteName(name);
  if (stored?.utf8Flag && (!isUtf8(stored.raw) || name.includes('\ufffd')))
    throw new ArchiveError(
      'archive_invalid_utf8',
      `Entry ${quoted} is marked UTF-8 but its name is not valid UTF-8; rename it and create the archive again`,
      name,
    );
  const control = CONTROL.exec(name);
  if (control)
    throw new ArchiveError(
      'archive_control_character',
      `Entry ${quoted} has a control character in its name ` +
        `(U+${control[0].charCodeAt(0).toString(16).toUpperCase().padStart(4, '0')} ` +
        `at character ${control.index + 1}); ` +
        'rename it with printable characters only',
      name,
    );
  const byte = stored && !stored.utf8Flag ? stored.raw.findIndex((b) => b < 0x20 || b === 0x7f) : -1;
  if (byte >= 0)
    throw new ArchiveError(
      'archive_control_character',
      `Entry ${quoted} has a control character in its name ` +
        `(byte 0x${stored!.raw[byte].toString(16).padStart(2, '0')} at byte ${byte + 1}); ` +
        'rename it with printable characters only',
      name,
    );
  const bytes = Buffer.byteLength(name);
  if (bytes > limits.maxPathBytes)
    throw new ArchiveError(
      'archive_path_too_long',
      `Entry ${quoted} has a path of ${bytes} bytes; at most ${limits.maxPathBytes} are allowed, ` +
        'so shorten its folder or file names',
      name,
    );
  const segments = name.split('/').filter((s) => s !== '');
  const long = segments.find((s) => Buffer.byteLength(s) > limits.maxSegmentBytes);
  if (long !== undefined)
    throw new ArchiveError(
      'archive_name_too_long',
      `Entry ${quoted} has a name of ${Buffer.byteLength(long)} bytes (${quoteName(long)}); ` +
        `a file or folder name may have at most ${limits.maxSegmentBytes}, so shorten it`,
      name,
    );
  if (segments.length > limits.maxDepth)
    throw new ArchiveError(
      'archive_path_too_deep',
      `Entry ${quoted} is ${segments.length} levels deep; ` +
        `at most ${limits.maxDepth} are allowed, so flatten its folders`,
      name,
    );
}
