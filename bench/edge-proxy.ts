// The edge proxying a Node.js release (local deployer, sandbox bwrap: slirp4netns publishes the relay in the
// sandbox, which reaches the app) against the app hit directly at its published address, as edge-vs-nginx's last
// case, with the CPU each process of the chain spends per request: where a proxied request's time goes. Both
// paths take slirp4netns and the relay; the proxied one adds the edge alone. With `--before <dir>`, the edge of
// another built checkout (its bin/ and dist/, e.g. main's) runs on the same releases too, each round in turn:
// before and after a change under the same load. `wrk -t2 -c50 -d5s`; the median of ROUNDS rounds.
// Run: node --import tsx bench/edge-proxy.ts [rounds] [--before <dir>]   (`npm run build` first)
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { availableParallelism, loadavg } from 'node:os';
import { join } from 'node:path';
import { hoistBin } from '../test/helpers/cli.js';
import { freePort } from '../test/helpers/hoist-process.js';
import { filler, median, pidsNow, procStat, startBenchHoist, wrk } from './bench-hoist.js';

const args = process.argv.slice(2);
const ROUNDS = Number(args.find((a) => /^\d+$/.test(a)) ?? 3);
const before = args.includes('--before') ? args[args.indexOf('--before') + 1] : undefined;
const SECONDS = 5;

/** A Node.js app with no dependencies answering a 4 KB page (edge-vs-nginx's). */
const page = `<!doctype html><html><body><div id="app"></div><!-- ${filler(4096 - 70)} --></body></html>\n`;
const app = {
  'package.json': JSON.stringify({ name: 'bench-app', version: '1.0.0', scripts: { start: 'node server.js' } }),
  'server.js': `const page = ${JSON.stringify(page)};
require('node:http').createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(page);
}).listen(Number(process.env.PORT));\n`,
};

/** Starts `node <bin> edge` on `dataDir`; resolves its public origin. */
async function startEdge(bin: string, dataDir: string): Promise<{ origin: string; child: ChildProcess }> {
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('HOIST_')));
  const env = {
    ...clean,
    HOIST_DATA_DIR: dataDir,
    HOIST_EDGE_PORT: String(await freePort()),
    HOIST_EDGE_ADMIN_PORT: String(await freePort()),
    HOIST_LOG_LEVEL: 'warn',
  };
  const child = spawn(process.execPath, [bin, 'edge'], { env, stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  const origin = await new Promise<string>((resolve, reject) => {
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m) resolve(m[1].replace('localhost', '127.0.0.1'));
    });
    child.once('exit', (code) => reject(new Error(`${bin} edge exited with ${code}: ${out}`)));
  });
  return { origin, child };
}

/** Every process: its parent, command line and CPU time so far (µs), from /proc. */
function processes(): Map<number, { ppid: number; cmd: string; cpu: number }> {
  const found = new Map<number, { ppid: number; cmd: string; cpu: number }>();
  for (const pid of pidsNow()) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
      found.set(pid, { ...procStat(pid), cmd });
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** The processes of the release's chain (this process's descendants): slirp4netns, the relay, the app. */
function chainOf(all: ReturnType<typeof processes>): Record<string, number> {
  const mine = new Set([process.pid]);
  for (let grew = true; grew;) {
    grew = false;
    for (const [pid, p] of all)
      if (!mine.has(pid) && mine.has(p.ppid)) {
        mine.add(pid);
        grew = true;
      }
  }
  const chain: Record<string, number> = {};
  for (const pid of mine) {
    const cmd = all.get(pid)?.cmd ?? '';
    if (cmd.startsWith('/usr/bin/slirp4netns')) chain.slirp4netns = pid;
    else if (cmd.includes("require('net')")) chain.relay = pid;
    else if (cmd.startsWith('node server.js')) chain.app = pid;
  }
  return chain;
}

const load0 = loadavg()[0];
const hoist = await startBenchHoist({}, {}, ['api', 'worker']);
const edges: { label: string; origin: string; child: ChildProcess }[] = [];
try {
  const nodeApp = await hoist.deploy({ name: 'bench app' }, app);
  if (nodeApp.target.kind !== 'http') throw new Error('the app is not served over HTTP');
  edges.push({ label: 'proxied', ...(await startEdge(hoistBin, hoist.dataDir)) });
  if (before)
    edges.push({ label: `proxied, ${before}`, ...(await startEdge(join(before, 'bin/hoist.js'), hoist.dataDir)) });
  const chain = chainOf(processes());
  const runs: { label: string; at: [string, Record<string, string>]; edge?: number }[] = [
    ...edges.map((e) => ({
      label: e.label,
      at: [`${e.origin}/`, { host: nodeApp.host }] as [string, Record<string, string>],
      edge: e.child.pid,
    })),
    { label: 'direct', at: [`${nodeApp.target.url}/`, {}] },
  ];
  const rps = runs.map(() => [] as number[]);
  const cpu = runs.map(() => ({}) as Record<string, number[]>);
  for (let r = 0; r < ROUNDS; r++)
    for (const [i, run] of runs.entries()) {
      const pids = { ...(run.edge ? { edge: run.edge } : {}), ...chain };
      const at0 = processes();
      const { rps: x, errors } = await wrk(...run.at, { seconds: SECONDS });
      const at1 = processes();
      if (errors) throw new Error(`${run.label}: ${errors} bad answers`);
      rps[i].push(x);
      for (const [name, pid] of Object.entries(pids))
        (cpu[i][name] ??= []).push((at1.get(pid)!.cpu - at0.get(pid)!.cpu) / (x * SECONDS));
    }
  console.log(`\nNode.js app, proxied / direct: wrk -t2 -c50 -d${SECONDS}s, ${ROUNDS} alternating rounds, median`);
  console.log(
    `load average ${load0.toFixed(1)} at start, ${loadavg()[0].toFixed(1)} at end (${availableParallelism()} cores)`,
  );
  const direct = median(rps.at(-1)!);
  for (const [i, run] of runs.entries()) {
    const m = median(rps[i]);
    const per = Object.entries(cpu[i]).map(([name, xs]) => `${name} ${median(xs).toFixed(0)}`);
    const ratio = run.label === 'direct' ? '' : ` (${(m / direct).toFixed(2)}× direct)`;
    console.log(
      `${run.label.padEnd(28)} ${m.toFixed(0).padStart(7)} req/s${ratio}; CPU µs per request: ${per.join(', ')}`,
    );
  }
} finally {
  for (const e of edges) e.child.kill('SIGTERM');
  await hoist.close();
}
