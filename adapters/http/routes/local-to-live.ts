import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { describeTransitions } from '../../../core/operations/state-machine.js';
import { invalid } from '../../../core/errors.js';
import { Project } from '../../../core/entities/project.js';
import { IDEMPOTENCY_SERVICE, requestHash, validateKey, type IdempotencyService } from '../../../core/idempotency/idempotency-service.js';
import { STORAGE, type Storage } from '../../../core/ports/storage.js';
import { CIPHER, type Cipher } from '../../../core/ports/cipher.js';
import { deleteEnvironmentOf } from '../../../core/environment/delete-environment.js';
import { ENVIRONMENT_SERVICE, type EnvironmentService } from '../../../core/environment/environment-service.js';
import { PROJECT_SERVICE, type ProjectService } from '../../../core/projects/project-service.js';
import { bearer, principalOf } from '../auth.js';
import { errorResponses } from '../schemas.js';
import { checkTransport, Queued, UploadIngest, type ParsedUpload, type Target } from '../upload-ingest.js';
import { uploadOptions } from '../upload-options.js';
import type { RouteOptions } from './index.js';

const description = (scope: string) =>
  `${scope} Multipart form data: the ZIP in the file part \`file\` (at most 95,000,000 bytes; the whole request at most 100,000,000), and text parts ` +
  '`name` (account-level only: creates or selects the project of that name), `visibility` (draft by default; only when the call creates the project), ' +
  '`root_directory`, `skip_build` (true|false), `runtime` (static|node), `framework` and `transport`, the spec\'s transport choice: ' +
  '`proxied_multipart` (this request, also the default when the part is absent) is accepted; `direct_storage_resumable` → 400 (details.field transport) ' +
  'pointing to POST /api/v1/upload-sessions, which prepares that transport; any other value → 400. ' +
  'Account-level, only when the call creates the project: `environment`, a JSON object of environment variables ' +
  '`{"NAME": "value", "OTHER": {"value": "...", "scope": "build|runtime|both"}}` (scope both by default; at most 64 KiB, larger sets go through the environment routes), ' +
  'validated like PUT /api/v1/projects/{projectID}/environment/{name} (400 naming the bad variable, 403 plan_restricted) before anything is created; ' +
  'given when the name selects an existing project → 400 (use the environment routes). ' +
  'Account-level, only when the call creates the project: `access_password`, the access password of a private project\'s site (8 to 200 characters, else 400; ' +
  'given when the name selects an existing project → 400: set it with PATCH /api/v1/projects/{projectID}/). The archive streams into storage, hashed and counted, never held in memory. ' +
  'Answers 202 with the parent operation (running, progress 5) and its three stages queued; poll GET /api/v1/operations/{id}. ' +
  'An `Idempotency-Key` header makes the call safe to repeat: the same key and request within 24 h return the first answer and start nothing; ' +
  'the same key with a different request → 422 idempotency_key_reused; while the first such request is still being answered → 409 conflict. A deployment of the same project still running → 409 deployment_in_progress ' +
  '(details.operation_id), checked before the plan\'s quotas (so never a 403 for it) and before the ZIP is read when the project is known by then: ' +
  'project-level at once; account-level when the `name` part (of an existing project) comes before the file part. ' +
  'Text parts that come before the file part are checked as they arrive, so a bad `transport` is refused before the ZIP is read too.\n\n' +
  describeTransitions();

const ALLOWED = {
  account: ['name', 'visibility', 'root_directory', 'skip_build', 'runtime', 'framework', 'transport', 'environment', 'access_password'],
  project: ['root_directory', 'skip_build', 'runtime', 'framework', 'transport'],
};

/** Local-to-Live: upload a ZIP and queue Analyze, Build, Deploy (account-level and project-level). */
const localToLive: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const storage = kernel.get<Storage>(STORAGE);
  const projects = kernel.get<ProjectService>(PROJECT_SERVICE);
  const idempotency = kernel.get<IdempotencyService>(IDEMPOTENCY_SERVICE);
  const environment = kernel.get<EnvironmentService>(ENVIRONMENT_SERVICE);
  const cipher = kernel.get<Cipher>(CIPHER);
  const ingest = new UploadIngest(kernel);

  app.addHook('onRequest', app.authenticate);
  await ingest.multipart(app);
  app.addHook('onRequest', async (req) => {
    const key = req.headers['idempotency-key'];
    if (key !== undefined) validateKey(String(key));
  });

  const answer = async (req: FastifyRequest, reply: FastifyReply, parsed: ParsedUpload, resolve: () => Promise<Target>, scope: string) => {
    const { accountId } = principalOf(req);
    const { upload } = parsed;
    try {
      const options = uploadOptions(parsed.fields);
      if (parsed.fields.transport !== undefined) checkTransport(parsed.fields.transport);
      const key = req.headers['idempotency-key'];
      // Secrets enter the request hash only as a keyed fingerprint; the transport, which can only be this one, not at all.
      const hashed = (k: string, v: string) => (k === 'environment' || k === 'access_password' ? `fingerprint:${cipher.fingerprint(v)}` : v);
      const given = Object.entries(parsed.fields).filter(([k]) => k !== 'transport');
      const fields = Object.fromEntries(given.sort(([a], [b]) => (a < b ? -1 : 1)).map(([k, v]) => [k, hashed(k, v)]));
      const hash = requestHash({ scope, fields, sha256: upload.sha256, size: upload.size });
      const result = await idempotency.run(accountId, typeof key === 'string' ? key : undefined, hash, () => ingest.start(accountId, upload, options, resolve));
      if (result.replayed) await storage.delete(upload.key).catch(() => {});
      if (result.replayed) reply.header('idempotent-replayed', 'true');
      return reply.status(result.status).send(result.body);
    } catch (err) {
      await storage.delete(upload.key).catch(() => {});
      throw err;
    }
  };

  const schema = (summary: string, scope: string, params?: object) => ({
    tags: ['Deployments'],
    summary,
    description: description(scope),
    security: bearer,
    consumes: ['multipart/form-data'],
    headers: { type: 'object', properties: { 'idempotency-key': { type: 'string', maxLength: 255 } } },
    ...(params ? { params } : {}),
    response: { 202: Queued, ...errorResponses(400, 401, 403, 404, 408, 409, 413, 422) },
  });

  app.post('/local-to-live', { schema: schema('Upload a ZIP and deploy it (creates or selects the project by name)', 'Account-level.') }, async (req, reply) => {
    const { accountId } = principalOf(req);
    // Parts before the file: a bad transport, or the name of a project whose chain still runs, is refused before the ZIP is read.
    const parsed = await ingest.parse(req, ALLOWED.account, undefined, async (name, value) => {
      if (name === 'transport') checkTransport(value);
      if (name === 'name' && value.trim()) {
        const project = await ingest.existing(accountId, value.trim());
        if (project) await ingest.assertIdle(req, accountId, project.id);
      }
    });
    let created: string | null = null;
    try {
      return await answer(req, reply, parsed, async () => {
        const name = parsed.fields.name?.trim();
        if (!name) throw invalid('name is required: the project to create or select', { field: 'name' });
        const given = parsed.fields.environment;
        const vars = given === undefined ? [] : await environment.parseNew(accountId, given);
        const target = await ingest.byName(accountId, name, parsed.fields.visibility, parsed.fields.access_password);
        if (!target.created && parsed.fields.access_password !== undefined) {
          throw invalid(`access_password is only accepted when this call creates the project; project "${name}" exists: set it with PATCH /api/v1/projects/${target.project.id}/`, { field: 'access_password' });
        }
        if (!target.created && given !== undefined) {
          throw invalid(`environment is only accepted when this call creates the project; project "${name}" exists: set its variables with PUT /api/v1/projects/${target.project.id}/environment/{name}`, { field: 'environment' });
        }
        if (target.created) {
          created = target.project.id;
          await environment.storeNew(target.project.id, vars);
        }
        return target;
      }, 'account');
    } catch (err) {
      // The project this call created is gone again (see UploadIngest.start), and so are its variables.
      const id = created as string | null;
      if (id) {
        await kernel.orm.em.fork().transactional(async (tx) => {
          await tx.nativeDelete(Project, { id, liveDeploymentId: null, activeOperationId: null });
          if (!(await tx.count(Project, { id }))) await deleteEnvironmentOf(tx, id);
        });
      }
      throw err;
    }
  });

  app.post<{ Params: { projectID: string } }>(
    '/projects/:projectID/local-to-live',
    { schema: schema('Upload a ZIP and deploy it to an existing project', 'Project-level.', { type: 'object', required: ['projectID'], properties: { projectID: { type: 'string' } } }) },
    async (req, reply) => {
      const { accountId } = principalOf(req);
      const project = await projects.get(accountId, req.params.projectID);
      // One chain per project, decided before the ZIP is read.
      await ingest.assertIdle(req, accountId, project.id);
      const parsed = await ingest.parse(req, ALLOWED.project, undefined, async (name, value) => {
        if (name === 'transport') checkTransport(value);
      });
      return answer(req, reply, parsed, async () => ({ project }), `project:${project.id}`);
    },
  );
};

export default localToLive;
