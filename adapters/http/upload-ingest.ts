import multipart from '@fastify/multipart';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { randomUUID } from 'node:crypto';
import type { HoistConfig } from '../../config/schema.js';
import type { UploadedArchive } from '../../core/deployments/deployment-service.js';
import { HoistError, invalid } from '../../core/errors.js';
import { STORAGE, type Storage } from '../../core/ports/storage.js';
import type { Kernel } from '../kernel.js';
import { refuseNulIn } from './refuse-nul.js';

/** The whole proxied request, multipart overhead included (the spec's envelope). */
export const ENVELOPE_BYTES = 100_000_000;
const FIELD_BYTES = 64 * 1024;

/**
 * The ZIP of a multipart upload (already in Storage) and its text parts. The ZIP is null only when a
 * `manifest_id` part is there (an upload of only new files, of which there were none).
 */
export interface ParsedUpload {
  upload: UploadedArchive | null;
  fields: Record<string, string>;
}

/**
 * What every upload route shares: reading a multipart upload into Storage, its parts checked as
 * they come.
 */
export class UploadIngest {
  private readonly config: HoistConfig;
  private readonly storage: Storage;

  constructor(kernel: Kernel) {
    this.config = kernel.config as HoistConfig;
    this.storage = kernel.get<Storage>(STORAGE);
  }

  /**
   * Prepares an encapsulated route plugin for multipart uploads: @fastify/multipart with the
   * archive limit, a 413 for a Content-Length over the envelope and a 400 for a body that is not
   * multipart (both before the body is read, for the requests `applies` to), and `closeUnread` on send.
   */
  async multipart(app: FastifyInstance, applies: (req: FastifyRequest) => boolean = () => true): Promise<void> {
    await app.register(multipart, {
      // One byte past the archive limit reaches Storage, whose maxBytes refuses it before anything is kept.
      limits: {
        fileSize: this.config.maxArchiveBytes + 1,
        files: 1,
        fields: 20,
        fieldSize: FIELD_BYTES,
        parts: 21,
        headerPairs: 100,
      },
      throwFileSizeLimit: true,
    });
    app.addHook('onRequest', async (req) => {
      if (!applies(req)) return;
      const length = Number(req.headers['content-length'] ?? 0);
      if (length > ENVELOPE_BYTES) throw envelopeTooLarge(`The request is ${length} bytes`);
      if (!/^multipart\/form-data/i.test(req.headers['content-type'] ?? ''))
        throw invalid('Send multipart/form-data with the ZIP in the file part "file"', { field: 'content-type' });
    });
    app.addHook('onSend', closeUnread);
  }

  /**
   * Streams the parts of a multipart upload: the one file part `file` into Storage at `key`, the
   * text parts (only those `allowed`; a `transport` part must name this transport) into `fields`.
   * `early` sees each text part that comes before the file part, as it comes, and may refuse the
   * upload there, before the ZIP is read. Throws 400/413 errors (or what `early` throws) and then
   * leaves nothing stored.
   */
  async parse(
    req: FastifyRequest,
    allowed: string[],
    key = `uploads/${randomUUID()}.zip`,
    early?: (name: string, value: string) => Promise<void>,
  ): Promise<ParsedUpload> {
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
          if (part.fieldname !== 'file')
            throw invalid(`Unexpected file part "${part.fieldname}"; send the ZIP in the part "file"`, {
              field: part.fieldname,
            });
          if (upload) throw invalid('Send exactly one file part', { field: 'file' });
          refuseNulIn(part.filename, 'file', 'file name of part');
          // Past its limit the file part is skipped fast, so the envelope count may trip first: the ZIP's limit is why.
          const stored = await this.storage.put(key, part.file, { maxBytes: limit }).catch((err) => {
            throw part.file.truncated ? tooLarge(limit) : err;
          });
          upload = { ...stored, filename: part.filename ? part.filename.slice(0, 255) : null };
          if (part.file.truncated) throw tooLarge(limit);
        } else {
          if (part.fieldname === 'file')
            throw invalid('The part "file" must be a file part (with a filename)', { field: 'file' });
          if (!allowed.includes(part.fieldname))
            throw invalid(`Unknown part "${part.fieldname}"; allowed: ${['file', ...allowed].join(', ')}`, {
              field: part.fieldname,
            });
          if (part.fieldname in fields)
            throw invalid(`Part "${part.fieldname}" is repeated`, { field: part.fieldname });
          if (part.valueTruncated) throw invalid(`Part "${part.fieldname}" is too long`, { field: part.fieldname });
          // @fastify/multipart parses a part sent as application/json.
          if (typeof part.value !== 'string')
            throw invalid(`Part "${part.fieldname}" must be plain text`, { field: part.fieldname });
          refuseNulIn(part.value, part.fieldname, 'part');
          if (part.fieldname === 'transport') checkTransport(part.value);
          fields[part.fieldname] = part.value;
          if (!upload) await early?.(part.fieldname, part.value);
        }
      }
      if (!upload && fields.manifest_id === undefined)
        throw invalid('The ZIP file part "file" is missing', { field: 'file' });
      return { upload, fields };
    } catch (err) {
      if (upload)
        await this.storage
          .delete(key)
          .catch((e: unknown) => req.log.warn({ err: e, key }, 'a refused upload was not deleted from storage'));
      throw translate(err, limit);
    } finally {
      req.raw.off('data', count);
    }
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

const tooLarge = (limit: number) =>
  new HoistError('payload_too_large', `The ZIP is larger than ${limit} bytes`, { limit });
const envelopeTooLarge = (what: string) =>
  new HoistError('payload_too_large', `${what}; the limit is ${ENVELOPE_BYTES} bytes including multipart overhead`, {
    limit: ENVELOPE_BYTES,
  });

/** Multipart and stream failures as clear 400/413 errors (never a 500). */
function translate(err: unknown, limit: number): unknown {
  if (err instanceof HoistError) return err;
  const e = err as { code?: string; statusCode?: number; message?: string };
  if (e.code === 'FST_FILES_LIMIT') return invalid('Send exactly one file part', { field: 'file' });
  if (e.code === 'FST_PARTS_LIMIT' || e.code === 'FST_FIELDS_LIMIT')
    return invalid('Too many parts', { field: 'body' });
  if (e.code === 'FST_REQ_FILE_TOO_LARGE' || e.statusCode === 413) return tooLarge(limit);
  if (
    e.code?.startsWith('FST_') ||
    e.statusCode === 400 ||
    e.statusCode === 406 ||
    /Unexpected end|Multipart|boundary|aborted|premature/i.test(e.message ?? '')
  ) {
    return invalid(`The multipart body could not be read: ${e.message ?? 'malformed'}`, { field: 'body' });
  }
  if (e.code === 'ECONNRESET' || e.code === 'ERR_STREAM_PREMATURE_CLOSE')
    return invalid('The upload was interrupted', { field: 'file' });
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
      'transport direct_storage_resumable is not a Local-to-Live upload: ' +
        'create an upload session with POST /api/v1/upload-sessions ' +
        '{"transport": "direct_storage_resumable", "size": <bytes>, ...} and send the ZIP to its upload_url',
      { field: 'transport', see: '/api/v1/upload-sessions' },
    );
  }
  throw invalid('transport must be proxied_multipart (this request) or direct_storage_resumable (an upload session)', {
    field: 'transport',
  });
}
