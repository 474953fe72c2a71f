#!/usr/bin/env node
// Builds dist/, then runs every test file (test/**/*.test.ts) in its own process, two at a time, and prints one
// closing line "N passed, N failed, N skipped". Files whose first line is "// legs: db" run once
// per database leg: SQLite, then PostgreSQL (skipped, and said so, when PostgreSQL is unreachable). A file that
// fails runs once more (HOIST_TEST_RETRIES=1), alone, after the others; one that passes then is named as flaky,
// with its failed run's output.
// Usage: npm test [-- <path filter>...]   HOIST_TEST_LEGS=sqlite|postgres|sqlite,postgres
// The production backends: HOIST_DB=postgres HOIST_QUEUE=nats HOIST_STORAGE=minio HOIST_DEPLOYER=docker
// npm test -- test/e2e  (test/helpers/backends.ts; an S3 server is started here when none is named).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import net from 'node:net';
import { build } from './build.js';

const filters = process.argv.slice(2);
const walk = (d) =>
  readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
const files = walk('test')
  .filter((f) => f.endsWith('.test.ts') && (!filters.length || filters.some((x) => f.includes(x))))
  .sort();

// Tests that start `hoist` run bin/hoist.js, i.e. what ships (dist/): build it first (incremental, about a
// second when nothing changed). Type errors do not stop the tests; what tsc emitted runs.
const built = await build();
if (built.status !== 0) {
  const errors = built.output.split('\n').slice(0, 20).join('\n');
  console.log(`! npm run build reported errors (the tests run what it emitted):\n${errors}`);
}

const pgUp = await new Promise((res) => {
  const s = net.connect(5432, '127.0.0.1', () => {
    s.end();
    res(true);
  });
  s.on('error', () => res(false));
});
// HOIST_DB names the one database leg to run, as it names the database of `hoist` itself.
const legs = (process.env.HOIST_TEST_LEGS ?? process.env.HOIST_DB ?? 'sqlite,postgres').split(',');
if (legs.includes('postgres') && !pgUp)
  console.log('! PostgreSQL is not reachable at 127.0.0.1:5432: the postgres leg is skipped');

const jobs = [];
for (const file of files) {
  const dbLegs = readFileSync(file, 'utf8').startsWith('// legs: db');
  if (!dbLegs) jobs.push({ file, leg: null });
  else for (const leg of legs) if (leg !== 'postgres' || pgUp) jobs.push({ file, leg });
}

// HOIST_STORAGE=minio with no HOIST_S3_ENDPOINT: run the tests against an S3 server of our own.
let s3 = null;
if (process.env.HOIST_STORAGE === 'minio' && !process.env.HOIST_S3_ENDPOINT) {
  const dir = mkdtempSync(join(tmpdir(), 'hoist-s3-'));
  // --openssl-legacy-provider: s3rver's continuation tokens use DES (see test/helpers/s3-server.ts).
  const args = ['--openssl-legacy-provider', '--import', 'tsx', 'test/helpers/s3-server-process.ts', dir];
  s3 = spawn(process.execPath, args, {
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  const { port } = JSON.parse(
    await new Promise((resolve, reject) => {
      s3.once('exit', (code) => reject(new Error(`the S3 server exited (${code})`)));
      createInterface({ input: s3.stdout }).once('line', resolve);
    }),
  );
  Object.assign(process.env, {
    HOIST_S3_ENDPOINT: `http://127.0.0.1:${port}`,
    HOIST_S3_ACCESS_KEY: 'S3RVER',
    HOIST_S3_SECRET_KEY: 'S3RVER',
  });
  process.on('exit', () => {
    s3.kill();
    rmSync(dir, { recursive: true, force: true });
  });
  console.log(`S3 server (s3rver) for HOIST_STORAGE=minio at ${process.env.HOIST_S3_ENDPOINT}`);
}

// Seconds one test file may run (the slowest take about four minutes on a busy machine).
const FILE_TIMEOUT_S = Number(process.env.HOIST_TEST_FILE_TIMEOUT ?? 900);

// Test files run in process groups of their own: an interrupted run takes them down with it.
const live = new Set();
for (const signal of ['SIGINT', 'SIGTERM'])
  process.on(signal, () => {
    for (const pid of live) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    process.exit(130);
  });

let passed = 0,
  failed = 0,
  skipped = 0;
const failures = [];
const flaky = [];
// A file that fails is run once more (HOIST_TEST_RETRIES), after every other file and alone, so that the other
// file running beside it (two cores) is not what fails it again: a file that then passes counts as passed, and is
// named as flaky, with what its failed run printed, in the summary and at the end.
const RETRIES = Number(process.env.HOIST_TEST_RETRIES ?? 1);
/** Files that failed their first run, with it, to run again once the others are done. */
const again = [];
/** The lines of uvu's report of a failed test (its name, the assertion, the first frames). */
const failureLines = (out) => {
  const lines = out.split('\n');
  const at = lines.findIndex((l) => /^\s*FAIL\s/.test(l));
  return at < 0 ? lines.filter((l) => l.trim()).slice(-6) : lines.slice(at, at + 8).filter((l) => l.trim());
};
/** Has uvu print the error of a `before` hook that throws (test/helpers/uvu-hook-errors.mjs). */
const UVU_HOOK_ERRORS = new URL('../test/helpers/uvu-hook-errors.mjs', import.meta.url).href;
const runOnce = ({ file, leg }) =>
  new Promise((resolve) => {
    const env = { ...process.env, FORCE_COLOR: '0', ...(leg ? { HOIST_TEST_DB: leg } : {}) };
    const began = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', '--import', UVU_HOOK_ERRORS, file], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    live.add(child.pid);
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    // A file that hangs fails, with what it printed, instead of holding the run until CI stops it.
    const timer = setTimeout(() => {
      out += `\n! timed out after ${FILE_TIMEOUT_S} s (HOIST_TEST_FILE_TIMEOUT): killed\n`;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }, FILE_TIMEOUT_S * 1000);
    child.on('close', (code) => {
      clearTimeout(timer);
      live.delete(child.pid);
      const num = (label) => Number((new RegExp(`${label}:\\s+(\\d+)`).exec(out) ?? [])[1] ?? 0);
      const total = num('Total'),
        ok = num('Passed'),
        skip = num('Skipped');
      // uvu prints its summary last: a file that ends without one did not get through its tests (uvu's own report of a
      // failure once crashed and ended a file early with exit code 0), unless it skipped them all (`! skip:`).
      const summarized = /Total:\s+\d+/.test(out) || /^! skip/m.test(out);
      if (!summarized) out += "\n! ended without uvu's summary: not every test ran\n";
      // uvu's Total leaves skipped tests out (test.skip, or those beside a test.only).
      const bad = code !== 0 || !summarized ? Math.max(total - ok, 1) : total - ok;
      resolve({ ok, skip, bad, out, secs: ((Date.now() - began) / 1000).toFixed(0) });
    });
  });
const nameOf = (job) => (job.leg ? `${job.file} [${job.leg}]` : job.file);
/** Runs a file; one that fails is kept to run again later (see `again`) while retries are allowed. */
const run = async (job) => {
  const r = await runOnce(job);
  if (r.bad && RETRIES > 0) {
    console.log(`FLAKY? ${nameOf(job)}  (${r.bad} failed; ${r.secs} s): run again, alone, at the end`);
    for (const line of failureLines(r.out)) console.log(`     ! ${line.trim()}`);
    again.push({ job, first: r });
    return;
  }
  report(job, r);
};
/** Runs a file that failed once more, up to RETRIES times in all, and reports it. */
const rerun = async ({ job, first }) => {
  let r = first;
  for (let retry = 0; r.bad && retry < RETRIES; retry++) {
    if (retry > 0) console.log(`FLAKY? ${nameOf(job)}  (${r.bad} failed; ${r.secs} s): run again`);
    const next = await runOnce(job);
    if (!next.bad) flaky.push({ name: nameOf(job), out: r.out });
    r = next;
  }
  report(job, r);
};
const report = (job, r) => {
  const name = nameOf(job);
  passed += r.ok;
  skipped += r.skip;
  failed += r.bad;
  const counts = `${r.ok} passed${r.skip ? `, ${r.skip} skipped` : ''}${r.bad ? `, ${r.bad} failed` : ''}`;
  console.log(`${r.bad ? 'FAIL' : 'ok  '} ${name}  (${counts}; ${r.secs} s)`);
  for (const line of r.out.split('\n')) if (/^\s*(!|skip:)/i.test(line)) console.log(`     ${line.trim()}`);
  if (r.bad) {
    for (const line of failureLines(r.out)) console.log(`     ! ${line.trim()}`);
    failures.push({ name, out: r.out });
  }
};

const width = Number(process.env.HOIST_TEST_JOBS ?? Math.max(1, Math.min(2, availableParallelism())));
const queue = [...jobs];
await Promise.all(
  Array.from({ length: width }, async () => {
    while (queue.length) await run(queue.shift());
  }),
);
for (const failedOnce of again) await rerun(failedOnce);

for (const f of flaky) console.log(`\n===== ${f.name} (flaky: its failed run) =====\n${f.out}`);
for (const f of failures) console.log(`\n===== ${f.name} =====\n${f.out}`);
const flakyNote = flaky.length ? `; flaky (passed when run again): ${flaky.map((f) => f.name).join(', ')}` : '';
console.log(`\n${passed} passed, ${failed} failed, ${skipped} skipped${flakyNote}`);
process.exit(failed ? 1 : 0);
