#!/usr/bin/env node
// Runs every test file (test/**/*.test.ts) in its own process, two at a time, and prints one
// closing line "N passed, N failed, N skipped". Files whose first line is "// legs: db" run once
// per database leg: SQLite, then PostgreSQL (skipped, and said so, when PostgreSQL is unreachable).
// Usage: npm test [-- <path filter>...]   HOIST_TEST_LEGS=sqlite|postgres|sqlite,postgres
// The production backends: HOIST_DB=postgres HOIST_QUEUE=nats HOIST_STORAGE=minio HOIST_DEPLOYER=docker
// npm test -- test/e2e  (test/helpers/backends.ts; an S3 server is started here when none is named).
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { createInterface } from 'node:readline';
import { join } from 'node:path';
import net from 'node:net';

const filters = process.argv.slice(2);
const walk = (d) => readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
const files = walk('test').filter((f) => f.endsWith('.test.ts') && (!filters.length || filters.some((x) => f.includes(x)))).sort();

const pgUp = await new Promise((res) => {
  const s = net.connect(5432, '127.0.0.1', () => { s.end(); res(true); });
  s.on('error', () => res(false));
});
// HOIST_DB names the one database leg to run, as it names the database of `hoist` itself.
const legs = (process.env.HOIST_TEST_LEGS ?? process.env.HOIST_DB ?? 'sqlite,postgres').split(',');
if (legs.includes('postgres') && !pgUp) console.log('! PostgreSQL is not reachable at 127.0.0.1:5432: the postgres leg is skipped');

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
  s3 = spawn(process.execPath, ['--import', 'tsx', 'test/helpers/s3-server-process.ts', dir], { stdio: ['pipe', 'pipe', 'inherit'] });
  const { port } = JSON.parse(await new Promise((resolve, reject) => {
    s3.once('exit', (code) => reject(new Error(`the S3 server exited (${code})`)));
    createInterface({ input: s3.stdout }).once('line', resolve);
  }));
  Object.assign(process.env, { HOIST_S3_ENDPOINT: `http://127.0.0.1:${port}`, HOIST_S3_ACCESS_KEY: 'S3RVER', HOIST_S3_SECRET_KEY: 'S3RVER' });
  process.on('exit', () => { s3.kill(); rmSync(dir, { recursive: true, force: true }); });
  console.log(`S3 server (s3rver) for HOIST_STORAGE=minio at ${process.env.HOIST_S3_ENDPOINT}`);
}

let passed = 0, failed = 0, skipped = 0;
const failures = [];
const run = ({ file, leg }) =>
  new Promise((resolve) => {
    const env = { ...process.env, FORCE_COLOR: '0', ...(leg ? { HOIST_TEST_DB: leg } : {}) };
    const began = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', file], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => {
      const num = (label) => Number((new RegExp(`${label}:\\s+(\\d+)`).exec(out) ?? [])[1] ?? 0);
      const total = num('Total'), ok = num('Passed'), skip = num('Skipped');
      const bad = code !== 0 ? Math.max(total - ok - skip, 1) : total - ok - skip;
      passed += ok; skipped += skip; failed += bad;
      const name = leg ? `${file} [${leg}]` : file;
      const secs = ((Date.now() - began) / 1000).toFixed(0);
      console.log(`${bad ? 'FAIL' : 'ok  '} ${name}  (${ok} passed${skip ? `, ${skip} skipped` : ''}${bad ? `, ${bad} failed` : ''}; ${secs} s)`);
      for (const line of out.split('\n')) if (/^\s*(!|skip:)/i.test(line)) console.log(`     ${line.trim()}`);
      if (bad) failures.push({ name, out });
      resolve();
    });
  });

const width = Number(process.env.HOIST_TEST_JOBS ?? Math.max(1, Math.min(2, availableParallelism())));
const queue = [...jobs];
await Promise.all(Array.from({ length: width }, async () => { while (queue.length) await run(queue.shift()); }));

for (const f of failures) console.log(`\n===== ${f.name} =====\n${f.out}`);
console.log(`\n${passed} passed, ${failed} failed, ${skipped} skipped`);
process.exit(failed ? 1 : 0);
