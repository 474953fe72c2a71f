import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingMessage } from 'node:http';
import { PassThrough, type Readable } from 'node:stream';
import type { HoistConfig } from '../../../config/schema.js';
import type { UploadedArchive } from '../../../core/deployments/deployment-service.js';
import { UPLOAD_DEPLOYMENTS, type UploadTarget } from '../../../core/deployments/upload-deployments.js';
import type { UploadSession } from '../../../core/entities/upload-session.js';
import { HoistError, invalid } from '../../../core/errors.js';
import {
  MAX_UPLOAD_PIECES,
  modeOf,
  UPLOAD_SESSION_SERVICE,
  type UploadMode,
  type UploadSessionService,
} from '../../../core/uploads/upload-session-service.js';
import { errorResponses } from '../schemas.js';
import { slowBodyError } from '../slow-clients.js';
import { Queued, sendQueued } from '../queued-answer.js';
import { closeUnread, UploadIngest } from '../upload-ingest.js';
import type { RouteOptions } from './index.js';

const TUS_VERSION = '1.0.0';
const Sha256 = { type: 'string', pattern: '^[0-9a-fA-F]{64}$' } as const;
/** The JSON that completes a direct_storage_resumable session whose parts went straight to storage. */
const Complete = {
  type: 'object',
  required: ['parts'],
  additionalProperties: false,
  properties: {
    parts: {
      type: 'array',
      minItems: 1,
      maxItems: 10_000,
      description: 'Every part, in order from part_number 1, with the ETag header its PUT answered (quotes optional).',
      items: {
        type: 'object',
        required: ['part_number', 'etag'],
        additionalProperties: false,
        properties: {
          part_number: { type: 'integer', minimum: 1, maximum: 10_000 },
          etag: { type: 'string', minLength: 1, maxLength: 128 },
        },
      },
    },
    sha256: {
      ...Sha256,
      description:
        "The ZIP's SHA-256 (hex), optional: when given, the server checks it against the bytes storage holds.",
    },
  },
} as const;
interface CompleteBody {
  parts: { part_number: number; etag: string }[];
  sha256?: string;
}
const Params = {
  type: 'object',
  required: ['token'],
  properties: { token: { type: 'string', description: 'The secret token of upload_url.' } },
} as const;
type Token = { Params: { token: string } };

const common =
  'No bearer token: upload_url is the credential (an Authorization header is ignored and never forwarded). ' +
  'An unknown token → 404; a used or expired one → 410 (the same answer for both).';

const tusDescription =
  'tus 1.0.0 core (https://tus.io/protocols/resumable-upload) for direct_storage_resumable sessions; the session is ' +
  'the tus upload, ' +
  'its declared size the Upload-Length (at most 100,000,000 bytes). Every answer carries Tus-Resumable: 1.0.0. ' +
  'HEAD upload_url → 200 with Upload-Offset (the bytes stored so far: resume from there), Upload-Length, ' +
  'Upload-Expires and Cache-Control: no-store. ' +
  'PATCH upload_url with Content-Type: application/offset+octet-stream (else 415), Upload-Offset: <the current ' +
  'offset> (missing → 400; ' +
  'not the current offset → 409 conflict with the right one in details.offset and the Upload-Offset header), ' +
  'Tus-Resumable: 1.0.0 (another version → 412) ' +
  'and the next bytes as the body, all of the rest or any part of it. A body that would pass Upload-Length → 413 ' +
  '(before it is read when Content-Length says so); ' +
  'the piece is then not stored. An upload is stored in at most ' +
  `${MAX_UPLOAD_PIECES.toLocaleString('en-US')} pieces (PATCHes; send a few MiB each): the last of them must ` +
  'complete it, else 409 conflict (details.limit, and details.remaining: the bytes it must carry), before the body ' +
  'is read when Content-Length says so, and nothing of it is kept. ' +
  'Bytes that arrive before a connection drops are kept: HEAD gives the offset to go ' +
  'on from; so are those of a body cut for ' +
  'coming slower than the minimum rate (408 request_timeout, with their Upload-Offset). ' +
  'A PATCH that leaves the upload unfinished → 204 with the new Upload-Offset; the PATCH that completes it starts ' +
  'the deployment and → 202 with the ' +
  'operation (as Local-to-Live), after which the URL is spent (410), also when the deployment is refused then ' +
  '(403, 409: the upload is discarded).';

/**
 * The upload to an upload session's URL, without a bearer token: a multipart POST
 * (proxied_multipart), or tus 1.0.0 HEAD and PATCH (direct_storage_resumable).
 */
const uploadSessionUploads: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const sessions = kernel.get<UploadSessionService>(UPLOAD_SESSION_SERVICE);
  const uploads = kernel.get(UPLOAD_DEPLOYMENTS);
  const config = kernel.config as HoistConfig;
  const ingest = new UploadIngest(kernel);
  const opened = new WeakMap<FastifyRequest, UploadSession>();

  /** onRequest hook: opens the session of the URL's token (404 / 410) before anything else is looked at. */
  const open =
    (...modes: UploadMode[]) =>
    async (req: FastifyRequest) => {
      opened.set(req, await sessions.open((req.params as { token: string }).token, ...modes));
    };
  const sessionOf = (req: FastifyRequest) => opened.get(req)!;
  /** The project a session's upload deploys to: its project, or one by name (created when missing). */
  const targetOf = (session: UploadSession): UploadTarget =>
    session.projectId
      ? { projectId: session.projectId }
      : { name: session.name!, visibility: session.visibility ?? undefined };

  /** Starts the session's deployment for its stored ZIP and answers 202; a refusal deletes the ZIP. */
  const deploy = async (session: UploadSession, upload: UploadedArchive, reply: FastifyReply) => {
    const { accountId, options } = session;
    const started = await uploads.deploy({ accountId, target: targetOf(session), upload, options, session });
    return sendQueued(reply, config, 'local_to_live_queued', started);
  };

  await app.register(async (proxied: FastifyInstance) => {
    proxied.addHook('onRequest', open('multipart', 'parts'));
    await ingest.multipart(proxied, (req) => modeOf(sessionOf(req)) === 'multipart');
    proxied.post<Token>(
      '/upload-sessions/:token/upload',
      {
        schema: {
          tags: ['Deployments'],
          summary:
            'Send the ZIP to an upload session (proxied_multipart), or complete one whose parts went to storage ' +
            '(direct_storage_resumable on S3)',
          description:
            `${common} proxied_multipart: multipart form data with the ZIP in the file part \`file\` ` +
            '(at most 95,000,000 bytes; the whole request at most 100,000,000) and no other part: ' +
            "the project and the upload options are the session's. A request refused before its body is read (404, " +
            '410, 400 for a body that is not ' +
            'multipart/form-data, 413 for a Content-Length over the envelope, 409 deployment_in_progress while a ' +
            'deployment of the project runs) ' +
            'leaves the URL as it was; any other spends it, whatever its outcome. ' +
            'Answers as Local-to-Live: 202 with the project and the parent operation (running, progress 5). ' +
            'direct_storage_resumable on S3 storage (the session answer has parts): after PUTting every part to its ' +
            'URL in parts.urls, POST here ' +
            'application/json {"parts": [{"part_number": 1, "etag": "<the ETag header of its PUT>"}, ...], "sha256": ' +
            '"<optional>"}. ' +
            'Each part must have reached storage with that ETag and together they must hold the declared size: else ' +
            '400 (details.part_number names ' +
            'the part missing or whose ETag differs) or 413 past the declared size, and the session stays as it was, ' +
            'to be fixed and completed again. ' +
            'Then the URL is spent, the parts are joined in storage (no byte passes through Hoist), the server reads ' +
            'the ZIP once for its SHA-256 ' +
            '(a sha256 given that differs → 400, the ZIP discarded) and answers 202 as above. For a ' +
            'direct_storage_resumable session on local storage → 400 (use tus: HEAD and PATCH).',
          security: [],
          consumes: ['multipart/form-data', 'application/json'],
          body: { content: { 'application/json': { schema: Complete } } },
          params: Params,
          response: { 202: Queued, ...errorResponses(400, 403, 404, 408, 409, 410, 413) },
        },
      },
      async (req, reply) => {
        const session = sessionOf(req);
        if (modeOf(session) === 'parts') {
          const body = req.body as CompleteBody | undefined;
          if (!/^application\/json\s*(;|$)/i.test(req.headers['content-type'] ?? '') || !body) {
            throw invalid(
              'Send application/json with the parts and their ETags: {"parts": [{"part_number": 1, "etag": "..."}]}',
              { field: 'content-type' },
            );
          }
          const parts = body.parts.map((p) => ({ number: p.part_number, etag: p.etag }));
          const stored = await sessions.completeParts(session, parts, body.sha256);
          return deploy(session, { ...stored, filename: session.filename }, reply);
        }
        // One chain per project: refused before the URL is spent or the ZIP read, so it can be used once that one ends.
        await uploads.assertCanStart(session.accountId, targetOf(session));
        await sessions.claim(session);
        // No manifest_id is allowed here, so the ZIP is there.
        const upload = (await ingest.parse(req, [], session.storageKey)).upload!;
        return deploy(session, { ...upload, filename: session.filename ?? upload.filename }, reply);
      },
    );
  });

  await app.register(async (tus: FastifyInstance) => {
    // The body is streamed from the request by the handler, whatever its type (checked below).
    tus.removeAllContentTypeParsers();
    tus.addContentTypeParser('*', (_req, _payload, done) => done(null));
    tus.addHook('onRequest', async (_req, reply) => {
      reply.header('tus-resumable', TUS_VERSION).header('tus-version', TUS_VERSION);
    });
    tus.addHook('onRequest', open('tus'));
    tus.addHook('onSend', closeUnread);

    tus.head<Token>(
      '/upload-sessions/:token/upload',
      {
        // @fastify/swagger leaves HEAD routes out unless told.
        config: { swagger: { exposeHeadRoute: true } },
        schema: {
          tags: ['Deployments'],
          summary: 'Offset of a resumable upload (tus HEAD)',
          description: `${common} ${tusDescription}`,
          security: [],
          params: Params,
          response: {
            200: { description: 'Upload-Offset, Upload-Length and Upload-Expires headers; no body.', type: 'null' },
            ...errorResponses(400, 404, 410),
          },
        },
      },
      async (req, reply) => {
        const session = sessionOf(req);
        return reply
          .header('upload-offset', String(session.offset))
          .header('upload-length', String(session.declaredSize))
          .header('upload-expires', session.expiresAt.toUTCString())
          .header('cache-control', 'no-store')
          .status(200)
          .send();
      },
    );

    tus.patch<Token>(
      '/upload-sessions/:token/upload',
      {
        onRequest: async (req) => {
          const version = req.headers['tus-resumable'];
          if (version !== undefined && version !== TUS_VERSION)
            throw new HoistError('precondition_failed', `Only tus ${TUS_VERSION} is supported`, {
              field: 'Tus-Resumable',
            });
          if (!/^application\/offset\+octet-stream\s*(;|$)/i.test(req.headers['content-type'] ?? '')) {
            throw new HoistError(
              'unsupported_media_type',
              'Send the bytes with Content-Type: application/offset+octet-stream',
              { field: 'content-type' },
            );
          }
          if (!/^\d{1,15}$/.test(String(req.headers['upload-offset'] ?? '')))
            throw invalid('Upload-Offset (the byte the body starts at) is required', { field: 'Upload-Offset' });
        },
        schema: {
          tags: ['Deployments'],
          summary: 'Send bytes of a resumable upload (tus PATCH)',
          description: `${common} ${tusDescription}`,
          security: [],
          consumes: ['application/offset+octet-stream'],
          params: Params,
          headers: {
            type: 'object',
            properties: {
              'upload-offset': {
                type: 'string',
                description: 'The byte this body starts at: the current offset (HEAD).',
              },
              'tus-resumable': { type: 'string', description: '1.0.0' },
            },
          },
          response: {
            202: Queued,
            204: {
              description: 'Stored; the upload is not complete yet. Upload-Offset holds the new offset.',
              type: 'null',
            },
            ...errorResponses(400, 403, 404, 408, 409, 410, 412, 413, 415),
          },
        },
      },
      async (req, reply) => {
        const session = sessionOf(req);
        const length = req.headers['content-length'] === undefined ? undefined : Number(req.headers['content-length']);
        const { complete } = await sessions
          .append(session, Number(req.headers['upload-offset']), keepArrived(req.raw), length)
          .catch((err) => {
            if (err instanceof HoistError && typeof err.details.offset === 'number')
              reply.header('upload-offset', String(err.details.offset));
            throw err;
          });
        reply.header('upload-offset', String(session.offset));
        // A body cut for coming too slowly: its bytes are kept (Upload-Offset says where to go on), the answer is 408.
        const slow = slowBodyError(req.raw);
        if (slow && !complete) throw slow;
        if (!complete) return reply.status(204).send();
        const stored = await sessions.assemble(session);
        return deploy(session, { ...stored, filename: session.filename }, reply);
      },
    );
  });
};

/** The request body, ended (not failed) where a dropped connection cuts it, so the bytes that arrived are kept. */
function keepArrived(req: IncomingMessage): Readable {
  const body = new PassThrough();
  const cut = () => {
    if (!req.complete && !body.writableEnded) body.end();
  };
  req.on('error', cut).on('close', cut);
  return req.pipe(body);
}

export default uploadSessionUploads;
