import type { FastifyPluginAsync } from 'fastify';
import type { HoistConfig } from '../../../config/schema.js';
import { UPLOAD_TRANSPORTS, type UploadTransport } from '../../../core/entities/upload-session.js';
import { NAME_MAX, VISIBILITIES } from '../../../core/projects/project-service.js';
import { projectUrl } from '../../../core/projects/project-url.js';
import {
  MAX_OPEN_SESSIONS,
  MAX_UPLOAD_PIECES,
  modeOf,
  RESUMABLE_MAX_BYTES,
  UPLOAD_SESSION_SERVICE,
  type UploadMode,
  type UploadSessionService,
} from '../../../core/uploads/upload-session-service.js';
import { bearer, principalOf } from '../auth.js';
import { errorResponses, Timestamp, Uuid } from '../schemas.js';
import { ENVELOPE_BYTES } from '../upload-ingest.js';
import { uploadOptions } from '../../../core/deployments/upload-options.js';
import { publicBase } from '../public-base.js';
import type { RouteOptions } from './index.js';

const refused =
  'Refused with 400: an upload session cannot carry environment variables or an access password. ' +
  'Create the project first and set them on it (then create the session with ' +
  'project_id), or use the authenticated POST /api/v1/local-to-live.';

const Body = {
  type: 'object',
  additionalProperties: false,
  properties: {
    name: {
      type: 'string',
      minLength: 1,
      maxLength: NAME_MAX,
      description:
        'The project to create, or select when the account has one of that name. Required unless project_id is given.',
    },
    project_id: { type: 'string', description: 'An existing project of the account to deploy to, instead of name.' },
    visibility: {
      type: 'string',
      enum: VISIBILITIES,
      description: 'Of a project the upload creates (draft by default). Not with project_id.',
    },
    filename: { type: 'string', minLength: 5, maxLength: 255, description: 'Name of the ZIP; ends in .zip.' },
    runtime: { type: 'string', description: 'static or node; overrides what Analyze detects.' },
    framework: {
      type: 'string',
      description: 'A framework name such as static, vite or astro; overrides what Analyze detects.',
    },
    skip_build: { type: 'boolean', description: 'Skip the Build stage (the archive is served as built).' },
    clear_cache: {
      type: 'boolean',
      description: "Drop the account's build cache before this build, which starts without one and leaves a new one.",
    },
    target: {
      type: 'string',
      enum: ['production', 'preview'],
      description:
        'production (default), or preview: the upload deploys to its own host <slug>--<short id>.<apps domain>, ' +
        'leaving the live release as it is (see POST /api/v1/local-to-live).',
    },
    root_directory: {
      type: 'string',
      maxLength: 255,
      description: 'Directory inside the archive to deploy from; relative, no .. ("." is the archive root).',
    },
    transport: {
      type: 'string',
      enum: UPLOAD_TRANSPORTS,
      default: 'proxied_multipart',
      description:
        'proxied_multipart (default): one multipart POST of at most 95,000,000 bytes of ' +
        'ZIP. direct_storage_resumable: at most 100,000,000 bytes, resumable; ' +
        'on S3 storage the parts go straight to storage through presigned URLs (the ' +
        'answer lists them in parts), on local storage through the API with tus 1.0.0 ' +
        'core.',
    },
    size: {
      type: 'integer',
      minimum: 1,
      description:
        "The ZIP's size in bytes. Required for direct_storage_resumable (it is the tus " +
        "Upload-Length). Over the transport's maximum → 413; over the plan's " +
        'archive_bytes → 403.',
    },
    environment: { description: refused },
    access_password: { description: refused },
  },
} as const;

const Created = {
  type: 'object',
  required: ['id', 'transport', 'upload_url', 'method', 'expires_at', 'limits', 'size', 'project', 'next_step'],
  properties: {
    id: Uuid,
    transport: { type: 'string', enum: UPLOAD_TRANSPORTS },
    upload_url: {
      type: 'string',
      description:
        'Short-lived, one-time, and itself a credential: keep it secret. Send no Authorization header to it.',
    },
    method: {
      type: 'string',
      enum: ['POST', 'PATCH'],
      description:
        'POST (multipart) for proxied_multipart; PATCH (tus, with HEAD to resume) for ' +
        "direct_storage_resumable on local storage; POST (JSON: the parts' ETags, after " +
        'the parts are PUT to storage) for direct_storage_resumable on S3 storage.',
    },
    expires_at: { ...Timestamp, description: 'The URL stops working at this time (410).' },
    limits: {
      type: 'object',
      required: ['archive_bytes'],
      properties: {
        archive_bytes: {
          type: 'integer',
          description:
            "Largest ZIP this session takes: the transport's maximum, or the plan's archive_bytes when lower.",
        },
        request_bytes: {
          type: 'integer',
          description: 'proxied_multipart: the whole request, multipart overhead included.',
        },
      },
    },
    size: {
      type: ['integer', 'null'],
      description: 'The declared size (the tus Upload-Length of a resumable session).',
    },
    parts: {
      type: 'object',
      required: ['part_size', 'count', 'urls'],
      description:
        "Only for direct_storage_resumable on S3 storage: where the ZIP's bytes go, " +
        'straight to storage. Part n is bytes (n-1)·part_size to n·part_size-1 of the ZIP ' +
        '(the last part takes the rest). PUT each part as the raw body to its url, with ' +
        'exactly its size bytes and that Content-Length (a body of known length, not chunked): the url is signed ' +
        'for that length, and storage refuses a PUT of any other (403) and keeps nothing of it. Send it with ' +
        'no Authorization header, in any order or in parallel, before expires_at; ' +
        'a part PUT again replaces it. Keep the ETag header of each answer for the completing POST to upload_url.',
      properties: {
        part_size: { type: 'integer', description: 'Bytes of every part but the last.' },
        count: { type: 'integer', description: 'Number of parts.' },
        urls: {
          type: 'array',
          items: {
            type: 'object',
            required: ['part_number', 'url', 'size'],
            properties: {
              part_number: { type: 'integer', minimum: 1 },
              url: {
                type: 'string',
                description:
                  'Presigned storage URL for an HTTP PUT of this part, of exactly size bytes (Content-Length: size); ' +
                  'a credential, valid until expires_at.',
              },
              size: {
                type: 'integer',
                description: 'Bytes this part holds: the Content-Length its PUT must carry, no more and no less.',
              },
            },
          },
        },
      },
    },
    project: {
      anyOf: [
        { type: 'null' },
        {
          type: 'object',
          properties: { id: Uuid, name: { type: 'string' }, slug: { type: 'string' }, url: { type: 'string' } },
        },
      ],
      description:
        'The project of a session created with project_id; null when the upload creates or selects it by name.',
    },
    next_step: { type: 'string' },
  },
} as const;

interface CreateBody {
  name?: string;
  project_id?: string;
  visibility?: string;
  filename?: string;
  runtime?: string;
  framework?: string;
  skip_build?: boolean;
  clear_cache?: boolean;
  root_directory?: string;
  target?: string;
  transport?: UploadTransport;
  size?: number;
  environment?: unknown;
  access_password?: unknown;
}

const nextStep: Record<UploadMode, string> = {
  multipart:
    'POST the ZIP to upload_url as multipart/form-data in the file part "file", with ' +
    'no Authorization header, before expires_at. ' +
    'The URL works once; the answer is 202 with the deployment operation to poll.',
  tus:
    'Send the ZIP with tus 1.0.0 to upload_url, with no Authorization header, before ' +
    'expires_at: PATCH the bytes from Upload-Offset 0 ' +
    '(Content-Type: application/offset+octet-stream, Tus-Resumable: 1.0.0), in one ' +
    `request or several (at most ${MAX_UPLOAD_PIECES.toLocaleString('en-US')} pieces: send a few MiB each); ` +
    'after a dropped connection, ' +
    'HEAD upload_url for the Upload-Offset to resume from. The PATCH that completes ' +
    'the upload answers 202 with the deployment operation to poll.',
  parts:
    'PUT each part of the ZIP (part n: bytes (n-1)·part_size to n·part_size-1) as the ' +
    'raw body of exactly its size bytes (Content-Length: size, not chunked; storage refuses any other length) ' +
    'to its URL in parts.urls, with no Authorization header, ' +
    "before expires_at, and keep each answer's ETag header; a failed PUT can be sent " +
    'again. Then POST upload_url with Content-Type: application/json and ' +
    '{"parts": [{"part_number": 1, "etag": "..."}, ...]} (optionally "sha256": the ' +
    "ZIP's SHA-256): the answer is 202 with the deployment operation to poll.",
};

/** Upload sessions: create a short-lived, one-time upload URL (the upload itself is in upload-session-uploads.ts). */
const uploadSessions: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const config = kernel.config as HoistConfig;
  const sessions = kernel.get<UploadSessionService>(UPLOAD_SESSION_SERVICE);
  app.addHook('onRequest', app.authenticate);

  app.post<{ Body: CreateBody }>(
    '/upload-sessions',
    {
      schema: {
        tags: ['Deployments'],
        summary: 'Create a short-lived, one-time upload URL',
        description:
          'Prepares an upload: the ZIP is then sent to upload_url without a bearer token ' +
          '(the URL is the credential; an Authorization header sent to it is ignored). ' +
          `The URL expires after ${config.uploadSessionTtlSeconds} s (configurable) and ` +
          `works once: a used or expired URL answers 410, an unknown one 404. ` +
          'It also expires at once when the member who created it is removed from the account. ' +
          'Only a hash of its token is stored. The upload deploys to project_id, or to the ' +
          'project called name (created when the account has none). ' +
          `Transports: proxied_multipart (default; one multipart POST, ZIP at most ` +
          `95,000,000 bytes) and direct_storage_resumable (at most ${RESUMABLE_MAX_BYTES} ` +
          `bytes; size required): ` +
          'on S3 storage (storage=minio) its bytes never pass through the API: the answer ' +
          'lists presigned part URLs (parts) to PUT the ZIP to, in parts, and a JSON POST ' +
          'of their ETags to upload_url completes it; ' +
          'on local storage it is tus 1.0.0 core (HEAD and PATCH to upload_url). ' +
          'A session cannot carry environment variables or an access password (400): create ' +
          'the project first, or use the authenticated POST /api/v1/local-to-live. ' +
          `An account holds at most ${MAX_OPEN_SESSIONS} sessions open (neither used nor expired) at once: ` +
          'past it 429 rate_limited with Retry-After (the seconds until the first of them expires) and ' +
          '`details.limit`, and nothing is created.',
        security: bearer,
        body: Body,
        response: { 201: Created, ...errorResponses(400, 401, 403, 404, 413, 429) },
      },
    },
    async (req, reply) => {
      const { accountId, userId } = principalOf(req);
      const b = req.body;
      const options = uploadOptions({
        root_directory: b.root_directory,
        skip_build: b.skip_build,
        clear_cache: b.clear_cache,
        runtime: b.runtime,
        framework: b.framework,
        target: b.target,
      });
      const { session, token, project, maxBytes, parts } = await sessions.create(accountId, {
        userId,
        name: b.name,
        projectId: b.project_id,
        visibility: b.visibility,
        filename: b.filename,
        options,
        transport: b.transport,
        size: b.size,
        environment: b.environment,
        accessPassword: b.access_password,
      });
      const base = publicBase(config, req);
      reply.header('cache-control', 'no-store');
      return reply.status(201).send({
        id: session.id,
        transport: session.transport,
        upload_url: `${base}/api/v1/upload-sessions/${token}/upload`,
        method: modeOf(session) === 'tus' ? 'PATCH' : 'POST',
        expires_at: session.expiresAt.toISOString(),
        limits: {
          archive_bytes: maxBytes,
          ...(session.transport === 'proxied_multipart' ? { request_bytes: ENVELOPE_BYTES } : {}),
        },
        size: session.declaredSize,
        project: project && {
          id: project.id,
          name: project.name,
          slug: project.slug,
          url: projectUrl(config, project.slug),
        },
        ...(parts
          ? {
              parts: {
                part_size: parts.partSize,
                count: parts.urls.length,
                urls: parts.urls.map((p) => ({ part_number: p.number, url: p.url, size: p.size })),
              },
            }
          : {}),
        next_step: nextStep[modeOf(session)],
      });
    },
  );
};

export default uploadSessions;
