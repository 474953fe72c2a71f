import type { EntityManager, EntityName, FilterQuery } from '@mikro-orm/core';
import type { Readable } from 'node:stream';
import { Build } from '../entities/build.js';
import { Deployment } from '../entities/deployment.js';
import { Operation } from '../entities/operation.js';
import type { Project } from '../entities/project.js';
import { Version } from '../entities/version.js';
import { HoistError, notFound } from '../errors.js';
import type { OperationState, Stage } from '../operations/state-machine.js';
import type { Storage } from '../ports/storage.js';
import { isUuid } from '../projects/keyset-cursor.js';
import { keysetPage, type PageOptions, type RecordPage } from '../projects/keyset-page.js';
import type { ProjectService } from '../projects/project-service.js';
import { analysisView } from './analysis-view.js';
import type { DeploymentService } from './deployment-service.js';
import { releaseNotes, type ReleaseNotes } from './release-provenance.js';
import type { StartedBy } from '../entities/operation.js';
import {
  buildView,
  deploymentView,
  iso,
  versionView,
  type BuildView,
  type DeploymentView,
  type VersionView,
} from './record-views.js';
import { token } from '../tokens.js';

export const RECORDS_SERVICE = token<RecordsService>('hoist.RecordsService');

export type { PageOptions, RecordPage } from '../projects/keyset-page.js';

/** A release in the list: its deployment record and its notes (provenance, promotable). */
export type ReleaseItem = DeploymentView & ReleaseNotes;

/** A release (a deployment that went live) with its version, build and timings. */
export interface ReleaseView extends ReleaseNotes {
  id: string;
  project_id: string;
  operation_id: string;
  version: {
    id: string;
    filename: string | null;
    size: number;
    sha256: string;
    created_at: string;
    analysis: Record<string, unknown> | null;
  };
  build: Pick<BuildView, 'id' | 'status' | 'skipped' | 'artifact' | 'log' | 'log_url'> | null;
  deployment: Pick<DeploymentView, 'id' | 'status' | 'url' | 'live' | 'live_at' | 'ended_at'>;
  timings: {
    uploaded_at: string;
    started_at: string | null;
    live_at: string;
    analyze_ms: number | null;
    build_ms: number | null;
    deploy_ms: number | null;
    total_ms: number;
  };
}

/**
 * The records of a project's deployments, for the API: versions, builds (and their stored logs),
 * deployments and releases, each cursor-paginated newest first; and the build and deployment
 * retries. Everything is account-scoped: another account's project or record, a deleting project
 * and a malformed id are all not_found alike. A deployment's error is shown as stored: ReleaseReports masks it (the
 * app's last lines of a crash loop) when it records it, so that reading a page decrypts no environment snapshot (at
 * a plan's largest values, up to 32 MB for each failed deployment listed, on the shared API).
 */
export class RecordsService {
  constructor(
    private readonly em: EntityManager,
    private readonly projects: ProjectService,
    private readonly deployments: DeploymentService,
    private readonly storage: Storage,
    /** Whether the deployer can start a kept release again (Deployer.resume): releases are promotable only then. */
    private readonly canResume = false,
  ) {}

  /** A page of the project's versions. */
  async versions(accountId: string, projectId: string, opts: PageOptions): Promise<RecordPage<VersionView>> {
    const project = await this.projects.get(accountId, projectId);
    return this.page(Version, { projectId: project.id }, opts, versionView);
  }

  /** One version of the project. */
  async version(accountId: string, projectId: string, id: string): Promise<VersionView> {
    const project = await this.projects.get(accountId, projectId);
    return versionView(await this.one(Version, project, id, 'Version'));
  }

  /** A page of the project's builds. */
  async builds(accountId: string, projectId: string, opts: PageOptions): Promise<RecordPage<BuildView>> {
    const project = await this.projects.get(accountId, projectId);
    return this.page(Build, { projectId: project.id }, opts, buildView);
  }

  /** One build of the project. */
  async build(accountId: string, projectId: string, id: string): Promise<BuildView> {
    const project = await this.projects.get(accountId, projectId);
    return buildView(await this.one(Build, project, id, 'Build'));
  }

  /**
   * The build's whole stored log (UTF-8 text); not_found while the build has not stored it yet, gone once
   * FileRetention removed it.
   */
  async buildLog(accountId: string, projectId: string, id: string): Promise<Readable> {
    const project = await this.projects.get(accountId, projectId);
    const build = await this.one(Build, project, id, 'Build');
    if (build.logRemovedAt)
      throw new HoistError('gone', `The log of build ${build.id} was removed after the days it is kept`, {
        removed_at: build.logRemovedAt.toISOString(),
      });
    if (!build.logKey) throw notFound('Build log');
    return this.storage.get(build.logKey).catch((err) => {
      throw err instanceof HoistError && err.code === 'not_found' ? notFound('Build log') : err;
    });
  }

  /** A page of the project's deployments. */
  async deploymentList(accountId: string, projectId: string, opts: PageOptions): Promise<RecordPage<DeploymentView>> {
    const project = await this.projects.get(accountId, projectId);
    return this.page(Deployment, { projectId: project.id }, opts, (d) => deploymentView(d, project));
  }

  /** One deployment of the project. */
  async deployment(accountId: string, projectId: string, id: string): Promise<DeploymentView> {
    const project = await this.projects.get(accountId, projectId);
    return deploymentView(await this.one(Deployment, project, id, 'Deployment'), project);
  }

  /**
   * A page of the project's releases: its deployments that went live (or up, as a preview), newest first, with
   * their notes; `target` keeps the production ones or the previews.
   */
  async releases(
    accountId: string,
    projectId: string,
    opts: PageOptions & { target?: string },
  ): Promise<RecordPage<ReleaseItem>> {
    const project = await this.projects.get(accountId, projectId);
    const target = opts.target === undefined ? {} : { preview: opts.target === 'preview' };
    const rows = await this.page(
      Deployment,
      { projectId: project.id, liveAt: { $ne: null }, ...target },
      opts,
      (d) => d,
    );
    const notes = await releaseNotes(this.em, rows.items, this.canResume);
    return { ...rows, items: rows.items.map((d) => ({ ...deploymentView(d, project), ...notes.get(d.id)! })) };
  }

  /**
   * Promotes a release of the project (see DeploymentService.promote): not_found for a missing,
   * malformed or foreign one, as on every record route.
   */
  async promote(
    accountId: string,
    projectId: string,
    id: string,
    startedBy?: StartedBy,
  ): Promise<{ project: Project; operation: Operation }> {
    const project = await this.projects.get(accountId, projectId);
    const d = await this.one(Deployment, project, id, 'Release');
    const operation = await this.deployments.promote(accountId, d, project.liveDeploymentId, this.canResume, startedBy);
    return { project, operation };
  }

  /** One release: a deployment that went live, with its version, build and stage timings. */
  async release(accountId: string, projectId: string, id: string): Promise<ReleaseView> {
    const project = await this.projects.get(accountId, projectId);
    const d = await this.one(Deployment, project, id, 'Release');
    if (!d.liveAt) throw notFound('Release');
    const version = await this.em.findOneOrFail(Version, { id: d.versionId });
    const build = await this.em.findOne(Build, { id: d.buildId });
    const op = await this.em.findOne(Operation, { id: d.operationId });
    const stages = (op?.state as unknown as OperationState | null)?.stages;
    const span = (name: Stage) => {
      const s = stages?.[name];
      return s?.startedAt && s.finishedAt ? Date.parse(s.finishedAt) - Date.parse(s.startedAt) : null;
    };
    const b = build && buildView(build);
    const dv = deploymentView(d, project);
    const notes = (await releaseNotes(this.em, [d], this.canResume)).get(d.id)!;
    return {
      ...notes,
      id: d.id,
      project_id: project.id,
      operation_id: d.operationId,
      version: {
        id: version.id,
        filename: version.filename,
        size: version.archiveSize,
        sha256: version.archiveSha256,
        created_at: iso(version.createdAt)!,
        analysis: version.analysis ? summary(analysisView(version.analysis)) : null,
      },
      build: b && {
        id: b.id,
        status: b.status,
        skipped: b.skipped,
        artifact: b.artifact,
        log: b.log,
        log_url: b.log_url,
      },
      deployment: {
        id: dv.id,
        status: dv.status,
        url: dv.url,
        live: dv.live,
        live_at: dv.live_at,
        ended_at: dv.ended_at,
      },
      timings: {
        uploaded_at: iso(version.createdAt)!,
        started_at: iso(op?.createdAt),
        live_at: dv.live_at!,
        analyze_ms: span('analyze'),
        build_ms: span('build'),
        deploy_ms: span('deploy'),
        total_ms: new Date(d.liveAt).getTime() - new Date(version.createdAt).getTime(),
      },
    };
  }

  /** Retries a build of the project: a new chain for its version (see DeploymentService.rebuild). */
  async retryBuild(
    accountId: string,
    projectId: string,
    id: string,
    startedBy?: StartedBy,
  ): Promise<{ project: Project; operation: Operation }> {
    const project = await this.projects.get(accountId, projectId);
    const build = await this.one(Build, project, id, 'Build');
    return { project, operation: await this.deployments.rebuild(accountId, build.versionId, startedBy) };
  }

  /** Retries a deployment of the project: a new chain deploying its build again (see DeploymentService.redeploy). */
  async retryDeployment(
    accountId: string,
    projectId: string,
    id: string,
    startedBy?: StartedBy,
  ): Promise<{ project: Project; operation: Operation }> {
    const project = await this.projects.get(accountId, projectId);
    const d = await this.one(Deployment, project, id, 'Deployment');
    return { project, operation: await this.deployments.redeploy(accountId, d.buildId, startedBy) };
  }

  /** The project's record `id` of `entity`; not_found (as `what`) for a missing, malformed or foreign id. */
  private async one<T extends object>(entity: EntityName<T>, project: Project, id: string, what: string): Promise<T> {
    const row = isUuid(id)
      ? await this.em.findOne(entity, { id, accountId: project.accountId, projectId: project.id } as FilterQuery<T>)
      : null;
    if (!row) throw notFound(what);
    return row;
  }

  /** A keyset page of `entity` rows matching `where`, ordered by (createdAt, id) descending. */
  private page<T extends { id: string; createdAt: Date }, V>(
    entity: EntityName<T>,
    where: object,
    opts: PageOptions,
    view: (row: T) => V,
  ): Promise<RecordPage<V>> {
    return keysetPage(this.em, entity, where, opts, view);
  }
}

/** The few Analyze fields a release shows. */
function summary(a: ReturnType<typeof analysisView>): Record<string, unknown> {
  return {
    runtime: a.runtime,
    framework: a.framework,
    output_dir: a.output_dir,
    file_count: a.file_count,
    total_size: a.total_size,
    warnings: a.warnings,
  };
}
