import { createHash, randomUUID } from 'node:crypto';
import { gzipSync } from 'node:zlib';
import createClient, { type Client } from 'openapi-fetch';
import { atMost } from '../core/at-most.js';
import { apiErrorOf, HoistApiError, HoistGuidanceError } from './errors.js';
import { followOperation, type OperationEvent } from './operation-stream.js';
import { isTerminal, pollUntilTerminal, type PollOptions } from './poll.js';
import { sendWithRetries, type RetryOptions } from './retrying-fetch.js';
import type { paths } from './schema.js';

type Method = 'get' | 'post' | 'put' | 'patch' | 'delete';
/** The JSON body of the `status` answer of `method path`, from the generated types. */
export type Answer<P extends keyof paths, M extends Method, S extends number> = paths[P][M] extends {
  responses: { [K in S]: { content: { 'application/json': infer B } } };
}
  ? B
  : never;

export type Operation = Answer<'/api/v1/operations/{operationID}', 'get', 200>;
export type OperationPage = Answer<'/api/v1/operations', 'get', 200>;
/** The filters and page of GET /api/v1/operations. */
export type OperationQuery = NonNullable<paths['/api/v1/operations']['get']['parameters']['query']>;
export type LoginResult = Answer<'/api/v1/auth/login', 'post', 200>;
export type Me = Answer<'/api/v1/me', 'get', 200>;
export type Entitlements = Answer<'/api/v1/billing/entitlements', 'get', 200>;
export type Project = Answer<'/api/v1/projects/', 'get', 200>['projects'][number];
export type Release = Answer<'/api/v1/projects/{projectID}/releases', 'get', 200>['releases'][number];
export type EnvironmentVariable = Answer<'/api/v1/projects/{projectID}/environment', 'get', 200>['environment'][number];
/** Which deployments a variable's value is for. */
export type EnvironmentTarget = EnvironmentVariable['target'];
export type Webhook = Answer<'/api/v1/projects/{projectID}/webhooks', 'get', 200>['webhooks'][number];
/** A webhook as made: with its signing secret (whsec_...), which no other answer shows. */
export type NewWebhook = Answer<'/api/v1/projects/{projectID}/webhooks', 'post', 201>;
export type WebhookDelivery = Answer<
  '/api/v1/projects/{projectID}/webhooks/{webhookID}/deliveries',
  'get',
  200
>['deliveries'][number];
export type WebhookEvent = Webhook['events'][number];
// Keyed by the schema's events, so a missing or an extra one fails to compile.
const EVENTS: Record<WebhookEvent, true> = {
  'deployment.started': true,
  'deployment.succeeded': true,
  'deployment.failed': true,
  'deployment.canceled': true,
};
/** The events a webhook may receive (when it is added with none named: those of a deployment that ends). */
export const WEBHOOK_EVENTS = Object.keys(EVENTS) as WebhookEvent[];
export type DeployHook = Answer<'/api/v1/projects/{projectID}/deploy-hooks', 'get', 200>['deploy_hooks'][number];
/** A deploy hook as made: with its URL (the credential), which no other answer shows. */
export type NewDeployHook = Answer<'/api/v1/projects/{projectID}/deploy-hooks', 'post', 201>;
export type Member = Answer<'/api/v1/account/members', 'get', 200>['members'][number];
/** What a member may do: owner or member. */
export type MemberRole = Member['role'];
export type AgentToken = Answer<'/api/v1/auth/agent-tokens', 'get', 200>['agent_tokens'][number];
export type CreatedAgentToken = Answer<'/api/v1/auth/agent-tokens', 'post', 201>;
export type Usage = Answer<'/api/v1/projects/{projectID}/usage', 'get', 200>;
/** A custom domain of a project: its state, what is wrong (message) and the DNS records to create. */
export type Domain = Answer<'/api/v1/projects/{projectID}/domains/{domainID}', 'get', 200>;
export type DeletionAnswer = Answer<'/api/v1/projects/{projectID}/', 'delete', 202>;
export type UsageQuery = NonNullable<paths['/api/v1/projects/{projectID}/usage']['get']['parameters']['query']>;
export type PromoteAnswer = Answer<'/api/v1/projects/{projectID}/releases/{releaseID}/promote', 'post', 202>;
export type LocalToLiveAnswer = Answer<'/api/v1/local-to-live', 'post', 202>;
export type UploadSession = Answer<'/api/v1/upload-sessions', 'post', 201>;
/** The answer to a manifest: its id, and the hashes to send. */
export interface UploadManifest {
  id: string;
  missing: string[];
  file_count: number;
  total_size: number;
}
export type UploadSessionRequest = NonNullable<
  paths['/api/v1/upload-sessions']['post']['requestBody']
>['content']['application/json'];

/**
 * The writes whose route honours an Idempotency-Key (a test checks this list against the OpenAPI
 * document): the client gives each call one key of its own, so its retries are safe.
 */
export const IDEMPOTENT_WRITES = [
  'POST /api/v1/local-to-live',
  'POST /api/v1/projects/{projectID}/local-to-live',
  'POST /api/v1/projects/{projectID}/builds/{buildID}/retry',
  'POST /api/v1/projects/{projectID}/deployments/{deploymentID}/retry',
  'POST /api/v1/projects/{projectID}/releases/{releaseID}/promote',
] as const;

/** The largest archive any upload path takes (the resumable transport's maximum, per the spec). */
export const MAX_ARCHIVE_BYTES = 100_000_000;

export interface HoistClientOptions extends RetryOptions {
  /** Where the API answers, e.g. http://localhost:3000 (no /api/v1). */
  baseUrl: string;
  /** REST bearer token from login. */
  token?: string;
}

/** Options of the upload calls: progress of the bytes sent, and the archive's file name. */
export interface UploadOptions {
  filename?: string;
  onProgress?: (sent: number, total: number) => void;
}

/** Parts of an upload session sent to storage at once. */
const PARALLEL_PARTS = 4;

/**
 * A typed client of the Hoist REST API. `api` reaches every route with types generated from the
 * OpenAPI document; the methods wrap the calls a deployment needs. Reads and writes with an
 * Idempotency-Key are retried on network errors, 429 and 502–504 with bounded, jittered backoff;
 * error answers throw HoistApiError.
 */
export class HoistClient {
  readonly api: Client<paths>;
  readonly baseUrl: string;
  private token: string | undefined;

  constructor(private readonly options: HoistClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.token = options.token;
    this.api = createClient<paths>({ baseUrl: this.baseUrl, fetch: (req) => this.send(() => req.clone()) });
    this.api.use({
      onRequest: ({ request, schemaPath }) => {
        if (this.token && !request.headers.has('authorization'))
          request.headers.set('authorization', `Bearer ${this.token}`);
        if (
          (IDEMPOTENT_WRITES as readonly string[]).includes(`${request.method} ${schemaPath}`) &&
          !request.headers.has('idempotency-key')
        ) {
          request.headers.set('idempotency-key', randomUUID());
        }
        return request;
      },
    });
  }

  /** Sets the bearer token later calls send. */
  useToken(token: string | undefined): void {
    this.token = token;
  }

  private send(make: () => Request): Promise<Response> {
    return sendWithRetries(make, this.options);
  }

  /** The data of an openapi-fetch result, or its HoistApiError. */
  private ok<T>(result: { data?: T; error?: unknown; response: Response }): T {
    if (result.response.ok) return result.data as T;
    throw new HoistApiError(result.response.status, result.error);
  }

  /** Exchanges e-mail and password for a token, and uses it from then on. */
  async login(email: string, password: string): Promise<LoginResult> {
    const result = this.ok(await this.api.POST('/api/v1/auth/login', { body: { email, password } }));
    this.token = result.token;
    return result;
  }

  /** Revokes the session of the current token. */
  async logout(): Promise<void> {
    this.ok(await this.api.POST('/api/v1/auth/logout'));
  }

  async me(): Promise<Me> {
    return this.ok(await this.api.GET('/api/v1/me'));
  }

  async entitlements(): Promise<Entitlements> {
    return this.ok(await this.api.GET('/api/v1/billing/entitlements'));
  }

  /** Every project of the account, newest first (follows next_cursor to the end). */
  async projects(): Promise<Project[]> {
    const all: Project[] = [];
    let cursor: string | undefined;
    do {
      const page = this.ok(await this.api.GET('/api/v1/projects/', { params: { query: { limit: 100, cursor } } }));
      all.push(...page.projects);
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    return all;
  }

  /** Every release of a project, newest first (follows next_cursor to the end). */
  async releases(projectId: string): Promise<Release[]> {
    const all: Release[] = [];
    let cursor: string | undefined;
    do {
      const page = this.ok(
        await this.api.GET('/api/v1/projects/{projectID}/releases', {
          params: { path: { projectID: projectId }, query: { limit: 100, cursor } },
        }),
      );
      all.push(...page.releases);
      cursor = page.next_cursor ?? undefined;
    } while (cursor);
    return all;
  }

  /**
   * Promotes a release: makes it live again with no build (instant rollback). Resolves to the answer
   * (202, the promote operation; for the live release, the operation that made it live).
   */
  async promote(projectId: string, releaseId: string): Promise<PromoteAnswer> {
    return this.ok(
      await this.api.POST('/api/v1/projects/{projectID}/releases/{releaseID}/promote', {
        params: { path: { projectID: projectId, releaseID: releaseId } },
      }),
    );
  }

  async environment(projectId: string): Promise<EnvironmentVariable[]> {
    return this.ok(
      await this.api.GET('/api/v1/projects/{projectID}/environment', { params: { path: { projectID: projectId } } }),
    ).environment;
  }

  /** Creates or replaces a variable's value for a target (all when not given); the answer never holds the value. */
  async setEnvironment(
    projectId: string,
    name: string,
    value: string,
    scope?: 'build' | 'runtime' | 'both',
    target?: EnvironmentTarget,
  ): Promise<EnvironmentVariable> {
    return this.ok(
      await this.api.PUT('/api/v1/projects/{projectID}/environment/{name}', {
        params: { path: { projectID: projectId, name } },
        body: { value, scope, target },
      }),
    );
  }

  /** Removes every value of a variable, or only its value for `target`. */
  async removeEnvironment(projectId: string, name: string, target?: EnvironmentTarget): Promise<void> {
    this.ok(
      await this.api.DELETE('/api/v1/projects/{projectID}/environment/{name}', {
        params: { path: { projectID: projectId, name }, query: target ? { target } : {} },
      }),
    );
  }

  /** The project's webhooks, oldest first, each with its last delivery (never a secret). */
  async webhooks(projectId: string): Promise<Webhook[]> {
    return this.ok(
      await this.api.GET('/api/v1/projects/{projectID}/webhooks', { params: { path: { projectID: projectId } } }),
    ).webhooks;
  }

  /**
   * Adds a webhook posting `events` (all of them when left out) to `url`. The answer holds its signing secret, shown
   * this once. Not retried: the route takes no Idempotency-Key, and a repeat would add a second webhook.
   */
  async addWebhook(projectId: string, url: string, events?: WebhookEvent[]): Promise<NewWebhook> {
    return this.ok(
      await this.api.POST('/api/v1/projects/{projectID}/webhooks', {
        params: { path: { projectID: projectId } },
        body: { url, events },
      }),
    );
  }

  /** Removes a webhook and its deliveries. */
  async removeWebhook(projectId: string, webhookId: string): Promise<void> {
    this.ok(
      await this.api.DELETE('/api/v1/projects/{projectID}/webhooks/{webhookID}', {
        params: { path: { projectID: projectId, webhookID: webhookId } },
      }),
    );
  }

  /** Queues a `ping` delivery to the webhook; resolves to it, pending (webhookDeliveries tells how it went). */
  async pingWebhook(projectId: string, webhookId: string): Promise<WebhookDelivery> {
    return this.ok(
      await this.api.POST('/api/v1/projects/{projectID}/webhooks/{webhookID}/ping', {
        params: { path: { projectID: projectId, webhookID: webhookId } },
      }),
    );
  }

  /** The webhook's deliveries of the last 30 days, newest first: at most `limit` (1 to 100; the API's default 20). */
  async webhookDeliveries(projectId: string, webhookId: string, limit?: number): Promise<WebhookDelivery[]> {
    return this.ok(
      await this.api.GET('/api/v1/projects/{projectID}/webhooks/{webhookID}/deliveries', {
        params: { path: { projectID: projectId, webhookID: webhookId }, query: { limit } },
      }),
    ).deliveries;
  }

  /** The project's deploy hooks, oldest first, each with when it was last used (never a URL). */
  async deployHooks(projectId: string): Promise<DeployHook[]> {
    return this.ok(
      await this.api.GET('/api/v1/projects/{projectID}/deploy-hooks', { params: { path: { projectID: projectId } } }),
    ).deploy_hooks;
  }

  /**
   * Adds a deploy hook `name`. The answer holds its URL, the credential a POST to which builds and deploys the live
   * version, shown this once. Not retried: the route takes no Idempotency-Key, and a repeat would add a second hook.
   */
  async addDeployHook(projectId: string, name: string): Promise<NewDeployHook> {
    return this.ok(
      await this.api.POST('/api/v1/projects/{projectID}/deploy-hooks', {
        params: { path: { projectID: projectId } },
        body: { name },
      }),
    );
  }

  /** Removes a deploy hook: its URL answers 404 from then on. */
  async removeDeployHook(projectId: string, hookId: string): Promise<void> {
    this.ok(
      await this.api.DELETE('/api/v1/projects/{projectID}/deploy-hooks/{hookID}', {
        params: { path: { projectID: projectId, hookID: hookId } },
      }),
    );
  }

  /**
   * Queues the deletion of a project: it leaves the API at once and its teardown runs as the `delete_project`
   * operation the answer names (wait for it with waitForOperation).
   */
  async deleteProject(projectId: string): Promise<DeletionAnswer> {
    return this.ok(
      await this.api.DELETE('/api/v1/projects/{projectID}/', { params: { path: { projectID: projectId } } }),
    );
  }

  /** The project's custom domains, oldest first, each with its state and the DNS records to create. */
  async domains(projectId: string): Promise<Domain[]> {
    return this.ok(
      await this.api.GET('/api/v1/projects/{projectID}/domains', { params: { path: { projectID: projectId } } }),
    ).domains;
  }

  /** Adds a custom domain (a subdomain), pending until its DNS records are found; the answer names them. */
  async addDomain(projectId: string, hostname: string): Promise<Domain> {
    return this.ok(
      await this.api.POST('/api/v1/projects/{projectID}/domains', {
        params: { path: { projectID: projectId } },
        body: { hostname },
      }),
    );
  }

  /** Looks the domain's DNS records up now; resolves to the domain in its new state. */
  async verifyDomain(projectId: string, domainId: string): Promise<Domain> {
    return this.ok(
      await this.api.POST('/api/v1/projects/{projectID}/domains/{domainID}/verify', {
        params: { path: { projectID: projectId, domainID: domainId } },
      }),
    );
  }

  /** Removes a custom domain: the edge stops serving the hostname at once. */
  async removeDomain(projectId: string, domainId: string): Promise<void> {
    this.ok(
      await this.api.DELETE('/api/v1/projects/{projectID}/domains/{domainID}', {
        params: { path: { projectID: projectId, domainID: domainId } },
      }),
    );
  }

  /** What the edge served for the project: totals, and one bucket per day (or hour) of the last `days`. */
  async usage(projectId: string, query: UsageQuery = {}): Promise<Usage> {
    return this.ok(
      await this.api.GET('/api/v1/projects/{projectID}/usage', { params: { path: { projectID: projectId }, query } }),
    );
  }

  /** The user's agent tokens (of the agent-tool interface) neither revoked nor expired, newest first. */
  async agentTokens(): Promise<AgentToken[]> {
    return this.ok(await this.api.GET('/api/v1/auth/agent-tokens')).agent_tokens;
  }

  /** Makes an agent token named `name`, valid `ttlSeconds` (else the server's default); its token shows once. */
  async createAgentToken(name: string, ttlSeconds?: number): Promise<CreatedAgentToken> {
    const body = ttlSeconds === undefined ? { name } : { name, ttl_seconds: ttlSeconds };
    return this.ok(await this.api.POST('/api/v1/auth/agent-tokens', { body }));
  }

  /** Revokes an agent token: every token of it is refused at once. */
  async revokeAgentToken(id: string): Promise<void> {
    this.ok(await this.api.DELETE('/api/v1/auth/agent-tokens/{grantID}', { params: { path: { grantID: id } } }));
  }

  /** The people of the account, oldest first. */
  async members(): Promise<Member[]> {
    return this.ok(await this.api.GET('/api/v1/account/members')).members;
  }

  /**
   * Invites `email` (a member unless `role` says owner): the address gets a set-password token by mail. Sent again to
   * an address invited before and not yet active, it mails a new token.
   */
  async inviteMember(email: string, role?: MemberRole): Promise<Member> {
    return this.ok(await this.api.POST('/api/v1/account/members', { body: { email, role } }));
  }

  /** Makes a member an owner or a member. */
  async setMemberRole(userId: string, role: MemberRole): Promise<Member> {
    return this.ok(
      await this.api.PATCH('/api/v1/account/members/{userID}', {
        params: { path: { userID: userId } },
        body: { role },
      }),
    );
  }

  /** Removes a member (their tokens stop at once); a member may remove themselves. */
  async removeMember(userId: string): Promise<void> {
    this.ok(await this.api.DELETE('/api/v1/account/members/{userID}', { params: { path: { userID: userId } } }));
  }

  async operation(id: string): Promise<Operation> {
    return this.ok(await this.api.GET('/api/v1/operations/{operationID}', { params: { path: { operationID: id } } }));
  }

  /** A page of the account's operations, newest first, filtered by `query` (project_id, status, kind). */
  async operations(query: OperationQuery = {}): Promise<OperationPage> {
    return this.ok(await this.api.GET('/api/v1/operations', { params: { query } }));
  }

  /**
   * Follows the operation's live events until it is terminal (resuming a dropped connection);
   * returns its last state, or null when the API does not stream (poll with waitForOperation then).
   */
  follow(id: string, onEvent: (e: OperationEvent<Operation>) => void): Promise<Operation | null> {
    return followOperation(`${this.baseUrl}/api/v1/operations/${encodeURIComponent(id)}`, this.auth(), onEvent);
  }

  /** Polls the operation with bounded, jittered backoff until it is terminal; returns that last view. */
  waitForOperation(id: string, options: PollOptions<Operation> = {}): Promise<Operation> {
    return pollUntilTerminal(() => this.operation(id), {
      sleep: this.options.sleep,
      random: this.options.random,
      ...options,
    });
  }

  /**
   * Cancels the operation after reading its guidance: an operation that is already terminal is
   * not sent a cancel (HoistGuidanceError not_cancelable, with its next step).
   */
  async cancel(id: string): Promise<Operation> {
    const op = await this.operation(id);
    if (isTerminal(op.status))
      throw new HoistGuidanceError(
        'not_cancelable',
        `The operation is ${op.status}; there is nothing to cancel. ${op.next_step?.message ?? ''}`.trim(),
        op,
      );
    this.ok(await this.api.POST('/api/v1/operations/{operationID}/cancel', { params: { path: { operationID: id } } }));
    return this.operation(id);
  }

  /**
   * Retries the operation only when its guidance recommends it (next_step.action retry); else
   * throws HoistGuidanceError not_retryable with the guidance's message (fix the input, keep
   * polling, nothing to do).
   */
  async retry(id: string): Promise<Operation> {
    const op = await this.operation(id);
    if (op.next_step?.action !== 'retry') {
      throw new HoistGuidanceError(
        'not_retryable',
        `The operation is ${op.status} and is not to be retried: ${op.next_step?.message ?? 'no guidance was given'}`,
        op,
      );
    }
    this.ok(await this.api.POST('/api/v1/operations/{operationID}/retry', { params: { path: { operationID: id } } }));
    return this.operation(id);
  }

  /**
   * Sends the manifest of a site (gzip-compressed JSON) to POST /api/v1/upload-manifests. Answers its
   * id and the hashes the server lacks, or null from a server without manifest uploads (404).
   */
  async uploadManifest(files: { path: string; sha256: string; size: number }[]): Promise<UploadManifest | null> {
    const body = gzipSync(JSON.stringify({ files }));
    const headers = { ...this.auth(), 'content-type': 'application/json', 'content-encoding': 'gzip' };
    const res = await this.send(
      () => new Request(`${this.baseUrl}/api/v1/upload-manifests`, { method: 'POST', headers, body }),
    );
    if (res.status === 404) return null;
    if (!res.ok) throw await apiErrorOf(res);
    return (await res.json()) as UploadManifest;
  }

  /**
   * Local-to-Live: uploads the ZIP as multipart (part `file`) with `fields` (name, visibility,
   * root_directory, manifest_id, ...), to the project `projectId` when given. The ZIP may be null
   * only with a manifest_id whose files were all sent before. One Idempotency-Key covers the call and
   * its retries.
   */
  async localToLive(
    zip: Uint8Array | null,
    fields: Record<string, string>,
    options: UploadOptions & { projectId?: string } = {},
  ): Promise<LocalToLiveAnswer> {
    const form = new FormData();
    for (const [k, v] of Object.entries(fields)) form.append(k, v);
    if (zip)
      form.append(
        'file',
        new Blob([zip as Uint8Array<ArrayBuffer>], { type: 'application/zip' }),
        options.filename ?? 'archive.zip',
      );
    // Serialised once, so every attempt sends the same bytes and progress can be counted.
    const encoded = new Response(form);
    const type = encoded.headers.get('content-type')!;
    const body = new Uint8Array(await encoded.arrayBuffer());
    const path = options.projectId
      ? `/api/v1/projects/${encodeURIComponent(options.projectId)}/local-to-live`
      : '/api/v1/local-to-live';
    const headers = { ...this.auth(), 'content-type': type, 'idempotency-key': randomUUID() };
    // Progress is told in bytes of the archive, not of the multipart envelope around it.
    const progress =
      options.onProgress &&
      ((sent: number) => options.onProgress!(Math.round((sent / body.length) * (zip?.length ?? 0)), zip?.length ?? 0));
    const res = await this.send(
      () =>
        new Request(this.baseUrl + path, {
          method: 'POST',
          headers,
          body: countingStream(body, progress),
          duplex: 'half',
        } as RequestInit),
    );
    if (!res.ok) throw await apiErrorOf(res);
    return (await res.json()) as LocalToLiveAnswer;
  }

  /** Creates an upload session (a one-time upload URL). */
  async createUploadSession(body: UploadSessionRequest): Promise<UploadSession> {
    return this.ok(await this.api.POST('/api/v1/upload-sessions', { body }));
  }

  /**
   * Sends `zip` through upload session `session` the way it asks: straight to storage when it lists presigned parts
   * (`parts`, on S3 storage: uploadParts), else tus PATCHes to its upload_url (uploadResumable). Returns the 202
   * answer with the deployment operation.
   */
  uploadToSession(
    session: Pick<UploadSession, 'upload_url' | 'parts'>,
    zip: Uint8Array,
    options: UploadOptions = {},
  ): Promise<LocalToLiveAnswer> {
    return session.parts
      ? this.uploadParts(session.upload_url, session.parts, zip, options)
      : this.uploadResumable(session.upload_url, zip, options);
  }

  /**
   * PUTs each part of `zip` to its presigned storage URL, exactly its size bytes (each URL is signed for that
   * length), at most PARALLEL_PARTS at once and each retried on network errors and 5xx; then POSTs their ETags and
   * the ZIP's SHA-256 to `uploadUrl`, which answers 202 with the deployment operation. No bearer token goes to
   * storage or to `uploadUrl`: the URLs are the credentials.
   */
  async uploadParts(
    uploadUrl: string,
    parts: NonNullable<UploadSession['parts']>,
    zip: Uint8Array,
    options: UploadOptions = {},
  ): Promise<LocalToLiveAnswer> {
    let sent = 0;
    // In part order, as completing the upload lists them.
    const etags = await atMost(PARALLEL_PARTS, parts.urls, async (part) => {
      const start = (part.part_number - 1) * parts.part_size;
      const body = zip.slice(start, start + part.size);
      const res = await this.send(() => new Request(part.url, { method: 'PUT', body }));
      const etag = res.headers.get('etag');
      if (!res.ok || !etag) {
        const why = (await res.text().catch(() => '')).slice(0, 300);
        throw new Error(`storage refused part ${part.part_number} of the upload: ${res.status} ${why}`.trim());
      }
      sent += part.size;
      options.onProgress?.(sent, zip.length);
      return { part_number: part.part_number, etag };
    });
    const sha256 = createHash('sha256').update(zip).digest('hex');
    const res = await this.send(
      () =>
        new Request(uploadUrl, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ parts: etags, sha256 }),
        }),
    );
    if (res.status !== 202) throw await apiErrorOf(res);
    return (await res.json()) as LocalToLiveAnswer;
  }

  /**
   * Sends `zip` to the upload URL of a direct_storage_resumable session with tus PATCHes of
   * `chunkBytes`; after a failed piece it asks the server (HEAD) where to go on from. No bearer
   * token is sent: the URL is the credential. Returns the answer of the last piece (202).
   */
  async uploadResumable(
    uploadUrl: string,
    zip: Uint8Array,
    options: UploadOptions & { chunkBytes?: number } = {},
  ): Promise<LocalToLiveAnswer> {
    const chunk = options.chunkBytes ?? 8 << 20;
    const tus = { 'tus-resumable': '1.0.0' };
    let offset = 0;
    let failures = 0;
    for (;;) {
      const end = Math.min(zip.length, offset + chunk);
      const piece = zip.subarray(offset, end);
      const res = await this.send(
        () =>
          new Request(uploadUrl, {
            method: 'PATCH',
            headers: { ...tus, 'content-type': 'application/offset+octet-stream', 'upload-offset': String(offset) },
            body: countingStream(
              piece,
              options.onProgress && ((sent) => options.onProgress!(offset + sent, zip.length)),
            ),
            duplex: 'half',
          } as RequestInit),
      ).catch((err) => err as Error);
      if (res instanceof Response && res.status === 202) return (await res.json()) as LocalToLiveAnswer;
      if (res instanceof Response && res.status === 204) {
        offset = Number(res.headers.get('upload-offset') ?? end);
        failures = 0;
        continue;
      }
      if (res instanceof Response && res.status !== 409 && res.status < 500) throw await apiErrorOf(res);
      if (++failures > 5) throw res instanceof Response ? await apiErrorOf(res) : res;
      const head = await this.send(() => new Request(uploadUrl, { method: 'HEAD', headers: tus }));
      if (!head.ok) throw await apiErrorOf(head);
      offset = Number(head.headers.get('upload-offset'));
    }
  }

  private auth(): Record<string, string> {
    return this.token ? { authorization: `Bearer ${this.token}` } : {};
  }
}

// A body stream of `bytes` in 256 KiB pieces that reports how much of it was read.
function countingStream(
  bytes: Uint8Array,
  onProgress?: (sent: number, total: number) => void,
): ReadableStream<Uint8Array> {
  let at = 0;
  return new ReadableStream({
    pull(controller) {
      if (at >= bytes.length) {
        onProgress?.(bytes.length, bytes.length);
        return controller.close();
      }
      const next = bytes.subarray(at, Math.min(bytes.length, at + (256 << 10)));
      at += next.length;
      controller.enqueue(next);
      onProgress?.(at, bytes.length);
    },
  });
}
