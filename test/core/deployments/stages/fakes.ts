// Fakes of the ports and repositories the stages take, for unit tests of the stages alone (the one
// place the issue asks for fakes): in memory, and recording what the stages asked of them.
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { Operation } from '../../../../core/entities/operation.js';
import { Project } from '../../../../core/entities/project.js';
import { Version } from '../../../../core/entities/version.js';
import type {
  BuildRepository,
  BuildUpdate,
  NewBuild,
  ShippableBuild,
} from '../../../../core/deployments/repositories/build-repository.js';
import type {
  DeploymentRepository,
  NewDeployment,
} from '../../../../core/deployments/repositories/deployment-repository.js';
import type { StageContext } from '../../../../core/deployments/stage-runner.js';
import type { Analysis } from '../../../../core/deployments/stages/analyze.js';
import type { ReleaseTarget } from '../../../../core/ports/deployer.js';
import type { Storage, StoredObject } from '../../../../core/ports/storage.js';
import type { UploadOptions } from '../../../../core/entities/version.js';
import type { Logger } from '../../../../core/tokens.js';

/** A build record as the fake keeps it. */
export type FakeBuild = NewBuild & BuildUpdate & { id: string; finished?: boolean };

/** BuildRepository in memory; `within` writes to the same records (there are no transactions here). */
export class FakeBuilds implements BuildRepository {
  readonly rows: FakeBuild[] = [];

  async create(build: NewBuild): Promise<string> {
    const id = randomUUID();
    this.rows.push({ ...build, id });
    return id;
  }
  async update(id: string, fields: BuildUpdate): Promise<void> {
    Object.assign(this.byId(id), fields);
  }
  async cancelRunning(operationId: string): Promise<void> {
    for (const b of this.rows)
      if (b.operationId === operationId && b.status === 'running')
        Object.assign(b, { status: 'canceled', finished: true });
  }
  async shippable(operationId: string): Promise<ShippableBuild | null> {
    const b = [...this.rows]
      .reverse()
      .find((r) => r.operationId === operationId && ['succeeded', 'skipped'].includes(r.status) && r.artifactKey);
    return b ? { id: b.id, artifactKey: b.artifactKey!, artifactRoot: b.artifactRoot ?? null } : null;
  }
  async reusable(id: string, projectId: string): Promise<ShippableBuild | null> {
    const b = this.rows.find((r) => r.id === id && r.projectId === projectId && r.artifactKey);
    return b ? { id: b.id, artifactKey: b.artifactKey!, artifactRoot: b.artifactRoot ?? null } : null;
  }
  within(): BuildRepository {
    return this;
  }
  byId(id: string): FakeBuild {
    return byId(this.rows, id);
  }
  /** A build of the operation of `ctx` that is running. */
  started(ctx: StageContext): Promise<string> {
    const { operation, project, version } = ctx;
    return this.create({
      accountId: operation.accountId,
      projectId: project.id,
      versionId: version.id,
      operationId: operation.id,
      status: 'running',
      logKey: null,
    });
  }
}

/** A deployment record as the fake keeps it. */
export type FakeDeployment = NewDeployment & { id: string; status: string; target?: ReleaseTarget; url?: string };

/** DeploymentRepository in memory, with the project's live pointer. */
export class FakeDeployments implements DeploymentRepository {
  readonly rows: FakeDeployment[] = [];
  readonly live = new Map<string, string>();
  slug = 'site';

  async create(d: NewDeployment): Promise<string> {
    const id = randomUUID();
    this.rows.push({ ...d, id, status: 'running' });
    return id;
  }
  async running(operationId: string): Promise<string[]> {
    return this.rows.filter((d) => d.operationId === operationId && d.status === 'running').map((d) => d.id);
  }
  async cancel(id: string): Promise<void> {
    this.byId(id).status = 'canceled';
  }
  async goLive(id: string, projectId: string, target: ReleaseTarget, urlOf: (slug: string) => string) {
    const previous = this.live.get(projectId) ?? null;
    Object.assign(this.byId(id), { status: 'live', target, url: urlOf(this.slug) });
    if (previous) this.byId(previous).status = 'superseded';
    this.live.set(projectId, id);
    return previous;
  }
  async goPreview(id: string, target: ReleaseTarget, url: string) {
    Object.assign(this.byId(id), { status: 'preview', target, url });
  }
  async find(id: string) {
    return (this.rows.find((d) => d.id === id) ?? null) as never;
  }
  async prune(): Promise<string[]> {
    return [];
  }
  async expireBeyond(accountId: string, keep: number) {
    const serving = this.rows.filter((d) => d.accountId === accountId && d.status === 'preview').reverse();
    for (const d of serving.slice(keep)) d.status = 'expired';
    return serving.slice(keep).map(({ id, projectId }) => ({ id, projectId }));
  }
  manager(): never {
    throw new Error('no database in the fake');
  }
  within(): DeploymentRepository {
    return this;
  }
  byId(id: string): FakeDeployment {
    return byId(this.rows, id);
  }
}

function byId<T extends { id: string }>(rows: T[], id: string): T {
  const row = rows.find((r) => r.id === id);
  if (!row) throw new Error(`no record ${id}`);
  return row;
}

/** Storage in memory: enough of the port for the stages (put, putContentAddressed, get). */
export function fakeStorage(objects = new Map<string, Buffer>()): Storage & { objects: Map<string, Buffer> } {
  const read = async (body: Readable) => {
    const chunks: Buffer[] = [];
    for await (const c of body) chunks.push(Buffer.from(c));
    return Buffer.concat(chunks);
  };
  const stored = (key: string, bytes: Buffer): StoredObject => ({ key, size: bytes.length, sha256: 'f'.repeat(64) });
  return {
    objects,
    async put(key, body) {
      objects.set(key, await read(body));
      return stored(key, objects.get(key)!);
    },
    async putContentAddressed(prefix, body, opts) {
      const bytes = await read(body);
      const key = `${prefix}/sha256/${objects.size}${opts?.suffix ?? ''}`;
      objects.set(key, bytes);
      return stored(key, bytes);
    },
    async get(key) {
      const bytes = objects.get(key);
      if (!bytes) throw new Error(`no object ${key}`);
      return Readable.from([bytes]);
    },
    async stat() {
      return null;
    },
    async delete(key) {
      objects.delete(key);
    },
    // eslint-disable-next-line require-yield
    async *list() {
      return;
    },
  };
}

/** A logger that keeps the warnings it is given (what a stage went on without). */
export function fakeLog(): Logger & { warnings: string[] } {
  const warnings: string[] = [];
  const text = (a: unknown, b?: string) => (typeof a === 'string' ? a : (b ?? ''));
  return {
    warnings,
    debug: () => {},
    info: () => {},
    warn: (a: unknown, b?: string) => void warnings.push(text(a, b)),
    error: (a: unknown, b?: string) => void warnings.push(text(a, b)),
  } as Logger & { warnings: string[] };
}

/** A stage context on plain records: a running deployment of `project`, its version analyzed as `analysis`. */
export function stageContext(
  options: { analysis?: Partial<Analysis> | null; upload?: UploadOptions; buildId?: string } = {},
): StageContext {
  const accountId = randomUUID();
  const project = Object.assign(new Project(), { accountId, name: 'site', slug: 'site' });
  const operation = Object.assign(new Operation(), {
    accountId,
    projectId: project.id,
    kind: 'deploy',
    status: 'running',
    state: options.buildId ? { buildId: options.buildId } : {},
  });
  const analysis =
    options.analysis === null ? null : { runtime: 'static', outputDir: '.', startCommand: null, ...options.analysis };
  const version = Object.assign(new Version(), {
    accountId,
    projectId: project.id,
    operationId: operation.id,
    archiveKey: 'uploads/site.zip',
    archiveSize: 1,
    archiveSha256: 'x',
    options: options.upload ?? {},
    analysis,
  });
  operation.versionId = version.id;
  return { operation, version, project, attempt: 1, signal: new AbortController().signal, progress: () => {} };
}
