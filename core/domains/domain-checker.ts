import { randomUUID } from 'node:crypto';
import { UniqueConstraintViolationException, type EntityManager } from '@mikro-orm/core';
import type { HoistConfig } from '../../config/schema.js';
import { Domain } from '../entities/domain.js';
import { Project } from '../entities/project.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import type { Clock } from '../ports/clock.js';
import { routesChanged } from '../deployments/host-routes.js';
import { DnsLookupError, type DnsResolver } from '../ports/dns-resolver.js';
import {
  afterCheck,
  challengeName,
  displacedMessage,
  HOLDING_STATES,
  lostMessage,
  type CheckOutcome,
  type Findings,
} from './domain-states.js';
import { token } from '../tokens.js';

export const DOMAIN_CHECKER = token<DomainChecker>('hoist.DomainChecker');

type Settings = Pick<
  HoistConfig,
  | 'appsDomain'
  | 'dnsTimeoutMs'
  | 'dnsTries'
  | 'domainCheckSeconds'
  | 'domainCheckMaxSeconds'
  | 'domainActiveCheckSeconds'
  | 'domainPendingTtlSeconds'
>;

/**
 * Checks customer domains' DNS records and moves them through their states (domain-states.ts).
 * A check first claims the row with a conditional update (claimedBy, claimedUntil), so two checkers
 * (workers, or a worker and a verify call) never check one domain at once; the result is written
 * only while the claim still holds.
 *
 * One domain at a time holds a hostname (its `ownedHostname`, unique): the first check that finds
 * a claim's token in the TXT record gets it, and the other projects' pending claims of it fail at
 * once with the reason. A check that finds this domain's token and not the holder's takes the name
 * over (the holder fails). Scheduled checks remove claims still pending after domainPendingTtlSeconds.
 */
export class DomainChecker {
  constructor(
    private readonly em: EntityManager,
    private readonly dns: DnsResolver,
    private readonly clock: Clock,
    private readonly config: Settings,
    /** Where a change of what a hostname serves is announced to every edge. */
    private readonly changes?: ChangeFeed,
  ) {}

  /** How long a claim lasts: room for both lookups with every try timing out. */
  get leaseMs(): number {
    return 2 * this.config.dnsTimeoutMs * this.config.dnsTries * 2 + 10_000;
  }

  /**
   * Checks every domain due (next_check_at passed) that no one holds, up to `limit`, oldest due
   * first, all at once; returns how many it checked. At once: a check mostly waits on name servers,
   * and one whose servers never answer (any account can add names of a zone it runs) takes a whole
   * DNS timeout; one after another, one account's such domains held every other domain's check for
   * the sum of theirs. Throws the first error of a check, once every check ended.
   */
  async checkDue(limit = 20): Promise<number> {
    const now = this.clock.now();
    const due = await this.em.fork().find(
      Domain,
      {
        nextCheckAt: { $lte: now },
        status: { $ne: 'failed' },
        $or: [{ claimedUntil: null }, { claimedUntil: { $lt: now } }],
      },
      { fields: ['id'], orderBy: { nextCheckAt: 'asc' }, limit },
    );
    const checks = await Promise.allSettled(due.map(({ id }) => this.check(id, { onlyDue: true })));
    const failed = checks.find((c) => c.status === 'rejected');
    if (failed) throw failed.reason;
    return checks.filter((c) => c.status === 'fulfilled' && c.value).length;
  }

  /**
   * Claims and checks one domain now. Returns the domain as written, or null when it is gone (a
   * scheduled check removes an expired pending claim) or another checker holds it (or, with
   * onlyDue, when it is no longer due).
   */
  async check(id: string, opts: { onlyDue?: boolean } = {}): Promise<Domain | null> {
    const em = this.em.fork();
    const now = this.clock.now();
    const claim = randomUUID();
    const claimed = await em.nativeUpdate(
      Domain,
      {
        id,
        ...(opts.onlyDue && { nextCheckAt: { $lte: now } }),
        $or: [{ claimedUntil: null }, { claimedUntil: { $lt: now } }],
      },
      { claimedBy: claim, claimedUntil: new Date(now.getTime() + this.leaseMs) },
    );
    if (claimed !== 1) return null;
    try {
      const domain = await em.findOneOrFail(Domain, { id });
      const project = await em.findOne(Project, { id: domain.projectId }, { fields: ['slug'] });
      const target = `${project?.slug ?? '-'}.${this.config.appsDomain}`.toLowerCase();
      const findings = await this.lookup(domain.hostname);
      const holder = await em.findOne(
        Domain,
        { ownedHostname: domain.hostname, id: { $ne: id } },
        { fields: ['id', 'token', 'projectId'], disableIdentityMap: true },
      );
      const checkedAt = this.clock.now();
      const schedule = {
        checkSeconds: this.config.domainCheckSeconds,
        maxSeconds: this.config.domainCheckMaxSeconds,
        activeSeconds: this.config.domainActiveCheckSeconds,
      };
      let outcome = afterCheck({ ...domain, target }, findings, checkedAt, schedule, holder?.token ?? null);
      const expired = domain.createdAt.getTime() + this.config.domainPendingTtlSeconds * 1000 <= checkedAt.getTime();
      if (opts.onlyDue && outcome.status === 'pending' && expired) {
        await em.nativeDelete(Domain, { id, claimedBy: claim });
        return null;
      }
      const holds = HOLDING_STATES.includes(outcome.status);
      // This domain proved control while another held the name without its token in the record: it takes the name over.
      if (holds && holder)
        await em.nativeUpdate(
          Domain,
          { id: holder.id, ownedHostname: domain.hostname },
          this.failed(displacedMessage(domain.hostname)),
        );
      const write = (o: CheckOutcome) =>
        em.nativeUpdate(
          Domain,
          { id, claimedBy: claim },
          {
            ...o,
            ownedHostname: HOLDING_STATES.includes(o.status) ? domain.hostname : null,
            claimedBy: null,
            claimedUntil: null,
            updatedAt: this.clock.now(),
          },
        );
      let written: number;
      try {
        written = await write(outcome);
      } catch (err) {
        if (!(err instanceof UniqueConstraintViolationException)) throw err;
        // Another project's check got the name between our look and our write: it was first.
        outcome = {
          ...outcome,
          status: 'failed',
          message: lostMessage(domain.hostname),
          verifiedAt: domain.verifiedAt,
          activatedAt: domain.activatedAt,
        };
        written = await write(outcome);
      }
      if (written !== 1) return null;
      // The edges stop or start serving the name: this project's, and a displaced holder's.
      if (outcome.status !== domain.status) await routesChanged(this.changes, domain.projectId);
      if (holds && holder) await routesChanged(this.changes, holder.projectId);
      if (holds && !domain.ownedHostname) {
        // The name is this project's now: every other claim of it fails, with the reason.
        await em.nativeUpdate(
          Domain,
          { hostname: domain.hostname, id: { $ne: id }, status: { $nin: ['failed', ...HOLDING_STATES] } },
          this.failed(lostMessage(domain.hostname)),
        );
      }
      return Object.assign(domain, outcome, {
        ownedHostname: holds ? domain.hostname : null,
        claimedBy: null,
        claimedUntil: null,
      });
    } catch (err) {
      await em.nativeUpdate(Domain, { id, claimedBy: claim }, { claimedBy: null, claimedUntil: null });
      throw err;
    }
  }

  /** What a domain that lost its hostname (or never got it) is written with. */
  private failed(message: string) {
    return {
      status: 'failed',
      message,
      ownedHostname: null,
      failures: 0,
      claimedBy: null,
      claimedUntil: null,
      updatedAt: this.clock.now(),
    };
  }

  private async lookup(hostname: string): Promise<Findings> {
    try {
      const [txt, cname] = await Promise.all([
        this.dns.resolveTxt(challengeName(hostname)),
        this.dns.resolveCname(hostname),
      ]);
      return { ok: true, txt, cname };
    } catch (err) {
      if (err instanceof DnsLookupError) return { ok: false, reason: err.reason };
      throw err;
    }
  }
}
