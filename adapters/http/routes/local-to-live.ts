import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { HoistConfig } from '../../../config/schema.js';
import { UPLOAD_DEPLOYMENTS, type UploadDeployment } from '../../../core/deployments/upload-deployments.js';
import { validateKey } from '../../../core/idempotency/idempotency-service.js';
import { UPLOAD_MANIFESTS } from '../../../core/uploads/upload-manifests.js';
import { describeTransitions } from '../../../core/operations/state-machine.js';
import { bearer, principalOf, startedByOf } from '../auth.js';
import { Queued, sendQueued } from '../queued-answer.js';
import { errorResponses } from '../schemas.js';
import { UploadIngest, type ParsedUpload } from '../upload-ingest.js';
import type { RouteOptions } from './index.js';

const description = (scope: string) =>
  `${scope} Multipart form data: the ZIP in the file part \`file\` (at most 95,000,000 bytes; ` +
  'the whole request at most 100,000,000), and text parts ' +
  '`name` (account-level only: creates or selects the project of that name), `visibility` (draft by default; only ' +
  'when the call creates the project), ' +
  "`root_directory`, `skip_build` (true|false), `clear_cache` (true|false: the account's build cache is " +
  'dropped before this build, which starts without one and leaves a new one), `runtime` (static|node), ' +
  '`framework`, `manifest_id` (the id ' +
  'POST /api/v1/upload-manifests answered: the file part then holds only the files it named missing, and may be ' +
  'left out when none were; a manifest serves one upload: the first that names it spends it, whether it is then ' +
  'deployed or refused, and another use → 410 gone (send a new manifest), except a repeat of that request with its ' +
  'Idempotency-Key once it answered 202, which gets the same answer; while another upload of the account is being ' +
  'assembled from a manifest → 429 rate_limited with Retry-After, the manifest unspent), ' +
  '`target` (production, the default, or preview: the release goes to its own host ' +
  "`<slug>--<short id>.<apps domain>` and the live release is not touched; private behind the project's gate unless " +
  "the project's preview_visibility is public; it expires after the plan's preview_ttl_hours, or when the " +
  "account's previews pass the plan's previews_per_account (the oldest go first); the same ZIP uploaded " +
  "again as a preview of the project answers 202 with the preview already up) and `transport`, the spec's " +
  'transport choice: ' +
  '`proxied_multipart` (this request, also the default when the part is absent) is accepted; ' +
  '`direct_storage_resumable` → 400 (details.field transport) ' +
  'pointing to POST /api/v1/upload-sessions, which prepares that transport; any other value → 400. ' +
  'Account-level, only when the call creates the project: `environment`, a JSON object of environment variables ' +
  '`{"NAME": "value", "OTHER": {"value": "...", "scope": "build|runtime|both"}}` (scope both by default; at most 64 ' +
  'KiB, larger sets go through the environment routes), ' +
  'validated like PUT /api/v1/projects/{projectID}/environment/{name} (400 naming the bad variable, 403 ' +
  'plan_restricted) before anything is created; ' +
  'given when the name selects an existing project → 400 (use the environment routes). ' +
  'Account-level, only when the call creates the project: `access_password`, the access password of a private ' +
  "project's site (8 to 200 characters, else 400; " +
  'given when the name selects an existing project → 400: set it with PATCH /api/v1/projects/{projectID}/). The ' +
  'archive streams into storage, hashed and counted, never held in memory. ' +
  'Answers 202 with the parent operation (running, progress 5) and its three stages queued; poll GET ' +
  '/api/v1/operations/{id}. ' +
  'An `Idempotency-Key` header makes the call safe to repeat: the same key and request within 24 h return the first ' +
  'answer and start nothing; ' +
  'the same key with a different request → 422 idempotency_key_reused; while the first such request is still being ' +
  'answered → 409 conflict. A deployment of the same project still running → 409 deployment_in_progress ' +
  "(details.operation_id), checked before the plan's quotas (so never a 403 for it) and before the ZIP is read when " +
  'the project is known by then: ' +
  'project-level at once; account-level when the `name` part (of an existing project) comes before the file part. ' +
  'Text parts that come before the file part are checked as they arrive, so a bad `transport` is refused before the ' +
  'ZIP is read too. ' +
  "A static site's `_redirects` and `_headers` files (Netlify's and Cloudflare Pages' formats, at the root of what " +
  'it serves) give it redirects, rewrites (`/* /index.html 200`: a single-page app) and response headers; a rule ' +
  'Hoist cannot follow fails Deploy with deploy_redirects_invalid or deploy_headers_invalid naming its line.\n\n' +
  describeTransitions();

/** The upload parts a project-level call takes; an account-level one takes these and those naming the project. */
const PROJECT_PARTS = [
  'root_directory',
  'skip_build',
  'clear_cache',
  'runtime',
  'framework',
  'transport',
  'manifest_id',
  'target',
];
const ALLOWED = {
  account: ['name', 'visibility', 'environment', 'access_password', ...PROJECT_PARTS],
  project: PROJECT_PARTS,
};

/** The Idempotency-Key of a request, if it has one. */
const keyOf = (req: FastifyRequest) => {
  const key = req.headers['idempotency-key'];
  return typeof key === 'string' ? key : undefined;
};

/** Local-to-Live: upload a ZIP and queue Analyze, Build, Deploy (account-level and project-level). */
const localToLive: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const config = kernel.config as HoistConfig;
  const uploads = kernel.get(UPLOAD_DEPLOYMENTS);
  const manifests = kernel.get(UPLOAD_MANIFESTS);
  const ingest = new UploadIngest(kernel);
  /**
   * The upload a request brought: its ZIP, or with `manifest_id` the site assembled from the manifest (or, for a
   * repeat of the request that spent the manifest, the archive whose answer is replayed).
   */
  const uploadOf = async (accountId: string, parsed: ParsedUpload, idempotencyKey?: string) => {
    const { manifest_id: manifestId, ...options } = parsed.fields;
    if (manifestId === undefined) return { upload: parsed.upload!, options };
    const repeat =
      idempotencyKey === undefined
        ? null
        : await manifests.repeatOf(accountId, manifestId, idempotencyKey, parsed.upload);
    const upload = repeat ?? (await manifests.assemble(accountId, manifestId, parsed.upload));
    return { upload, options, manifestId };
  };

  app.addHook('onRequest', app.authenticate);
  await ingest.multipart(app);
  app.addHook('onRequest', async (req) => {
    const key = req.headers['idempotency-key'];
    if (key !== undefined) validateKey(String(key));
  });

  const schema = (summary: string, scope: string, params?: object) => ({
    tags: ['Deployments'],
    summary,
    description: description(scope),
    security: bearer,
    consumes: ['multipart/form-data'],
    headers: { type: 'object', properties: { 'idempotency-key': { type: 'string', maxLength: 255 } } },
    ...(params ? { params } : {}),
    response: { 202: Queued, ...errorResponses(400, 401, 403, 404, 408, 409, 410, 413, 422, 429) },
  });

  /**
   * Deploys the upload (recording who sent it) and answers 202. The answer of an upload that spent a manifest under an
   * Idempotency-Key is kept with the manifest, for a repeat of the request (a retry whose first answer was lost).
   */
  const deploy = async (
    req: FastifyRequest,
    reply: FastifyReply,
    input: Omit<UploadDeployment, 'startedBy'>,
    manifestId?: string,
  ) => {
    const started = await uploads.deploy({ ...input, startedBy: startedByOf(req) });
    const { accountId, idempotencyKey, upload } = input;
    if (manifestId !== undefined && idempotencyKey !== undefined && !started.replayed)
      await manifests.answered(accountId, manifestId, idempotencyKey, upload).catch((err) => {
        req.log.warn({ err, manifestId }, 'The answer of a manifest upload could not be kept; a repeat will get 410');
      });
    return sendQueued(reply, config, 'local_to_live_queued', started);
  };

  app.post(
    '/local-to-live',
    { schema: schema('Upload a ZIP and deploy it (creates or selects the project by name)', 'Account-level.') },
    async (req, reply) => {
      const { accountId } = principalOf(req);
      const idempotencyKey = keyOf(req);
      // A name part before the file, of a project whose chain still runs, is refused before the ZIP is read.
      const parsed = await ingest.parse(req, ALLOWED.account, undefined, async (name, value) => {
        if (name === 'name') await uploads.assertCanStart(accountId, { name: value }, idempotencyKey);
      });
      const { upload, options: fields, manifestId } = await uploadOf(accountId, parsed, idempotencyKey);
      const target = {
        name: fields.name ?? '',
        visibility: fields.visibility,
        accessPassword: fields.access_password,
        environment: fields.environment,
      };
      return deploy(req, reply, { accountId, target, upload, options: fields, idempotencyKey }, manifestId);
    },
  );

  app.post<{ Params: { projectID: string } }>(
    '/projects/:projectID/local-to-live',
    {
      schema: schema('Upload a ZIP and deploy it to an existing project', 'Project-level.', {
        type: 'object',
        required: ['projectID'],
        properties: { projectID: { type: 'string' } },
      }),
    },
    async (req, reply) => {
      const { accountId } = principalOf(req);
      const idempotencyKey = keyOf(req);
      const target = { projectId: req.params.projectID };
      // One chain per project, decided before the ZIP is read.
      await uploads.assertCanStart(accountId, target, idempotencyKey);
      const parsed = await ingest.parse(req, ALLOWED.project);
      const { upload, options: fields, manifestId } = await uploadOf(accountId, parsed, idempotencyKey);
      return deploy(req, reply, { accountId, target, upload, options: fields, idempotencyKey }, manifestId);
    },
  );
};

export default localToLive;
