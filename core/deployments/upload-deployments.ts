import type { Project } from '../entities/project.js';
import type { StartedBy } from '../entities/operation.js';
import type { UploadSession } from '../entities/upload-session.js';
import type { UploadOptions } from '../entities/version.js';
import type { EnvironmentService, NewVariable } from '../environment/environment-service.js';
import { invalid } from '../errors.js';
import type { Claim, IdempotencyService } from '../idempotency/idempotency-service.js';
import type { Cipher } from '../ports/cipher.js';
import type { Storage } from '../ports/storage.js';
import type { ProjectService } from '../projects/project-service.js';
import { token, type Logger } from '../tokens.js';
import type { UploadSessionService } from '../uploads/upload-session-service.js';
import type { DeploymentService, UploadedArchive } from './deployment-service.js';
import type { Previews } from './previews.js';
import { runSteps, type Step } from './run-steps.js';
import { startedDeployment, type StartedDeployment } from './started-deployment.js';
import { uploadOptions, type UploadFields } from './upload-options.js';

export const UPLOAD_DEPLOYMENTS = token<UploadDeployments>('hoist.UploadDeployments');

/** The project an upload creates, or selects by name when the account has an active one of that name. */
export interface ProjectByName {
  name: string;
  /** The visibility of a project the upload creates (draft by default); ignored for an existing one. */
  visibility?: string;
  /** The access password of a project the upload creates; refused for an existing one. */
  accessPassword?: string;
  /** A new project's variables, as JSON text (EnvironmentService.parseNew); refused for an existing project. */
  environment?: string;
}

/** Where an upload deploys: a project by name (created when missing) or an existing project's id. */
export type UploadTarget = ProjectByName | { projectId: string };

/** One upload to deploy. */
export interface UploadDeployment {
  accountId: string;
  target: UploadTarget;
  /** The archive, already in Storage; from here the use case's: deleted when the upload is refused or repeated. */
  upload: UploadedArchive;
  /** The upload options as given (validated here). */
  options: UploadFields;
  idempotencyKey?: string;
  /** The upload session the archive came through; it records the operation started. */
  session?: UploadSession;
  /** Who uploaded it (the release's provenance); absent for an upload session, whose URL is the credential. */
  startedBy?: StartedBy;
}

/** What an upload started; `replayed` when it is the remembered answer of an earlier same request. */
export interface UploadStarted {
  started: StartedDeployment;
  replayed: boolean;
}

/** What the use case needs. */
export interface UploadDeploymentsDeps {
  projects: ProjectService;
  environment: EnvironmentService;
  deployments: DeploymentService;
  idempotency: IdempotencyService;
  sessions: UploadSessionService;
  previews: Pick<Previews, 'serving'>;
  storage: Storage;
  cipher: Cipher;
  log: Logger;
}

/** What the steps of one upload learn on the way. */
interface State {
  input: UploadDeployment;
  options?: UploadOptions;
  claim?: Claim;
  project?: Project;
  created?: boolean;
  vars?: NewVariable[];
  started?: StartedDeployment;
  replayed?: boolean;
}

/**
 * Deploys an uploaded archive: the one write behind Local-to-Live (account and project level) and
 * the upload of an upload session. It resolves or creates the project, stores a new project's
 * environment and starts the deployment chain, under an Idempotency-Key when one is given; when a
 * step fails, the steps before it are undone, last first (see `steps`).
 */
export class UploadDeployments {
  constructor(private readonly deps: UploadDeploymentsDeps) {}

  /**
   * Refuses, before the archive is read, an upload `deploy` would refuse on its target: not_found
   * for a project id the account does not have, deployment_in_progress while the project's chain
   * runs. A request repeating an Idempotency-Key the account used passes: its answer is replayed.
   */
  async assertCanStart(accountId: string, target: UploadTarget, idempotencyKey?: string): Promise<void> {
    const { projects, idempotency, deployments } = this.deps;
    const project =
      'projectId' in target
        ? await projects.get(accountId, target.projectId)
        : target.name.trim() && (await projects.findByName(accountId, target.name.trim()));
    if (!project) return;
    if (idempotencyKey !== undefined && (await idempotency.remembers(accountId, idempotencyKey))) return;
    await deployments.assertNoChainRunning(project.id);
  }

  /**
   * Starts the deployment of `input.upload`. Throws invalid_request (options, name, environment,
   * access password), not_found, plan_restricted, deployment_in_progress, idempotency_key_reused or
   * conflict, and then leaves nothing behind: no project it created, no environment, no archive.
   */
  async deploy(input: UploadDeployment): Promise<UploadStarted> {
    const state = await runSteps<State>({ input }, this.steps, (step, err) =>
      this.deps.log.warn({ err, step, upload: input.upload.key }, 'An upload was refused and undoing a step failed'),
    );
    return { started: state.started!, replayed: state.replayed === true };
  }

  /** The upload's steps, in order, each with its compensation. */
  private readonly steps: Step<State>[] = [
    {
      name: 'take the archive',
      run: async () => {},
      // A deployment that started holds the archive, whatever fails after it.
      compensate: async (s) => {
        if (!s.started) await this.deps.storage.delete(s.input.upload.key);
      },
    },
    {
      name: 'check the options',
      run: async (s) => {
        const { target, options } = s.input;
        s.options = uploadOptions({ ...options, visibility: 'name' in target ? target.visibility : undefined });
      },
    },
    {
      name: 'claim the idempotency key',
      run: async (s) => {
        const { accountId, idempotencyKey, upload } = s.input;
        const claimed = await this.deps.idempotency.claim<StartedDeployment>(
          accountId,
          idempotencyKey,
          this.request(s),
        );
        if ('replay' in claimed) {
          // A repeat: the archive of the first request is the one deployed.
          await this.deps.storage.delete(upload.key);
          Object.assign(s, { started: claimed.replay, replayed: true });
          return 'done';
        }
        s.claim = claimed.claim;
      },
      compensate: (s) => this.deps.idempotency.release(s.claim!),
    },
    {
      name: 'resolve or create the project',
      run: (s) => this.resolve(s),
      compensate: async (s) => {
        if (s.created) await this.deps.projects.discardNew(s.project!.id);
      },
    },
    {
      // Undone with the project: a new project's variables go when it goes, and only then.
      name: 'store the environment',
      run: async (s) => {
        if (s.created && s.vars?.length) await this.deps.environment.storeNew(s.project!.id, s.vars);
      },
    },
    {
      // The same ZIP as a preview that still serves: that preview is the answer, and the new copy goes.
      name: 'find the same preview',
      run: async (s) => {
        if (s.options!.target !== 'preview' || s.created) return;
        const same = await this.deps.previews.serving(s.project!.id, s.input.upload.sha256);
        if (!same) return;
        await this.deps.storage.delete(s.input.upload.key);
        s.started = startedDeployment(s.project!, same.operation, same.version);
      },
    },
    {
      name: 'start the deployment',
      run: async (s) => {
        if (s.started) return;
        const { accountId, upload, session, startedBy } = s.input;
        const provenance = { source: session ? 'upload_session' : 'upload', startedBy: startedBy ?? null };
        const { operation, version } = await this.deps.deployments.start(
          accountId,
          s.project!,
          upload,
          s.options!,
          provenance,
        );
        s.started = startedDeployment(s.project!, operation, version);
      },
    },
    {
      name: 'record it on the upload session',
      run: async (s) => {
        if (s.input.session) await this.deps.sessions.finish(s.input.session, s.started!.operation.id);
      },
    },
    { name: 'remember the answer', run: (s) => this.deps.idempotency.remember(s.claim!, s.started) },
  ];

  /** The request an Idempotency-Key is compared by; secrets enter it only as a keyed fingerprint. */
  private request({ input, options }: State): unknown {
    const { target, upload } = input;
    const secret = (v?: string) => (v === undefined ? undefined : `fingerprint:${this.deps.cipher.fingerprint(v)}`);
    const where =
      'projectId' in target
        ? { project_id: target.projectId }
        : {
            name: target.name,
            visibility: target.visibility,
            access_password: secret(target.accessPassword),
            environment: secret(target.environment),
          };
    return { target: where, options, sha256: upload.sha256, size: upload.size };
  }

  /**
   * The project of a project id; or the account's project of that name, refusing an access password
   * or an environment for it; or a new one (`created`), whose environment is validated first.
   */
  private async resolve(s: State): Promise<void> {
    const { accountId, target } = s.input;
    const { projects } = this.deps;
    if ('projectId' in target) {
      s.project = await projects.get(accountId, target.projectId);
      return;
    }
    const name = target.name.trim();
    if (!name) throw invalid('name is required: the project to create or select', { field: 'name' });
    const { environment, accessPassword, visibility } = target;
    s.vars = environment === undefined ? [] : await this.deps.environment.parseNew(accountId, environment);
    const existing = await projects.findByName(accountId, name);
    if (!existing) {
      s.project = await projects.create(accountId, { name, visibility, accessPassword });
      s.created = true;
      return;
    }
    if (accessPassword !== undefined) {
      throw invalid(
        `access_password is only accepted when this call creates the project; project "${name}" exists: ` +
          `set it with PATCH /api/v1/projects/${existing.id}/`,
        { field: 'access_password' },
      );
    }
    if (environment !== undefined) {
      throw invalid(
        `environment is only accepted when this call creates the project; project "${name}" exists: ` +
          `set its variables with PUT /api/v1/projects/${existing.id}/environment/{name}`,
        { field: 'environment' },
      );
    }
    s.project = existing;
  }
}
