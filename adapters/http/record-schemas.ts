import { PAGE_DEFAULT, PAGE_MAX } from '../../core/projects/project-service.js';
import { Timestamp, Uuid } from './schemas.js';

const nullable = (s: object) => ({ anyOf: [s, { type: 'null' }] });
const text = { type: ['string', 'null'] } as const;
const RecordError = nullable({ type: 'object', properties: { code: { type: 'string' }, message: { type: 'string' } } });

/** Path parameters: the project and, when `record` is given, one of its records. Any id that is not one answers 404. */
export const recordParams = (record?: string) => ({
  type: 'object',
  required: ['projectID', ...(record ? [record] : [])],
  properties: {
    projectID: { type: 'string', description: 'Project id (UUID).' },
    ...(record ? { [record]: { type: 'string', description: 'Record id (UUID).' } } : {}),
  },
});

/** The query of a cursor-paginated list (as GET /projects/ takes it). */
export const PageQuery = {
  type: 'object',
  properties: {
    cursor: {
      type: 'string',
      maxLength: 512,
      description: 'Opaque next_cursor of the previous page, passed back unchanged.',
    },
    limit: {
      type: 'integer',
      minimum: 1,
      maximum: PAGE_MAX,
      default: PAGE_DEFAULT,
      description: `Page size, 1 to ${PAGE_MAX}.`,
    },
  },
} as const;

/** A list answer: `items` under `key`, and next_cursor (null on the last page). */
export const pageOf = (key: string, item: object) => ({
  type: 'object',
  required: [key, 'next_cursor'],
  properties: {
    [key]: { type: 'array', items: item },
    next_cursor: {
      type: ['string', 'null'],
      description: 'Pass it as cursor for the next page; null on the last page.',
    },
  },
});

/** What Analyze detected, as version records show it. */
export const Analysis = {
  type: 'object',
  description: 'What Analyze detected, and why (reasons, by field).',
  properties: {
    runtime: { type: 'string', enum: ['static', 'node'] },
    framework: text,
    output_dir: { type: 'string' },
    install_command: text,
    build_command: text,
    start_command: text,
    package_manager: text,
    node_version: text,
    file_count: { type: 'integer' },
    total_size: { type: 'integer', description: 'Uncompressed bytes.' },
    unwrapped_prefix: { type: 'string', description: 'The single top-level folder that was unwrapped ("" when none).' },
    warnings: { type: 'array', items: { type: 'string' } },
    reasons: { type: 'object', additionalProperties: { type: 'string' } },
    analyzer: { type: 'string' },
  },
} as const;

/** A version record: an uploaded archive and what Analyze found in it. */
export const VersionRecord = {
  type: 'object',
  required: [
    'id',
    'project_id',
    'operation_id',
    'filename',
    'size',
    'sha256',
    'options',
    'analysis',
    'created_at',
    'archive_removed_at',
  ],
  properties: {
    id: Uuid,
    project_id: Uuid,
    operation_id: { ...Uuid, description: 'The operation that uploaded it.' },
    filename: text,
    size: { type: 'integer', description: 'Archive bytes.' },
    sha256: { type: 'string', description: 'SHA-256 of the archive, lower-case hex.' },
    options: {
      type: 'object',
      description: 'Upload options given with it.',
      properties: {
        root_directory: { type: 'string' },
        skip_build: { type: 'boolean' },
        runtime: { type: 'string' },
        framework: { type: 'string' },
      },
    },
    analysis: { ...nullable(Analysis), description: 'Null until Analyze succeeded.' },
    created_at: Timestamp,
    archive_removed_at: {
      ...nullable(Timestamp),
      description:
        'When the archive was removed from storage (HOIST_DEPLOYMENT_FILE_DAYS after the upload, once no retained ' +
        'release or unfinished operation used it): the version can no longer be built again (409 not_retryable).',
    },
  },
} as const;

/** A build's artifact, or null. */
export const Artifact = nullable({
  type: 'object',
  description: 'The immutable, content-addressed artifact; null until the build stored it.',
  required: ['key', 'sha256', 'size'],
  properties: { key: { type: 'string' }, sha256: { type: 'string' }, size: { type: 'integer' } },
});

/** The summary of a build log kept on the build record. */
export const LogSummary = {
  type: 'object',
  description: 'Summary of the build log: its last lines, warning and error counts, and size.',
  required: ['last_lines', 'warnings', 'errors', 'bytes'],
  properties: {
    last_lines: { type: 'array', items: { type: 'string' } },
    warnings: { type: 'integer' },
    errors: { type: 'integer' },
    bytes: { type: 'integer' },
  },
} as const;

const buildStatus = {
  type: 'string',
  enum: ['running', 'succeeded', 'failed', 'canceled'],
  description: 'A build packed without running build commands (skip_build) is succeeded with skipped true.',
};
const buildSkipped = {
  type: 'boolean',
  description: 'true: the archive was packed as it is, without running build commands (skip_build).',
};

/** A build record. */
export const BuildRecord = {
  type: 'object',
  required: [
    'id',
    'project_id',
    'version_id',
    'operation_id',
    'status',
    'skipped',
    'artifact',
    'log',
    'log_url',
    'error',
    'created_at',
    'finished_at',
    'artifact_removed_at',
    'log_removed_at',
  ],
  properties: {
    id: Uuid,
    project_id: Uuid,
    version_id: Uuid,
    operation_id: Uuid,
    status: buildStatus,
    skipped: buildSkipped,
    artifact: Artifact,
    log: LogSummary,
    log_url: { type: 'string', description: 'Path of the full log (text/plain).' },
    error: RecordError,
    created_at: Timestamp,
    finished_at: nullable(Timestamp),
    artifact_removed_at: {
      ...nullable(Timestamp),
      description:
        'When the artifact was removed from storage (HOIST_DEPLOYMENT_FILE_DAYS after the build, once no retained ' +
        'release or unfinished operation used it): it can no longer be deployed again (409 not_retryable).',
    },
    log_removed_at: {
      ...nullable(Timestamp),
      description:
        'When the stored log was removed (HOIST_BUILD_LOG_DAYS after the build, unless a retained release used ' +
        'it): reading it answers 410 gone; the summary in `log` stays.',
    },
  },
} as const;

const deploymentStatus = {
  type: 'string',
  enum: ['running', 'live', 'superseded', 'failed', 'canceled', 'preview', 'expired'],
  description: 'preview: a preview serving on its own host (url); expired: a preview whose time is up.',
};

/** A deployment record. */
export const DeploymentRecord = {
  type: 'object',
  required: [
    'id',
    'project_id',
    'status',
    'url',
    'build_id',
    'version_id',
    'operation_id',
    'live',
    'error',
    'created_at',
    'live_at',
    'ended_at',
  ],
  properties: {
    id: Uuid,
    project_id: Uuid,
    status: deploymentStatus,
    url: text,
    build_id: { ...Uuid, description: 'The build whose artifact it serves.' },
    version_id: Uuid,
    operation_id: Uuid,
    live: { type: 'boolean', description: 'True while the project serves this deployment.' },
    error: RecordError,
    created_at: Timestamp,
    live_at: nullable(Timestamp),
    ended_at: nullable(Timestamp),
    expires_at: {
      ...nullable(Timestamp),
      description: "When a preview stops serving (the plan's preview_ttl_hours after it went up); null otherwise.",
    },
  },
} as const;

const ms = (what: string) => ({
  type: ['integer', 'null'],
  description: `${what} in milliseconds; null when the stage did not run (skipped or reused).`,
});

/** A release: the deployment that went live, its version, build and timings. */
export const ReleaseDetail = {
  type: 'object',
  required: ['id', 'project_id', 'operation_id', 'version', 'build', 'deployment', 'timings'],
  properties: {
    id: { ...Uuid, description: 'The deployment id.' },
    project_id: Uuid,
    operation_id: Uuid,
    version: {
      type: 'object',
      required: ['id', 'filename', 'size', 'sha256', 'created_at', 'analysis'],
      properties: {
        id: Uuid,
        filename: text,
        size: { type: 'integer' },
        sha256: { type: 'string' },
        created_at: Timestamp,
        analysis: nullable({
          type: 'object',
          properties: {
            runtime: Analysis.properties.runtime,
            framework: text,
            output_dir: { type: 'string' },
            file_count: { type: 'integer' },
            total_size: { type: 'integer' },
            warnings: { type: 'array', items: { type: 'string' } },
          },
        }),
      },
    },
    build: nullable({
      type: 'object',
      required: ['id', 'status', 'skipped', 'artifact', 'log', 'log_url'],
      properties: {
        id: Uuid,
        status: buildStatus,
        skipped: buildSkipped,
        artifact: Artifact,
        log: LogSummary,
        log_url: { type: 'string' },
      },
    }),
    deployment: {
      type: 'object',
      required: ['id', 'status', 'url', 'live', 'live_at', 'ended_at'],
      properties: {
        id: Uuid,
        status: deploymentStatus,
        url: text,
        live: { type: 'boolean' },
        live_at: Timestamp,
        ended_at: nullable(Timestamp),
      },
    },
    timings: {
      type: 'object',
      required: ['uploaded_at', 'started_at', 'live_at', 'analyze_ms', 'build_ms', 'deploy_ms', 'total_ms'],
      properties: {
        uploaded_at: { ...Timestamp, description: 'When the version was uploaded.' },
        started_at: { ...nullable(Timestamp), description: 'When the operation that made this release started.' },
        live_at: Timestamp,
        analyze_ms: ms('Analyze duration'),
        build_ms: ms('Build duration'),
        deploy_ms: ms('Deploy duration'),
        total_ms: {
          type: 'integer',
          description: 'From upload to live, in milliseconds (for a retry, this includes the time before it).',
        },
      },
    },
  },
} as const;
