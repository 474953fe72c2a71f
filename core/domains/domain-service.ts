import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import type { HoistConfig } from '../../config/schema.js';
import type { EntitlementService } from '../billing/entitlement-service.js';
import { Account } from '../entities/account.js';
import { Domain } from '../entities/domain.js';
import { underOwnerLock } from '../billing/owner-lock.js';
import { conflict, notFound } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import { isUuid } from '../projects/keyset-cursor.js';
import type { ProjectService } from '../projects/project-service.js';
import type { DomainChecker } from './domain-checker.js';
import { domainView, type DomainView } from './domain-view.js';
import { checkHostname } from './hostname-rules.js';
import { token } from '../tokens.js';

export const DOMAIN_SERVICE = token<DomainService>('hoist.DomainService');

type Settings = Pick<
  HoistConfig,
  'appsDomain' | 'publicUrl' | 'appsScheme' | 'appsPort' | 'edgePort' | 'domainCheckSeconds'
>;

/** A project's customer subdomains: list, add, read, check now, remove. */
export class DomainService {
  /** The verify calls under way in this process, by domain: a call of a domain being verified shares that check. */
  private readonly verifying = new Map<string, Promise<DomainView>>();

  constructor(
    private readonly em: EntityManager,
    private readonly projects: ProjectService,
    private readonly entitlements: EntitlementService,
    private readonly checker: DomainChecker,
    private readonly clock: Clock,
    private readonly config: Settings,
  ) {}

  /** The project's domains, oldest first; not_found for another account's project. */
  async list(accountId: string, projectId: string): Promise<DomainView[]> {
    const project = await this.projects.get(accountId, projectId);
    const rows = await this.em
      .fork()
      .find(Domain, { projectId: project.id }, { orderBy: { createdAt: 'asc', id: 'asc' } });
    return rows.map((d) => domainView(this.config, d, project.slug));
  }

  /**
   * Adds a subdomain as `pending` with a fresh challenge token; the first check is due after
   * domainCheckSeconds (or at once with `verify`). Other projects' claims of the hostname do not
   * stand in the way, nor does a project holding it: whoever proves control of the DNS gets it
   * (domain-states.ts). Throws not_found, invalid_request (see checkHostname), plan_restricted
   * (customer_subdomains, counted account-wide) or conflict (this project has the hostname already).
   */
  async add(accountId: string, projectId: string, hostname: unknown): Promise<DomainView> {
    const project = await this.projects.get(accountId, projectId);
    const name = checkHostname(hostname, {
      appsDomain: this.config.appsDomain,
      apiHost: URL.parse(this.config.publicUrl ?? '')?.hostname,
    });
    // Under the account's lock: concurrent adds cannot pass the plan's count together.
    const domain = await underOwnerLock(this.em, Account, accountId, async (tx) => {
      await this.entitlements.assertWithin(accountId, 'customer_subdomains', await tx.count(Domain, { accountId }));
      const mine = await tx.findOne(Domain, { hostname: name, projectId: project.id }, { fields: ['id'] });
      if (mine) throw this.taken(name, mine.id);
      const held = (await tx.count(Domain, { ownedHostname: name })) > 0;
      const now = this.clock.now();
      const row = Object.assign(new Domain(), {
        accountId,
        projectId: project.id,
        hostname: name,
        token: `hoist-${randomBytes(20).toString('hex')}`,
        message: held
          ? `${name} is in use by another project: it becomes this project's once the TXT ` +
            `record holds this domain's token and no longer the other's. Add both records, ` +
            `then call verify or wait for the next check.`
          : 'Waiting for the DNS records: add both, then call verify or wait for the next check.',
        nextCheckAt: new Date(now.getTime() + this.config.domainCheckSeconds * 1000),
        createdAt: now,
        updatedAt: now,
      });
      try {
        await tx.insert(row);
      } catch (err) {
        // The account's lock serializes its adds, so this is a safety net: the first one stands.
        if (err instanceof UniqueConstraintViolationException) throw this.taken(name, null);
        throw err;
      }
      return row;
    });
    return domainView(this.config, domain, project.slug);
  }

  /** One domain of the project; not_found when the project or the domain is not there. */
  async get(accountId: string, projectId: string, domainId: string): Promise<DomainView> {
    const project = await this.projects.get(accountId, projectId);
    return domainView(this.config, await this.row(project.id, domainId), project.slug);
  }

  /**
   * Checks the domain's records now and answers its new state. When another checker holds it, waits
   * (up to one claim lease) for that check to end and checks again. Calls of one domain at once share one check:
   * each waiting call polled the database ten times a second, so a few hundred calls of a domain whose name
   * servers never answer took the database's connections from every other account.
   */
  async verify(accountId: string, projectId: string, domainId: string): Promise<DomainView> {
    const project = await this.projects.get(accountId, projectId);
    const domain = await this.row(project.id, domainId);
    let check = this.verifying.get(domain.id);
    if (!check) {
      check = this.checkNow(project.id, project.slug, domain.id).finally(() => this.verifying.delete(domain.id));
      this.verifying.set(domain.id, check);
    }
    return check;
  }

  /** Checks domain `domainId` of the project now: see verify. */
  private async checkNow(projectId: string, slug: string, domainId: string): Promise<DomainView> {
    const deadline = this.clock.now().getTime() + this.checker.leaseMs;
    for (;;) {
      const checked = await this.checker.check(domainId);
      if (checked) return domainView(this.config, checked, slug);
      if (this.clock.now().getTime() > deadline) break;
      await sleep(100);
    }
    return domainView(this.config, await this.row(projectId, domainId), slug);
  }

  /** Removes the domain (the edge stops serving it at once); not_found when it is not there. */
  async remove(accountId: string, projectId: string, domainId: string): Promise<void> {
    const project = await this.projects.get(accountId, projectId);
    const n = isUuid(domainId) ? await this.em.fork().nativeDelete(Domain, { id: domainId, projectId: project.id }) : 0;
    if (n === 0) throw notFound('Domain');
    await this.projects.routesChanged(project.id);
  }

  private async row(projectId: string, domainId: string): Promise<Domain> {
    const domain = isUuid(domainId) ? await this.em.fork().findOne(Domain, { id: domainId, projectId }) : null;
    if (!domain) throw notFound('Domain');
    return domain;
  }

  private taken(hostname: string, domainId: string | null) {
    return conflict(`${hostname} is already a domain of this project`, {
      field: 'hostname',
      hostname,
      ...(domainId && { domain_id: domainId }),
    });
  }
}
