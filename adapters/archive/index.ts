// The archive checks every runtime shares: inspect an upload, extract it safely, pack an artifact.
export { ArchiveError, quoteName, type ArchiveErrorCode } from './archive-error.js';
export { DEFAULT_ARCHIVE_LIMITS, type ArchiveFile, type ArchiveLimits, type ArchiveManifest, type InspectOptions } from './archive-types.js';
export { extractZip } from './extract-zip.js';
export { inspectZip } from './inspect-zip.js';
export { packDirectory } from './pack-directory.js';
export { readZip, type ZipReader } from './read-zip.js';
export { repackZip } from './repack-zip.js';
