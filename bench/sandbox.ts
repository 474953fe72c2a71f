// What the sandbox adds: a tenant command (as a static site's build command would run) and a
// Node.js release's start (to its first HTTP answer), each run in the configured sandbox and bare on
// the host, alternating. Run: node --import tsx bench/sandbox.ts [rounds]   (HOIST_SANDBOX=bwrap|docker)
// Prints figures; never fails on the clock.
import { spawn } from 'node:child_process';
import { chmodSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { join } from 'node:path';
import { benchSandbox } from './bench-hoist.js';

const ROUNDS = Number(process.argv[2] ?? 20);
const { dataDir, config, sandbox } = await benchSandbox('hoist-bench-sandbox-');
const work = join(dataDir, 'work');
mkdirSync(work, { mode: 0o711 });
chmodSync(work, 0o711);
writeFileSync(
  join(work, 'app.js'),
  "require('http').createServer((q, r) => r.end('ok')).listen(Number(process.env.PORT), process.env.HOST);",
);
const limits = { timeMs: 60_000, memoryMb: 512, processes: 128, outputBytes: 1e6, diskMb: 256 };

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const time = async (fn: () => Promise<unknown>) => {
  const t = performance.now();
  await fn();
  return performance.now() - t;
};
const bare = (command: string) =>
  new Promise((resolve) => spawn('sh', ['-c', command], { cwd: work, stdio: 'ignore' }).on('exit', resolve));
const answers = async (url: string) => {
  for (;;) {
    const ok = await new Promise<boolean>((resolve) => {
      const req = http.get(url, { timeout: 500 }, (res) => (res.resume(), resolve(true)));
      req.on('error', () => resolve(false)).on('timeout', () => req.destroy());
    });
    if (ok) return;
    await new Promise((r) => setTimeout(r, 5));
  }
};
const freePort = () =>
  new Promise<number>((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });

const rows: Record<string, number[]> = {
  'command, sandboxed (none)': [],
  'command, sandboxed (egress)': [],
  'command, bare': [],
  'release start, sandboxed': [],
  'release start, bare': [],
};
for (let i = 0; i < ROUNDS; i++) {
  rows['command, sandboxed (none)'].push(
    await time(() =>
      sandbox.run({ command: 'true', workspace: work, env: {}, network: 'none', limits, log: () => {} }),
    ),
  );
  rows['command, sandboxed (egress)'].push(
    await time(() =>
      sandbox.run({ command: 'true', workspace: work, env: {}, network: 'egress', limits, log: () => {} }),
    ),
  );
  rows['command, bare'].push(await time(() => bare('true')));
  rows['release start, sandboxed'].push(
    await time(async () => {
      const s = await sandbox.serve({
        command: 'node app.js',
        workspace: work,
        env: {},
        network: 'egress',
        port: 8080,
        limits,
        log: () => {},
      });
      await answers(s.url);
      await s.stop();
    }),
  );
  rows['release start, bare'].push(
    await time(async () => {
      const port = await freePort();
      const child = spawn('node', ['app.js'], {
        cwd: work,
        env: { PATH: process.env.PATH, PORT: String(port), HOST: '127.0.0.1' },
        stdio: 'ignore',
      });
      await answers(`http://127.0.0.1:${port}`);
      child.kill('SIGKILL');
    }),
  );
}
console.log(`sandbox ${config.sandbox}, ${ROUNDS} rounds, median ms`);
for (const [name, xs] of Object.entries(rows)) console.log(`${name.padEnd(30)} ${median(xs).toFixed(1)}`);
console.log(
  `added to a build command: ` +
    `${(median(rows['command, sandboxed (egress)']) - median(rows['command, bare'])).toFixed(1)} ` +
    `ms (egress), ` +
    `${(median(rows['command, sandboxed (none)']) - median(rows['command, bare'])).toFixed(1)} ` +
    `ms (none)`,
);
console.log(
  `added to a release start: ` +
    `${(median(rows['release start, sandboxed']) - median(rows['release start, bare'])).toFixed(1)} ` +
    `ms`,
);
rmSync(dataDir, { recursive: true, force: true });
