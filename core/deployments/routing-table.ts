import type { EntityManager } from '@mikro-orm/core';
import { accessProofs } from '../access/site-access-service.js';
import { AccessGrant } from '../entities/access-grant.js';
import { Deployment } from '../entities/deployment.js';
import { Domain } from '../entities/domain.js';
import { Project } from '../entities/project.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Logger } from '../tokens.js';
import { hostnameOf, ROUTES_CHANNEL, type HostRoutes, type LiveRelease } from './host-routes.js';

/** Where the routing table reads and how often it reloads whole. */
export interface RoutingTableOptions {
  appsDomain: string;
  /** Every this many ms the whole table is read again (bounds what a lost notification costs). */
  revalidateMs: number;
  log: Logger;
}

/**
 * HostRoutes from memory: host → live release of every active project with a live release, on its
 * own host and its active customer domains, with what the private gate needs. Loaded whole at
 * start and every `revalidateMs`, and one project again at each change announced on the `routes`
 * channel (a null: everything). Entries are immutable and replaced whole, so a request that took an
 * entry once is answered from one release even while a switch lands.
 */
export class RoutingTable implements HostRoutes {
  private byHost = new Map<string, LiveRelease>();
  private hostsOf = new Map<string, string[]>();
  /** Loads run one at a time, in the order asked: a project reload never lands under an older full load. */
  private chain: Promise<void> = Promise.resolve();
  private timer: NodeJS.Timeout | null = null;
  private unsubscribe: (() => void) | null = null;

  constructor(
    private readonly em: EntityManager,
    private readonly changes: ChangeFeed,
    private readonly options: RoutingTableOptions,
  ) {}

  /** Subscribes to changes, then loads the whole table (so no change falls between the two). */
  async start(): Promise<void> {
    if (this.unsubscribe) return;
    this.unsubscribe = this.changes.subscribe(ROUTES_CHANNEL, (key) => this.reload(key));
    await this.reload(null);
    this.timer = setInterval(() => void this.reload(null), this.options.revalidateMs);
    this.timer.unref();
  }

  stop(): void {
    this.unsubscribe?.();
    this.unsubscribe = null;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  lookup(host: string | undefined): LiveRelease | null {
    const name = hostnameOf(host);
    return name ? (this.byHost.get(name) ?? null) : null;
  }

  async liveReleaseOf(host: string | undefined): Promise<LiveRelease | null> {
    return this.lookup(host);
  }

  /** Number of hosts served (for tests and metrics). */
  get size(): number {
    return this.byHost.size;
  }

  /** Reads project `projectId` again (null: every project); resolves once applied. Never rejects. */
  reload(projectId: string | null): Promise<void> {
    const run = this.chain.then(() =>
      this.load(projectId, this.em.fork()).catch((err: Error) =>
        this.options.log.error({ projectId, reason: err.message }, 'routing table: reload failed'),
      ),
    );
    this.chain = run;
    return run;
  }

  /**
   * Reads project `projectId` inside `tx`, a transaction about to commit (the Deploy stage's switch),
   * when this process runs a loaded table: the switch is served here from the moment it commits, never
   * after the operation reads succeeded. Other processes learn it from the announcement after the
   * commit; a transaction that does not commit is undone by the reload its caller announces then.
   */
  async preview(projectId: string, tx: EntityManager): Promise<void> {
    if (!this.unsubscribe) return;
    const run = this.chain.then(() => this.load(projectId, tx));
    this.chain = run.catch(() => undefined);
    await run;
  }

  private async load(projectId: string | null, em: EntityManager): Promise<void> {
    const only = projectId ? { id: projectId } : {};
    const projects = await em.find(
      Project,
      { ...only, status: 'active', liveDeploymentId: { $ne: null } },
      { fields: ['id', 'slug', 'visibility', 'liveDeploymentId', 'accessPasswordHash'], disableIdentityMap: true },
    );
    const ids = projects.map((p) => p.id);
    const [deployments, domains, grants] = ids.length
      ? await Promise.all([
          em.find(
            Deployment,
            { id: { $in: projects.map((p) => p.liveDeploymentId!) } },
            { fields: ['id', 'target'], disableIdentityMap: true },
          ),
          em.find(
            Domain,
            { projectId: { $in: ids }, status: 'active' },
            { fields: ['projectId', 'hostname'], disableIdentityMap: true },
          ),
          em.find(
            AccessGrant,
            { projectId: { $in: projects.filter((p) => p.visibility === 'private').map((p) => p.id) } },
            { fields: ['id', 'projectId'], disableIdentityMap: true },
          ),
        ])
      : [[], [], []];
    const targets = new Map(deployments.map((d) => [d.id, d.target]));
    const entries = new Map<string, { release: LiveRelease; hosts: string[] }>();
    for (const p of projects) {
      const target = targets.get(p.liveDeploymentId!);
      if (!target) continue;
      const granted = grants.filter((g) => g.projectId === p.id).map((g) => g.id);
      const release: LiveRelease = {
        projectId: p.id,
        deploymentId: p.liveDeploymentId!,
        visibility: p.visibility,
        target,
        accessProofs: p.visibility === 'private' ? accessProofs(p.accessPasswordHash, granted) : new Set(),
      };
      entries.set(p.id, { release, hosts: [`${p.slug}.${this.options.appsDomain.toLowerCase()}`] });
    }
    for (const d of domains) entries.get(d.projectId)?.hosts.push(d.hostname.toLowerCase());

    if (projectId) {
      for (const host of this.hostsOf.get(projectId) ?? []) this.byHost.delete(host);
      this.hostsOf.delete(projectId);
      const entry = entries.get(projectId);
      if (entry) this.put(projectId, entry.release, entry.hosts);
      return;
    }
    const byHost = new Map<string, LiveRelease>();
    const hostsOf = new Map<string, string[]>();
    for (const [id, { release, hosts }] of entries) {
      hostsOf.set(id, hosts);
      for (const host of hosts) byHost.set(host, release);
    }
    this.byHost = byHost;
    this.hostsOf = hostsOf;
  }

  private put(projectId: string, release: LiveRelease, hosts: string[]): void {
    this.hostsOf.set(projectId, hosts);
    for (const host of hosts) this.byHost.set(host, release);
  }
}
