// Queue hand-off: from `enqueue` to the handler starting on an idle consumer, (a) enqueued from outside
// and (b) enqueued by a running handler, as each stage of a deployment chain enqueues the next one.
// The configured queue (HOIST_QUEUE: local on the embedded SQLite, or nats; HOIST_DB=postgres for the
// local queue on PostgreSQL), two slots as a worker has by default.
// Run: node --import tsx bench/queue-handoff.ts [jobs]   Prints figures; never fails on the clock.
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { boot } from '../adapters/kernel.js';
import { loadConfig } from '../config/load.js';
import { QUEUE, type Queue } from '../core/ports/queue.js';
import { freshPgDatabase } from '../test/helpers/kernel.js';

const JOBS = Number(process.argv[2] ?? 50);
const env = Object.fromEntries(Object.entries(process.env).filter(([k]) => /^HOIST_(DB|QUEUE|NATS_URL)$/.test(k)));
const db = env.HOIST_DB === 'postgres' ? await freshPgDatabase() : null;
if (db) env.HOIST_DATABASE_URL = db.url;
if (env.HOIST_QUEUE === 'nats') env.HOIST_NATS_STREAM = `BENCH_${process.pid}`;
const dataDir = mkdtempSync(join(tmpdir(), 'hoist-bench-queue-'));
const load0 = loadavg()[0];
const kernel = await boot(loadConfig(env, { dataDir, logLevel: 'silent' }));
const queue = kernel.get<Queue>(QUEUE);

interface Hop {
  n: number;
  enqueuedAt: number;
  chain: boolean;
}
const outside: number[] = [];
const chained: number[] = [];
let done: () => void;
const finished = new Promise<void>((resolve) => (done = resolve));
const topic = `bench${process.pid}`;
const stop = await queue.consume<Hop>(
  topic,
  async (job) => {
    const { n, enqueuedAt, chain } = job.payload;
    (chain ? chained : outside).push(performance.now() - enqueuedAt);
    if (!chain) return void (outside.length === JOBS && done());
    if (n + 1 >= JOBS) return void done();
    // The next hop is enqueued while this handler still runs (a stage enqueues the next one on its success).
    await queue.enqueue<Hop>(topic, { n: n + 1, enqueuedAt: performance.now(), chain }, { key: `c${n + 1}` });
  },
  { concurrency: 2 },
);
try {
  // Outside: one job at a time onto idle slots.
  for (let i = 0; i < JOBS; i++) {
    const before = outside.length;
    await queue.enqueue<Hop>(topic, { n: i, enqueuedAt: performance.now(), chain: false }, { key: `o${i}` });
    while (outside.length === before) await new Promise((r) => setTimeout(r, 5));
    await new Promise((r) => setTimeout(r, 20)); // the slot is idle again
  }
  await finished;
  const chainDone = new Promise<void>((resolve) => (done = resolve));
  await queue.enqueue<Hop>(topic, { n: 0, enqueuedAt: performance.now(), chain: true }, { key: 'c0' });
  await chainDone;
} finally {
  await stop();
  await kernel.stop();
  rmSync(dataDir, { recursive: true, force: true });
  await db?.drop();
}

const stat = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (p: number) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
  return [at(0.5), at(0.95), s[0], s[s.length - 1]].map((x) => x.toFixed(1).padStart(7)).join(' ');
};
console.log(
  `\nqueue hand-off, ${kernel.config.queue} queue on ${kernel.config.db}: enqueue → handler start, ${JOBS} jobs each`,
);
console.log(
  `load average ${load0.toFixed(1)} at start, ${loadavg()[0].toFixed(1)} at end (${availableParallelism()} cores)`,
);
console.log(`${'ms'.padEnd(26)} ${['median', 'p95', 'min', 'max'].map((h) => h.padStart(7)).join(' ')}`);
console.log(`${'enqueued from outside'.padEnd(26)} ${stat(outside)}`);
console.log(`${'enqueued by a handler'.padEnd(26)} ${stat(chained)}`);
console.log('A deployment makes three hand-offs: the upload enqueues Analyze, and each stage the next.');
