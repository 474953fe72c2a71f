#!/usr/bin/env node
// Runs every test file (test/**/*.test.ts) in its own process, two at a time, and prints one
// closing line "N passed, N failed, N skipped". Files whose first line is "// legs: db" run once
// per database leg: SQLite, then PostgreSQL (skipped, and said so, when PostgreSQL is unreachable).
// Usage: npm test [-- <path filter>...]   HOIST_TEST_LEGS=sqlite|postgres|sqlite,postgres
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import net from 'node:net';

const filters = process.argv.slice(2);
const walk = (d) => readdirSync(d).flatMap((f) => (statSync(join(d, f)).isDirectory() ? walk(join(d, f)) : [join(d, f)]));
const files = walk('test').filter((f) => f.endsWith('.test.ts') && (!filters.length || filters.some((x) => f.includes(x)))).sort();

const pgUp = await new Promise((res) => {
  const s = net.connect(5432, '127.0.0.1', () => { s.end(); res(true); });
  s.on('error', () => res(false));
});
const legs = (process.env.HOIST_TEST_LEGS ?? 'sqlite,postgres').split(',');
if (legs.includes('postgres') && !pgUp) console.log('! PostgreSQL is not reachable at 127.0.0.1:5432: the postgres leg is skipped');

const jobs = [];
for (const file of files) {
  const dbLegs = readFileSync(file, 'utf8').startsWith('// legs: db');
  if (!dbLegs) jobs.push({ file, leg: null });
  else for (const leg of legs) if (leg !== 'postgres' || pgUp) jobs.push({ file, leg });
}

let passed = 0, failed = 0, skipped = 0;
const failures = [];
const run = ({ file, leg }) =>
  new Promise((resolve) => {
    const env = { ...process.env, FORCE_COLOR: '0', ...(leg ? { HOIST_TEST_DB: leg } : {}) };
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
      console.log(`${bad ? 'FAIL' : 'ok  '} ${name}  (${ok} passed${skip ? `, ${skip} skipped` : ''}${bad ? `, ${bad} failed` : ''})`);
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
