import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { STAGE_TOPIC } from '../../core/deployments/operation-store.js';
import { QUEUE, type Queue } from '../../core/ports/queue.js';
import type { Kernel } from '../kernel.js';

/** The Prometheus metrics of one kernel: every role in its process records into the same registry. */
export interface Metrics {
  registry: Registry;
  /** Requests answered, by role, method, route pattern and status. */
  requests: Counter<'role' | 'method' | 'route' | 'status'>;
  requestSeconds: Histogram<'role' | 'method' | 'route'>;
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
  m = {
    registry,
    requests: new Counter({
      name: 'hoist_http_requests_total',
      help: 'HTTP requests answered.',
      labelNames: ['role', 'method', 'route', 'status'],
      registers: [registry],
    }),
    requestSeconds: new Histogram({
      name: 'hoist_http_request_duration_seconds',
      help: 'Time to answer an HTTP request.',
      labelNames: ['role', 'method', 'route'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
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
