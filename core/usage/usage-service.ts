import type { EntityManager } from '@mikro-orm/core';
import { ProjectUsage } from '../entities/project-usage.js';
import { queryRows, writeRows } from '../entities/plain-sql.js';
import { invalid } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import type { ProjectService } from '../projects/project-service.js';
import { token } from '../tokens.js';

export const USAGE_SERVICE = token<UsageService>('hoist.UsageService');

/** Days of usage kept; older hours are purged. */
export const USAGE_DAYS = 90;
/** The longest span shown hour by hour, in days. */
export const HOURLY_DAYS = 7;
const HOUR_MS = 3_600_000;

/** The hour (hours since the Unix epoch, UTC) that epoch milliseconds `ms` fall in. */
export const hourOf = (ms: number) => Math.floor(ms / HOUR_MS);

/** What one edge counted for a project in one hour since its last flush. */
export type UsageCount = Pick<
  ProjectUsage,
  'projectId' | 'hour' | 'requests' | 'bytes' | 'status2xx' | 'status3xx' | 'status4xx' | 'status5xx'
>;

/** Requests, bytes and requests by status class. */
export interface UsageFigures {
  requests: number;
  bytes: number;
  status: { '2xx': number; '3xx': number; '4xx': number; '5xx': number };
}

/** A project's usage as the API shows it: totals, and one bucket per day or hour (UTC), oldest first, none missing. */
export interface UsageView {
  project_id: string;
  granularity: 'day' | 'hour';
  from: string;
  to: string;
  totals: UsageFigures;
  buckets: (UsageFigures & { start: string })[];
}

/** The figures of a usage row, which flushes add up. */
export const USAGE_COLUMNS = ['requests', 'bytes', 'status2xx', 'status3xx', 'status4xx', 'status5xx'] as const;
// One statement adds a flush's counts to every row at once; a row that is not there yet starts from them.
const UPSERT_HEAD = `insert into project_usage (project_id, hour, ${USAGE_COLUMNS.join(', ')}) values `;
const UPSERT_TAIL = ` on conflict (project_id, hour) do update set ${USAGE_COLUMNS.map(
  (c) => `${c} = project_usage.${c} + excluded.${c}`,
).join(', ')}`;
const CHUNK = 200;

interface Row {
  hour: number | string;
  requests: number | string;
  bytes: number | string;
  status2xx: number | string;
  status3xx: number | string;
  status4xx: number | string;
  status5xx: number | string;
}

const zero = (): UsageFigures => ({ requests: 0, bytes: 0, status: { '2xx': 0, '3xx': 0, '4xx': 0, '5xx': 0 } });

function add(to: UsageFigures, r: Row): void {
  to.requests += Number(r.requests);
  to.bytes += Number(r.bytes);
  to.status['2xx'] += Number(r.status2xx);
  to.status['3xx'] += Number(r.status3xx);
  to.status['4xx'] += Number(r.status4xx);
  to.status['5xx'] += Number(r.status5xx);
}

/**
 * Usage of projects (Netlify's and Vercel's usage and analytics figures): what the edge served, per project and hour.
 * Edges add their counts (`record`); the API shows a project's days or hours (`view`); the worker purges hours older
 * than USAGE_DAYS. Nothing about a visitor is kept: no address, no path, no agent.
 */
export class UsageService {
  constructor(
    private readonly em: EntityManager,
    private readonly projects: Pick<ProjectService, 'get'>,
    private readonly clock: Clock,
  ) {}

  /**
   * Adds `counts` to the stored hours, a statement per CHUNK rows, all in one transaction: a failure adds nothing, so
   * the caller may add them again without counting any twice.
   */
  async record(counts: UsageCount[]): Promise<void> {
    await this.em.fork().transactional(async (tx) => {
      for (let i = 0; i < counts.length; i += CHUNK) {
        const chunk = counts.slice(i, i + CHUNK);
        const values = chunk.map(() => `(?, ?, ${USAGE_COLUMNS.map(() => '?').join(', ')})`).join(', ');
        const params = chunk.flatMap((c) => [c.projectId, c.hour, ...USAGE_COLUMNS.map((k) => c[k])]);
        await writeRows(tx, UPSERT_HEAD + values + UPSERT_TAIL, params);
      }
    });
  }

  /**
   * The usage of the account's project over the last `days` (1 to USAGE_DAYS, 7 by default), by `granularity` (`day`,
   * the default, or `hour` over HOURLY_DAYS at most), today's (or this hour's) bucket last. Throws not_found (another
   * account's project) or invalid_request (field days or granularity).
   */
  async view(
    accountId: string,
    projectId: string,
    query: { days?: unknown; granularity?: unknown },
  ): Promise<UsageView> {
    const days = query.days ?? 7;
    if (typeof days !== 'number' || !Number.isInteger(days) || days < 1 || days > USAGE_DAYS)
      throw invalid(`days must be a whole number from 1 to ${USAGE_DAYS}`, { field: 'days' });
    const granularity = query.granularity ?? 'day';
    if (granularity !== 'day' && granularity !== 'hour')
      throw invalid('granularity must be day or hour', { field: 'granularity' });
    if (granularity === 'hour' && days > HOURLY_DAYS)
      throw invalid(`hour by hour covers ${HOURLY_DAYS} days at most; ask for days=${HOURLY_DAYS} or fewer`, {
        field: 'days',
      });
    const project = await this.projects.get(accountId, projectId);
    const now = hourOf(this.clock.now().getTime());
    const step = granularity === 'day' ? 24 : 1;
    // The first hour of the first bucket: a day starts at 00:00 UTC.
    const first = granularity === 'day' ? (Math.floor(now / 24) - days + 1) * 24 : now - days * 24 + 1;
    const rows = await queryRows<Row>(
      this.em.fork(),
      `select hour, ${USAGE_COLUMNS.join(', ')} from project_usage where project_id = ? and hour >= ?`,
      [project.id, first],
    );
    const buckets = Array.from({ length: Math.floor((now - first) / step) + 1 }, (_, i) => ({
      start: new Date((first + i * step) * HOUR_MS).toISOString(),
      ...zero(),
    }));
    const totals = zero();
    for (const r of rows) {
      const bucket = buckets[Math.floor((Number(r.hour) - first) / step)];
      if (!bucket) continue;
      add(bucket, r);
      add(totals, r);
    }
    return {
      project_id: project.id,
      granularity,
      from: buckets[0].start,
      to: new Date((now + 1) * HOUR_MS).toISOString(),
      totals,
      buckets,
    };
  }

  /** Removes the hours older than USAGE_DAYS; resolves how many rows went. */
  async purge(): Promise<number> {
    const before = hourOf(this.clock.now().getTime()) - USAGE_DAYS * 24;
    return writeRows(this.em.fork(), 'delete from project_usage where hour < ?', [before]);
  }
}

/** Deletes a project's usage (its deletion). */
export async function deleteUsageOf(em: EntityManager, projectId: string): Promise<void> {
  await em.nativeDelete(ProjectUsage, { projectId });
}
