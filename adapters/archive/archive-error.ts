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
