import type { EntityManager } from '@mikro-orm/core';
import { accessProofs } from '../access/site-access-service.js';
import type { ReleaseTarget } from '../entities/deployment.js';
import { queryRows } from '../entities/plain-sql.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Logger } from '../tokens.js';
import { previewLabel } from '../projects/project-url.js';
import { hostnameOf, ROUTES_CHANNEL, type HostRoutes, type LiveRelease } from './host-routes.js';

/** Where the routing table reads and how often it reloads whole. */
export interface RoutingTableOptions {
  appsDomain: string;
  /** Every this many ms the whole table is read again (bounds what a lost notification costs). */
  revalidateMs: number;
  log: Logger;
}

/**
 * The projects the table serves, as `p`: active, with a live release or a preview that has not expired by the time
 * bound to its one parameter.
 */
const PREVIEWED =
  "exists (select 1 from deployments v where v.project_id = p.id and v.status = 'preview' and v.expires_at > ?)";
const SERVED = `p.status = 'active' and (p.live_deployment_id is not null or ${PREVIEWED})`;

/** A project's columns the table needs. */
type ProjectRow = Record<'id' | 'slug' | 'visibility' | 'preview_visibility', string> &
  Record<'live_deployment_id' | 'access_password_hash', string | null>;

/**
 * HostRoutes from memory: host → live release of every active project with a live release, on its
 * own host and its active customer domains, and each preview that has not expired on its preview host
 * (`<slug>--<short id>`), with what the private gate needs. Loaded whole at
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
    const release = name ? this.byHost.get(name) : undefined;
    // A preview stops at its expiry, whenever the worker's sweep takes it down.
    if (!release || (release.expiresAt !== undefined && release.expiresAt <= Date.now())) return null;
    return release;
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
   * Shows this process's loaded table the change of project `projectId` inside `tx`, a transaction about to commit
   * (the Deploy stage's switch): the switch is served here from the moment it commits, never after the operation
   * reads succeeded. With `live` (the release it switches to), a project whose entries are all live ones has them
   * pointed at that release in memory: a switch changes nothing else (hosts, visibility and proofs stay; a change of
   * those is announced, and its reload runs before this). Otherwise the project is read inside `tx`. Other processes
   * learn it from the announcement after the commit, which this process reads too; a transaction that does not
   * commit is undone by the reload its caller announces then.
   */
  async preview(projectId: string, tx: EntityManager, live?: Pick<LiveRelease, 'deploymentId' | 'target'>) {
    if (!this.unsubscribe) return;
    const run = this.chain.then(async () => {
      if (!live || !this.switched(projectId, live)) await this.load(projectId, tx);
    });
    this.chain = run.catch(() => undefined);
    await run;
  }

  /** Points the entries of project `projectId` at release `live`; false when it has none, or a preview's. */
  private switched(projectId: string, live: Pick<LiveRelease, 'deploymentId' | 'target'>): boolean {
    const hosts = this.hostsOf.get(projectId) ?? [];
    const entries = hosts.map((host) => this.byHost.get(host));
    if (!entries.length || entries.some((e) => !e || e.expiresAt !== undefined)) return false;
    // One new entry for each old one (the project's hosts share theirs); a host another project holds is not its.
    const next = new Map(entries.map((e) => [e!, { ...e!, deploymentId: live.deploymentId, target: live.target }]));
    hosts.forEach((host, i) => {
      if (entries[i]!.projectId === projectId) this.byHost.set(host, next.get(entries[i]!)!);
    });
    return true;
  }

  private async load(projectId: string | null, em: EntityManager): Promise<void> {
    const platform = em.getPlatform();
    const now = platform.processDateProperty(new Date());
    // Plain queries (a reload follows every deploy), each joining the projects served: no list of ids is bound,
    // whatever their number. One after another: in a transaction (preview) they share one connection.
    const rows = <T>(select: string, where = '', more: unknown[] = []) =>
      queryRows<T>(em, `${select} where ${projectId ? 'p.id = ? and ' : ''}${SERVED}${where}`, [
        ...(projectId ? [projectId] : []),
        now,
        ...more,
      ]);
    const json = (value: unknown) => platform.convertJsonToJSValue(value) as ReleaseTarget | null;
    const previews = (
      await rows<Record<'id' | 'project_id' | 'operation_id' | 'expires_at', string> & { target: unknown }>(
        'select d.id, d.project_id, d.operation_id, d.target, d.expires_at ' +
          'from deployments d join projects p on p.id = d.project_id',
        " and d.status = 'preview' and d.expires_at > ?",
        [now],
      )
    ).map((d) => ({ ...d, target: json(d.target), expiresAt: (platform.parseDate(d.expires_at) as Date).getTime() }));
    const projects = await rows<ProjectRow>(
      'select p.id, p.slug, p.visibility, p.preview_visibility, p.live_deployment_id, p.access_password_hash ' +
        'from projects p',
    );
    const deployments = await rows<{ id: string; target: unknown }>(
      'select d.id, d.target from deployments d join projects p on p.live_deployment_id = d.id',
    );
    const domains = await rows<{ project_id: string; hostname: string }>(
      'select m.project_id, m.hostname from domains m join projects p on p.id = m.project_id',
      " and m.status = 'active'",
    );
    // Grants prove access to the private entries of a private project only (its live release, its previews behind
    // the gate): on a draft or public project they are kept, unused, as the API says (in_effect false), and its
    // previews behind the gate open with the access password alone.
    const grants = await rows<{ id: string; project_id: string }>(
      'select g.id, g.project_id from access_grants g join projects p on p.id = g.project_id',
      " and p.visibility = 'private'",
    );
    const targets = new Map(deployments.map((d) => [d.id, json(d.target)]));
    const grantsOf = byProject(grants);
    const domainsOf = byProject(domains);
    const previewsOf = byProject(previews);
    const apps = this.options.appsDomain.toLowerCase();
    const entries = new Map<string, [string, LiveRelease][]>();
    for (const p of projects) {
      const proofs = () =>
        accessProofs(
          p.access_password_hash,
          (grantsOf.get(p.id) ?? []).map((g) => g.id),
        );
      const routes: [string, LiveRelease][] = [];
      const target = p.live_deployment_id ? targets.get(p.live_deployment_id) : null;
      if (target) {
        const release: LiveRelease = {
          projectId: p.id,
          deploymentId: p.live_deployment_id!,
          visibility: p.visibility,
          target,
          accessProofs: p.visibility === 'private' ? proofs() : new Set(),
        };
        routes.push([`${p.slug}.${apps}`, release]);
        for (const d of domainsOf.get(p.id) ?? []) routes.push([d.hostname.toLowerCase(), release]);
      }
      // A public preview is served like a draft (never indexed); a private one behind the project's gate.
      const previewVisibility = p.preview_visibility === 'public' ? 'draft' : 'private';
      for (const d of previewsOf.get(p.id) ?? []) {
        if (!d.target) continue;
        routes.push([
          `${previewLabel(p.slug, d.operation_id)}.${apps}`,
          {
            projectId: p.id,
            deploymentId: d.id,
            visibility: previewVisibility,
            target: d.target,
            accessProofs: previewVisibility === 'private' ? proofs() : new Set(),
            expiresAt: d.expiresAt,
          },
        ]);
      }
      if (routes.length) entries.set(p.id, routes);
    }

    if (projectId) {
      for (const host of this.hostsOf.get(projectId) ?? []) this.byHost.delete(host);
      this.hostsOf.delete(projectId);
      const routes = entries.get(projectId);
      if (routes) this.put(projectId, routes);
      return;
    }
    const byHost = new Map<string, LiveRelease>();
    const hostsOf = new Map<string, string[]>();
    for (const [id, routes] of entries) {
      hostsOf.set(
        id,
        routes.map(([host]) => host),
      );
      for (const [host, release] of routes) if (!byHost.has(host)) byHost.set(host, release);
    }
    this.byHost = byHost;
    this.hostsOf = hostsOf;
  }

  private put(projectId: string, routes: [string, LiveRelease][]): void {
    this.hostsOf.set(
      projectId,
      routes.map(([host]) => host),
    );
    for (const [host, release] of routes) if (!this.byHost.has(host)) this.byHost.set(host, release);
  }
}

/** `rows` grouped by their project, in their order. */
function byProject<T extends { project_id: string }>(rows: T[]): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const row of rows) {
    const group = groups.get(row.project_id);
    if (group) group.push(row);
    else groups.set(row.project_id, [row]);
  }
  return groups;
}
