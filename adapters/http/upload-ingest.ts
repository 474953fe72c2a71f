import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { HoistConfig } from '../../config/schema.js';
import { DEPLOYMENT_SERVICE, type DeploymentService, type UploadedArchive } from '../../core/deployments/deployment-service.js';
import { Project } from '../../core/entities/project.js';
import type { UploadOptions } from '../../core/entities/version.js';
import { HoistError, invalid } from '../../core/errors.js';
import { IDEMPOTENCY_SERVICE, type IdempotencyService } from '../../core/idempotency/idempotency-service.js';
import { STORAGE, type Storage } from '../../core/ports/storage.js';
import { PROJECT_SERVICE, type ProjectService } from '../../core/projects/project-service.js';
import { projectUrl } from '../../core/projects/project-url.js';
import type { Kernel } from '../kernel.js';
import { refuseNulIn } from './refuse-nul.js';
import { Uuid } from './schemas.js';

/** The whole proxied request, multipart overhead included (the spec's envelope). */
export const ENVELOPE_BYTES = 100_000_000;
const FIELD_BYTES = 64 * 1024;

/** The 202 answer of an upload that started a deployment. */
export const Queued = {
  type: 'object',
  required: ['action', 'project', 'operation', 'next_step'],
  properties: {
    action: { type: 'string', const: 'local_to_live_queued' },
    project: { type: 'object', required: ['url'], properties: { id: Uuid, name: { type: 'string' }, slug: { type: 'string' }, url: { type: 'string' } } },
    operation: {
      type: 'object',
      required: ['id', 'status', 'progress'],
      properties: { id: Uuid, status: { type: 'string' }, progress: { type: 'integer', minimum: 0, maximum: 100 } },
    },
    version: { type: 'object', properties: { id: Uuid, size: { type: 'integer' }, sha256: { type: 'string' } } },
    next_step: { type: 'string' },
  },
} as const;

/** The ZIP of a multipart upload (already in Storage) and its text parts. */
export interface ParsedUpload {
  upload: UploadedArchive;
  fields: Record<string, string>;
}

/** The project an upload deploys to; `created` when resolving it created it (a refused deployment removes it again). */
export interface Target {
  project: Project;
  created?: boolean;
}

/** The 202 answer of a started deployment. */
export interface QueuedAnswer {
  status: number;
  body: { operation: { id: string; status: string; progress: number } } & Record<string, unknown>;
}

/**
 * What every upload route shares: reading a multipart upload into Storage, resolving the project
 * by name, and starting the deployment chain with the 202 answer.
 */
export class UploadIngest {
  private readonly config: HoistConfig;
  private readonly storage: Storage;
  private readonly deployments: DeploymentService;
  private readonly projects: ProjectService;
  private readonly idempotency: IdempotencyService;

  constructor(private readonly kernel: Kernel) {
    this.config = kernel.config as HoistConfig;
    this.storage = kernel.get<Storage>(STORAGE);
    this.deployments = kernel.get<DeploymentService>(DEPLOYMENT_SERVICE);
    this.projects = kernel.get<ProjectService>(PROJECT_SERVICE);
    this.idempotency = kernel.get<IdempotencyService>(IDEMPOTENCY_SERVICE);
  }

  /**
   * Prepares an encapsulated route plugin for multipart uploads: @fastify/multipart with the
   * archive limit, a 413 for a Content-Length over the envelope and a 400 for a body that is not
   * multipart (both before the body is read, for the requests `applies` to), and `closeUnread` on send.
   */
  async multipart(app: FastifyInstance, applies: (req: FastifyRequest) => boolean = () => true): Promise<void> {
    await app.register(multipart, {
      // One byte past the archive limit reaches Storage, whose maxBytes refuses it before anything is kept.
      limits: { fileSize: this.config.maxArchiveBytes + 1, files: 1, fields: 20, fieldSize: FIELD_BYTES, parts: 21, headerPairs: 100 },
      throwFileSizeLimit: true,
    });
    app.addHook('onRequest', async (req) => {
      if (!applies(req)) return;
      const length = Number(req.headers['content-length'] ?? 0);
      if (length > ENVELOPE_BYTES) throw envelopeTooLarge(`The request is ${length} bytes`);
      if (!/^multipart\/form-data/i.test(req.headers['content-type'] ?? '')) throw invalid('Send multipart/form-data with the ZIP in the file part "file"', { field: 'content-type' });
    });
    app.addHook('onSend', closeUnread);
  }

  /**
   * Streams the parts of a multipart upload: the one file part `file` into Storage at `key`, the
   * text parts (only those `allowed`) into `fields`. `early` sees each text part that comes before
   * the file part, as it comes, and may refuse the upload there, before the ZIP is read. Throws
   * 400/413 errors (or what `early` throws) and then leaves nothing stored.
   */
  async parse(req: FastifyRequest, allowed: string[], key = `uploads/${randomUUID()}.zip`, early?: (name: string, value: string) => Promise<void>): Promise<ParsedUpload> {
    const limit = this.config.maxArchiveBytes;
    let upload: UploadedArchive | null = null;
    const fields: Record<string, string> = {};
    // A chunked body has no Content-Length to check up front: count it as it arrives.
    let seen = 0;
    const count = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen <= ENVELOPE_BYTES) return;
      req.raw.off('data', count);
      // @fastify/multipart ends the parse (and the file part being stored) on a request 'error'.
      req.raw.emit('error', envelopeTooLarge(`The request is over ${ENVELOPE_BYTES} bytes`));
    };
    req.raw.on('data', count);
    try {
      for await (const part of req.parts()) {
        if (part.type === 'file') {
          if (part.fieldname !== 'file') throw invalid(`Unexpected file part "${part.fieldname}"; send the ZIP in the part "file"`, { field: part.fieldname });
          if (upload) throw invalid('Send exactly one file part', { field: 'file' });
          refuseNulIn(part.filename, 'file', 'file name of part');
          // Past its limit the file part is skipped fast, so the envelope count may trip first: the ZIP's limit is the cause.
          const stored = await this.storage.put(key, part.file, { maxBytes: limit }).catch((err) => {
            throw part.file.truncated ? tooLarge(limit) : err;
          });
          upload = { ...stored, filename: part.filename ? part.filename.slice(0, 255) : null };
          if (part.file.truncated) throw tooLarge(limit);
        } else {
          if (part.fieldname === 'file') throw invalid('The part "file" must be a file part (with a filename)', { field: 'file' });
          if (!allowed.includes(part.fieldname)) throw invalid(`Unknown part "${part.fieldname}"; allowed: ${['file', ...allowed].join(', ')}`, { field: part.fieldname });
          if (part.fieldname in fields) throw invalid(`Part "${part.fieldname}" is repeated`, { field: part.fieldname });
          if (part.valueTruncated) throw invalid(`Part "${part.fieldname}" is too long`, { field: part.fieldname });
          // @fastify/multipart parses a part sent as application/json.
          if (typeof part.value !== 'string') throw invalid(`Part "${part.fieldname}" must be plain text`, { field: part.fieldname });
          refuseNulIn(part.value, part.fieldname, 'part');
          fields[part.fieldname] = part.value;
          if (!upload) await early?.(part.fieldname, part.value);
        }
      }
      if (!upload) throw invalid('The ZIP file part "file" is missing', { field: 'file' });
      return { upload, fields };
    } catch (err) {
      if (upload) await this.storage.delete(key).catch(() => {});
      throw translate(err, limit);
    } finally {
      req.raw.off('data', count);
    }
  }

  /**
   * Refuses an upload to a project whose deployment chain still runs (409 deployment_in_progress),
   * before its body is read. A request repeating an Idempotency-Key the account used is let
   * through: its first answer is replayed once the body is read.
   */
  async assertIdle(req: FastifyRequest, accountId: string, projectId: string): Promise<void> {
    const key = req.headers['idempotency-key'];
    if (typeof key === 'string' && (await this.idempotency.remembers(accountId, key))) return;
    await this.deployments.assertNoChainRunning(projectId);
  }

  /** The account's active project called `name` (the oldest), or null. */
  async existing(accountId: string, name: string): Promise<Project | null> {
    return this.kernel.orm.em.fork().findOne(Project, { accountId, name, status: 'active' }, { orderBy: { createdAt: 'asc' } });
  }

  /** The account's active project called `name` (the oldest), or a new one of that name and `visibility`. */
  async byName(accountId: string, name: string, visibility?: string, accessPassword?: string): Promise<Target> {
    const existing = await this.kernel.orm.em.findOne(Project, { accountId, name, status: 'active' }, { orderBy: { createdAt: 'asc' } });
    return existing ? { project: existing } : { project: await this.projects.create(accountId, { name, visibility, accessPassword }), created: true };
  }

  /**
   * Resolves the project and starts its deployment chain for `upload` (already in Storage); answers
   * 202 with the project, the operation and the version. A refused start removes a project `resolve`
   * created; the upload is the caller's to delete when this throws.
   */
  async start(accountId: string, upload: UploadedArchive, options: UploadOptions, resolve: () => Promise<Target>): Promise<QueuedAnswer> {
    const { project, created } = await resolve();
    const { operation, version } = await this.deployments.start(accountId, project, upload, options).catch(async (err) => {
      if (created) await this.kernel.orm.em.fork().nativeDelete(Project, { id: project.id });
      throw err;
    });
    return {
      status: 202,
      body: {
        action: 'local_to_live_queued',
        project: { id: project.id, name: project.name, slug: project.slug, url: projectUrl(this.config, project.slug) },
        operation: { id: operation.id, status: operation.status, progress: operation.progress },
        version: { id: version.id, size: version.archiveSize, sha256: version.archiveSha256 },
        next_step: `Poll GET /api/v1/operations/${operation.id} every 2-10 s (with backoff) until its status is succeeded, failed or canceled; then open project.url.`,
      },
    };
  }
}

/**
 * onSend hook of upload routes, for an answer sent before the body was read whole: a rest of known,
 * allowed length is read and dropped (so the client gets to read the answer); any other rest is
 * never read, as the connection closes.
 */
export async function closeUnread(req: FastifyRequest, reply: FastifyReply): Promise<void> {
  if (req.raw.complete) return;
  const length = req.headers['content-length'];
  if (length !== undefined && Number(length) <= ENVELOPE_BYTES) req.raw.resume();
  else reply.header('connection', 'close');
}

const tooLarge = (limit: number) => new HoistError('payload_too_large', `The ZIP is larger than ${limit} bytes`, { limit });
const envelopeTooLarge = (what: string) =>
  new HoistError('payload_too_large', `${what}; the limit is ${ENVELOPE_BYTES} bytes including multipart overhead`, { limit: ENVELOPE_BYTES });

/** Multipart and stream failures as clear 400/413 errors (never a 500). */
function translate(err: unknown, limit: number): unknown {
  if (err instanceof HoistError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  if (e.code === 'FST_FILES_LIMIT') return invalid('Send exactly one file part', { field: 'file' });
  if (e.code === 'FST_PARTS_LIMIT' || e.code === 'FST_FIELDS_LIMIT') return invalid('Too many parts', { field: 'body' });
  if (e.code === 'FST_REQ_FILE_TOO_LARGE' || e.statusCode === 413) return tooLarge(limit);
  if (e.code?.startsWith('FST_') || e.statusCode === 400 || e.statusCode === 406 || /Unexpected end|Multipart|boundary|aborted|premature/i.test(e.message ?? '')) {
    return invalid(`The multipart body could not be read: ${e.message ?? 'malformed'}`, { field: 'body' });
  }
  if (e.code === 'ECONNRESET' || e.code === 'ERR_STREAM_PREMATURE_CLOSE') return invalid('The upload was interrupted', { field: 'file' });
  return err;
}

/**
 * The spec's transport choice, as a Local-to-Live text part: `proxied_multipart` (this request, the
 * default) is accepted; `direct_storage_resumable` is a choice an upload session makes.
 */
export function checkTransport(value: string): void {
  if (value === 'proxied_multipart') return;
  if (value === 'direct_storage_resumable') {
    throw invalid(
      'transport direct_storage_resumable is not a Local-to-Live upload: create an upload session with POST /api/v1/upload-sessions ' +
        '{"transport": "direct_storage_resumable", "size": <bytes>, ...} and send the ZIP to its upload_url',
      { field: 'transport', see: '/api/v1/upload-sessions' },
    );
  }
  throw invalid('transport must be proxied_multipart (this request) or direct_storage_resumable (an upload session)', { field: 'transport' });
}
