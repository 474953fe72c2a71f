import { StageError } from '../errors.js';

/** System error codes a redelivery a few seconds later would meet again: a name, a path or a permission is at fault. */
const DETERMINISTIC_SYSTEM_ERRORS = new Set([
  'ENAMETOOLONG',
  'ELOOP',
  'ENOTDIR',
  'EISDIR',
  'EINVAL',
  'EEXIST',
  'EILSEQ',
  'EFBIG',
  'ENOTEMPTY',
  'EXDEV',
  'EACCES',
  'EPERM',
  'EROFS',
]);

/**
 * What a stage's unexpected error means for its operation: a StageError (ending the stage at once)
 * for a filesystem error no redelivery would get past, coded `<stage>_filesystem_error`; null for
 * an error worth delivering again (a full disk, a dropped connection, anything unknown). The
 * message names the system error and keeps its text; callers redact paths before showing it.
 */
export function deterministicFailure(err: unknown, stage: string): StageError | null {
  const e = err as NodeJS.ErrnoException | null;
  if (!e || typeof e.code !== 'string' || !e.syscall || !DETERMINISTIC_SYSTEM_ERRORS.has(e.code)) return null;
  // Permissions are the server's setup, not the upload: a retry helps once it is fixed.
  const setup = ['EACCES', 'EPERM', 'EROFS'].includes(e.code);
  return new StageError(
    `${stage}_filesystem_error`,
    `The ${stage} stage failed on a file system error (${e.message})` +
      (setup
        ? '; retry once the server is fixed, and report it if it fails again'
        : '; change the file or folder it names, or report it if it names none of yours'),
    { errno: e.code },
    { cause: err },
  );
}
