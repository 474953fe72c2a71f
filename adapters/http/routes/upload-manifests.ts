import compress from '@fastify/compress';
import type { FastifyPluginAsync } from 'fastify';
import { MANIFEST_MAX_FILES, UPLOAD_MANIFESTS } from '../../../core/uploads/upload-manifests.js';
import { bearer, principalOf } from '../auth.js';
import { errorResponses, Timestamp, Uuid } from '../schemas.js';
import type { RouteOptions } from './index.js';

/** A manifest of 20,000 files of long paths, as JSON (gzip on the wire keeps it far smaller). */
const BODY_LIMIT = 8 * 1024 * 1024;

const ManifestFile = {
  type: 'object',
  additionalProperties: false,
  required: ['path', 'sha256', 'size'],
  properties: {
    path: { type: 'string', minLength: 1, maxLength: 4096 },
    sha256: { type: 'string', pattern: '^[0-9a-f]{64}$' },
    size: { type: 'integer', minimum: 0 },
  },
} as const;

/** Upload manifests: the first step of an upload that sends only the files the server lacks. */
const uploadManifests: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const manifests = kernel.get(UPLOAD_MANIFESTS);
  app.addHook('onRequest', app.authenticate);
  // `Content-Encoding: gzip` request bodies, inflated within BODY_LIMIT; answers stay uncompressed.
  await app.register(compress, { global: false, requestEncodings: ['gzip'] });

  app.post<{ Body: { files: { path: string; sha256: string; size: number }[] } }>(
    '/upload-manifests',
    {
      bodyLimit: BODY_LIMIT,
      decompress: {},
      schema: {
        tags: ['Deployments'],
        summary: 'Send the manifest of a site, and learn which files to upload',
        description:
          'The first step of an upload that sends only what is new (what `hoist deploy` does). The body lists every ' +
          'file of the site: its path (relative, `/`-separated), the SHA-256 of its bytes (hex) and its size; it may ' +
          'be sent gzip-compressed (`Content-Encoding: gzip`). The answer names the hashes this account has not ' +
          'sent before (`missing`). Then POST a ZIP holding only those files, at their paths, to a Local-to-Live ' +
          'route with the text part `manifest_id` (the file part may be left out when nothing is missing): Hoist ' +
          "checks every file against the manifest (400 when a file's bytes do not match its hash, or a path is not " +
          'listed), assembles the whole site and deploys it like any ZIP, every archive check included. A manifest ' +
          'serves one upload within an hour: the first upload that names it spends it, whether it is then deployed ' +
          'or refused (a refused one needs a new manifest); another use, or one after the hour, → 410 gone (send a ' +
          'new manifest); a repeat of the upload that spent it, with its Idempotency-Key, gets its 202 again. An ' +
          "account's uploads are assembled one at a time on each API process (another one meanwhile → 429 " +
          'rate_limited with ' +
          'Retry-After, the manifest unspent). The files may add up to no more than the largest ZIP the account ' +
          "could upload: the server's largest upload (→ 413 payload_too_large) or the plan's `archive_bytes` when " +
          'lower (→ 403 plan_restricted), each naming it in `details.limit`. Files are kept per account: no account ' +
          'learns what another ' +
          "one sent. They are kept within the plan's limits: a file goes `kept_file_days` after the last manifest " +
          'or upload that used it, and an account keeps at most `kept_file_bytes` (the least recently used go ' +
          'first; a new file there is no room for is deployed but not kept): a file sent before may be `missing` ' +
          'again, never while a manifest that found it can be used. A path that leaves the site (absolute, `..`, ' +
          'backslash, control characters), is longer than 255 bytes a name or 1,024 in all, or is listed ' +
          `twice → 400; more than ${MANIFEST_MAX_FILES} files → 400; a body over ${BODY_LIMIT} bytes → 413. ` +
          "An account sends at most its plan's `upload_manifests_per_hour` manifests in any hour (every one counts, " +
          'valid or not); past it 429 rate_limited with Retry-After (and `details.limit`), and nothing is stored.',
        security: bearer,
        body: {
          type: 'object',
          additionalProperties: false,
          required: ['files'],
          properties: { files: { type: 'array', minItems: 1, maxItems: MANIFEST_MAX_FILES, items: ManifestFile } },
        },
        response: {
          201: {
            type: 'object',
            required: ['id', 'expires_at', 'missing', 'file_count', 'total_size'],
            properties: {
              id: Uuid,
              expires_at: Timestamp,
              missing: { type: 'array', items: { type: 'string' } },
              file_count: { type: 'integer' },
              total_size: { type: 'integer' },
            },
          },
          ...errorResponses(400, 401, 403, 413, 415, 429),
        },
      },
    },
    async (req, reply) => {
      const m = await manifests.create(principalOf(req).accountId, req.body.files);
      return reply.status(201).send({
        id: m.id,
        expires_at: m.expiresAt.toISOString(),
        missing: m.missing,
        file_count: m.fileCount,
        total_size: m.totalSize,
      });
    },
  );
};

export default uploadManifests;
