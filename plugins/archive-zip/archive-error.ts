import { HoistError } from '../../core/errors.js';

/** Why an archive was refused; stable, shown to the user beside the message. */
export type ArchiveErrorCode =
  | 'archive_not_zip'
  | 'archive_invalid'
  | 'archive_empty'
  | 'archive_path_traversal'
  | 'archive_absolute_path'
  | 'archive_backslash'
  | 'archive_symlink'
  | 'archive_control_character'
  | 'archive_invalid_utf8'
  | 'archive_name_too_long'
  | 'archive_path_too_long'
  | 'archive_path_too_deep'
  | 'archive_directory_with_data'
  | 'archive_encrypted'
  | 'archive_duplicate_entry'
  | 'archive_overlapping_entries'
  | 'archive_too_many_entries'
  | 'archive_too_large_uncompressed'
  | 'archive_compression_ratio'
  | 'archive_root_directory_missing'
  | 'archive_root_directory_invalid';

/**
 * A refused archive. Like the analyzers' and builders' errors it is a HoistError('invalid_request')
 * whose `details.code` is the specific rule (`archive_*`) and `details.entry` the entry at fault
 * (null when the archive as a whole is).
 */
export class ArchiveError extends HoistError {
  override name = 'ArchiveError';
  declare readonly details: { code: ArchiveErrorCode; entry: string | null };

  constructor(code: ArchiveErrorCode, message: string, entry: string | null = null, options?: { cause?: unknown }) {
    super('invalid_request', message, { code, entry }, options);
  }
}

/**
 * An entry name as messages show it: JSON-quoted, so control characters, quotes and backslashes
 * come out escaped (C1 controls, DEL and bidirectional overrides too, which JSON leaves alone),
 * and shortened in the middle past 200 characters.
 */
export function quoteName(name: string): string {
  const short = name.length > 200 ? `${name.slice(0, 120)}…${name.slice(-60)}` : name;
  return JSON.stringify(short).replace(
    /[\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
