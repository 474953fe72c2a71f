import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { STAGE_TOPIC } from '../../core/deployments/operation-store.js';
import { QUEUE, type Queue } from '../../core/ports/queue.js';
import type { Kernel } from '../kernel.js';

/** The Prometheus metrics of one kernel: every role in its process records into the same registry. */
export interface Metrics {
  registry: Registry;
  /** Requests answered, by role, method, route pattern and status (count them through `tally`). */
  requests: Counter<'role' | 'method' | 'route' | 'status'>;
  requestSeconds: Histogram<'role' | 'method' | 'route'>;
  /** Counts answered requests in memory; `requests` and `requestSeconds` take them in when scraped. */
  tally: RequestTally;
  /** Time a worker spent on one delivery of a stage, by stage and outcome (done or error). */
  stageSeconds: Histogram<'stage' | 'outcome'>;
}

const made = new WeakMap<Kernel, Metrics>();

/**
 * The kernel's metrics, made on first use. Counts that live in shared backends (operations by
 * status, live releases, queue depth) are read when scraped, so every process reports the same
 * figures whichever role it runs.
 */
export function metricsOf(kernel: Kernel): Metrics {
  let m = made.get(kernel);
  if (m) return m;
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'hoist_' });
  const rows = (sql: string) => kernel.orm.em.fork().getConnection().execute<Record<string, string | number>[]>(sql);
  new Gauge({
    name: 'hoist_operations',
    help: 'Operations by kind and status.',
    labelNames: ['kind', 'status'],
    registers: [registry],
    async collect() {
      this.reset();
      for (const r of await rows('select kind, status, count(*) as n from operations group by kind, status')) {
        this.set({ kind: String(r.kind), status: String(r.status) }, Number(r.n));
      }
    },
  });
  new Gauge({
    name: 'hoist_live_releases',
    help: 'Releases the edge serves now (one per project with a live deployment).',
    registers: [registry],
    async collect() {
      const [row] = await rows("select count(*) as n from deployments where status = 'live'");
      this.set(Number(row?.n ?? 0));
    },
  });
  new Gauge({
    name: 'hoist_queue_jobs',
    help: 'Stage jobs in the queue, by state (waiting or running).',
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const depth = await kernel.get<Queue>(QUEUE).depth?.(STAGE_TOPIC);
      if (!depth) return;
      this.set({ state: 'waiting' }, depth.waiting);
      this.set({ state: 'running' }, depth.running);
    },
  });
  const { requests, requestSeconds } = requestMetrics(registry);
  m = {
    registry,
    requests,
    requestSeconds,
    tally: new RequestTally(requests, requestSeconds),
    stageSeconds: new Histogram({
      name: 'hoist_stage_duration_seconds',
      help: 'Time a worker spent on one delivery of a stage.',
      labelNames: ['stage', 'outcome'],
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800],
      registers: [registry],
    }),
  };
  made.set(kernel, m);
  return m;
}

/** Upper bounds of the request duration histogram's buckets, in seconds. */
const REQUEST_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/** The request count and duration metrics, in `registry`. */
export function requestMetrics(registry: Registry) {
  return {
    requests: new Counter({
      name: 'hoist_http_requests_total',
      help: 'HTTP requests answered.',
      labelNames: ['role', 'method', 'route', 'status'] as const,
      registers: [registry],
    }),
    requestSeconds: new Histogram({
      name: 'hoist_http_request_duration_seconds',
      help: 'Time to answer an HTTP request.',
      labelNames: ['role', 'method', 'route'] as const,
      buckets: REQUEST_BUCKETS,
      registers: [registry],
    }),
  };
}

type RequestLabels = { role: string; method: string; route: string };

/** The durations of what one role, method and route answered since the last scrape. */
interface Tallied {
  labels: RequestLabels;
  /** Observations per bucket (non-cumulative), the last one past every bound. */
  buckets: number[];
  sum: number;
  count: number;
  /** Requests answered by status since the last fold. */
  answered: Map<number, Answered>;
}

interface Answered {
  labels: RequestLabels & { status: string };
  n: number;
}

/** A prom-client histogram's series, as prom-client 15 keeps them (see addObservations). */
interface HistogramSeries {
  labels: Record<string, string | number>;
  bucketValues: Record<number, number>;
  sum: number;
  count: number;
}

/**
 * Answered requests counted in plain memory, a few additions each, and folded into the request counter and
 * histogram when they are read (a scrape): the figures are the ones `inc` and `observe` per request would give,
 * without their labels' hashing on every request.
 */
export class RequestTally {
  /** By role, method and route: labels are looked up, not joined into a key, on every request. */
  private readonly tallies = new Map<string, Map<string, Map<string, Tallied>>>();
  /** The same, in the order first seen (the histogram's series are made in that order, as `observe` makes them). */
  private readonly seen: Tallied[] = [];
  /** Requests answered by role, method, route and status since the last fold, in the order first seen. */
  private readonly answered: Answered[] = [];

  constructor(
    private readonly requests: Counter<'role' | 'method' | 'route' | 'status'>,
    private readonly seconds: Histogram<'role' | 'method' | 'route'>,
  ) {
    const fold = () => this.fold();
    // Whichever of the two is read first takes in what was counted.
    Object.assign(requests, { collect: fold });
    Object.assign(seconds, { collect: fold });
  }

  /** One request of `role` answered `status` for `method` on `route` in `seconds`. */
  count(role: string, method: string, route: string, status: number, seconds: number): void {
    let byMethod = this.tallies.get(role);
    if (!byMethod) this.tallies.set(role, (byMethod = new Map()));
    let byRoute = byMethod.get(method);
    if (!byRoute) byMethod.set(method, (byRoute = new Map()));
    let t = byRoute.get(route);
    if (!t) {
      const buckets = new Array<number>(REQUEST_BUCKETS.length + 1).fill(0);
      byRoute.set(route, (t = { labels: { role, method, route }, buckets, sum: 0, count: 0, answered: new Map() }));
      this.seen.push(t);
    }
    const answered = t.answered.get(status);
    if (answered) answered.n++;
    else {
      const first = { labels: { role, method, route, status: String(status) }, n: 1 };
      t.answered.set(status, first);
      this.answered.push(first);
    }
    let i = 0;
    while (i < REQUEST_BUCKETS.length && seconds > REQUEST_BUCKETS[i]) i++;
    t.buckets[i]++;
    t.sum += seconds;
    t.count++;
  }

  /** Adds what was counted since the last fold to the counter and the histogram, series in the order first seen. */
  fold(): void {
    for (const { labels, n } of this.answered) this.requests.inc(labels, n);
    this.answered.length = 0;
    for (const t of this.seen) {
      t.answered.clear();
      if (!t.count) continue;
      addObservations(this.seconds, t.labels, t.buckets, t.sum, t.count);
      t.buckets.fill(0);
      t.sum = 0;
      t.count = 0;
    }
  }
}

/**
 * Adds `count` observations summing to `sum`, `buckets[i]` of them in bucket i, to the series `labels` of `histogram`.
 * prom-client has no call for that: one observation of 0 makes the series (if new), which is then found in the
 * histogram's own map and corrected (test/adapters/observability/metrics.test.ts checks the output against observe).
 */
function addObservations(
  histogram: Histogram<'role' | 'method' | 'route'>,
  labels: RequestLabels,
  buckets: number[],
  sum: number,
  count: number,
): void {
  histogram.observe(labels, 0);
  const all = Object.values((histogram as unknown as { hashMap: Record<string, HistogramSeries> }).hashMap);
  const series = all.find(
    (s) => s.labels.role === labels.role && s.labels.method === labels.method && s.labels.route === labels.route,
  )!;
  series.bucketValues[REQUEST_BUCKETS[0]] -= 1;
  series.count += count - 1;
  series.sum += sum;
  for (const [i, bound] of REQUEST_BUCKETS.entries()) series.bucketValues[bound] += buckets[i];
}
