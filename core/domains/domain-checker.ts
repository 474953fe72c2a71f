import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/core';
import type { HoistConfig } from '../../config/schema.js';
import { Domain } from '../entities/domain.js';
import { Project } from '../entities/project.js';
import type { Clock } from '../ports/clock.js';
import { DnsLookupError, type DnsResolver } from '../ports/dns-resolver.js';
import { afterCheck, challengeName, type Findings } from './domain-states.js';

export const DOMAIN_CHECKER = Symbol.for('hoist.DomainChecker');

type Settings = Pick<HoistConfig, 'appsDomain' | 'dnsTimeoutMs' | 'dnsTries' | 'domainCheckSeconds' | 'domainCheckMaxSeconds' | 'domainActiveCheckSeconds'>;

/**
 * Checks customer domains' DNS records and moves them through their states (domain-states.ts).
 * A check first claims the row with a conditional update (claimedBy, claimedUntil), so two checkers
 * (workers, or a worker and a verify call) never check one domain at once; the result is written
 * only while the claim still holds.
 */
export class DomainChecker {
  constructor(
    private readonly em: EntityManager,
    private readonly dns: DnsResolver,
    private readonly clock: Clock,
    private readonly config: Settings,
  ) {}

  /** How long a claim lasts: room for both lookups with every try timing out. */
  get leaseMs(): number {
    return 2 * this.config.dnsTimeoutMs * this.config.dnsTries * 2 + 10_000;
  }

  /**
   * Checks every domain due (next_check_at passed) that no one holds, up to `limit`, oldest due
   * first; returns how many it checked.
   */
  async checkDue(limit = 20): Promise<number> {
    const now = this.clock.now();
    const due = await this.em.fork().find(
      Domain,
      { nextCheckAt: { $lte: now }, $or: [{ claimedUntil: null }, { claimedUntil: { $lt: now } }] },
      { fields: ['id'], orderBy: { nextCheckAt: 'asc' }, limit },
    );
    let n = 0;
    for (const { id } of due) if (await this.check(id, { onlyDue: true })) n++;
    return n;
  }

  /**
   * Claims and checks one domain now. Returns the domain as written, or null when it is gone or
   * another checker holds it (or, with onlyDue, when it is no longer due).
   */
  async check(id: string, opts: { onlyDue?: boolean } = {}): Promise<Domain | null> {
    const em = this.em.fork();
    const now = this.clock.now();
    const claim = randomUUID();
    const claimed = await em.nativeUpdate(
      Domain,
      { id, ...(opts.onlyDue && { nextCheckAt: { $lte: now } }), $or: [{ claimedUntil: null }, { claimedUntil: { $lt: now } }] },
      { claimedBy: claim, claimedUntil: new Date(now.getTime() + this.leaseMs) },
    );
    if (claimed !== 1) return null;
    try {
      const domain = await em.findOneOrFail(Domain, { id });
      const project = await em.findOne(Project, { id: domain.projectId }, { fields: ['slug'] });
      const target = `${project?.slug ?? '-'}.${this.config.appsDomain}`.toLowerCase();
      const findings = await this.lookup(domain.hostname);
      const outcome = afterCheck({ ...domain, target }, findings, this.clock.now(), {
        checkSeconds: this.config.domainCheckSeconds,
        maxSeconds: this.config.domainCheckMaxSeconds,
        activeSeconds: this.config.domainActiveCheckSeconds,
      });
      const written = await em.nativeUpdate(Domain, { id, claimedBy: claim }, { ...outcome, claimedBy: null, claimedUntil: null, updatedAt: this.clock.now() });
      return written === 1 ? Object.assign(domain, outcome, { claimedBy: null, claimedUntil: null }) : null;
    } catch (err) {
      await em.nativeUpdate(Domain, { id, claimedBy: claim }, { claimedBy: null, claimedUntil: null });
      throw err;
    }
  }

  private async lookup(hostname: string): Promise<Findings> {
    try {
      const [txt, cname] = await Promise.all([this.dns.resolveTxt(challengeName(hostname)), this.dns.resolveCname(hostname)]);
      return { ok: true, txt, cname };
    } catch (err) {
      if (err instanceof DnsLookupError) return { ok: false, reason: err.reason };
      throw err;
    }
  }
}
