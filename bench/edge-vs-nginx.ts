// Hoist's edge against one nginx worker (Debian's nginx-light, started here with its own prefix) on
// the same release files, and the edge proxying a Node.js release against the app hit directly:
// `wrk -t2 -c50 -d5s`, Hoist and its counterpart alternating, each pair run ROUNDS times (median kept).
// Hoist runs on the embedded defaults, all three roles in this process (idle while wrk runs).
// Run: node --import tsx bench/edge-vs-nginx.ts [rounds]   Prints figures; never fails on the clock.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/helpers/hoist-process.js';
import { filler, httpRequest, sideBySide, startBenchHoist, type SideBySideCase } from './bench-hoist.js';

const ROUNDS = Number(process.argv[2] ?? 2);
const NGINX = '/usr/sbin/nginx';
const PASSWORD = 'a bench access password';

/** A small Vite-like build: a 4 KB index.html and a 100 KB hashed asset. */
const site = {
  'index.html': `<!doctype html><html><head><script type="module" src="/assets/index-4f3a9c.js"></script></head>
<body><div id="app"></div><!-- ${filler(4096 - 150)} --></body></html>\n`,
  'assets/index-4f3a9c.js': `console.log(${JSON.stringify(filler(100 * 1024 - 20))});\n`,
};
/** A Node.js app with no dependencies answering a 4 KB page. */
const app = {
  'package.json': JSON.stringify({ name: 'bench-app', version: '1.0.0', scripts: { start: 'node server.js' } }),
  'server.js': `const page = ${JSON.stringify(site['index.html'])};
require('node:http').createServer((req, res) => {
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
  res.end(page);
}).listen(Number(process.env.PORT));\n`,
};

/** Starts one nginx worker serving `root` on a free port, in a prefix of its own; resolves its origin. */
async function startNginx(root: string, dir: string): Promise<{ origin: string; child: ChildProcess }> {
  const port = await freePort();
  for (const d of ['tmp', 'logs']) mkdirSync(join(dir, d), { recursive: true });
  const conf = join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    `worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/logs/error.log warn;
events { worker_connections 4096; }
http {
  include /etc/nginx/mime.types;
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;
  client_body_temp_path ${dir}/tmp/body;
  proxy_temp_path ${dir}/tmp/proxy;
  fastcgi_temp_path ${dir}/tmp/fastcgi;
  uwsgi_temp_path ${dir}/tmp/uwsgi;
  scgi_temp_path ${dir}/tmp/scgi;
  server {
    listen 127.0.0.1:${port};
    root ${root};
    index index.html;
  }
}
`,
  );
  const child = spawn(NGINX, ['-p', dir, '-c', conf, '-e', join(dir, 'logs', 'error.log')], { stdio: 'inherit' });
  const origin = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    if (
      await fetch(origin).then(
        (r) => r.ok,
        () => false,
      )
    )
      return { origin, child };
    if (child.exitCode !== null || i > 100) throw new Error(`nginx did not start (exit ${child.exitCode})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The ETag `url` answers with (Host header `host` when given). */
async function etagOf(url: string, host?: string): Promise<string> {
  const res = await httpRequest(url, { headers: host ? { host } : {} });
  const etag = res.headers.etag;
  if (res.status !== 200 || !etag) throw new Error(`${url} answered ${res.status} with no ETag`);
  return etag;
}

const load0 = loadavg()[0];
const hoist = await startBenchHoist();
const nginxDir = mkdtempSync(join(tmpdir(), 'hoist-bench-nginx-'));
let nginx: ChildProcess | undefined;
try {
  const staticSite = await hoist.deploy({ name: 'bench static' }, site);
  const privateSite = await hoist.deploy(
    { name: 'bench private', visibility: 'private', access_password: PASSWORD },
    site,
  );
  const nodeApp = await hoist.deploy({ name: 'bench app' }, app);
  if (staticSite.target.kind !== 'static' || nodeApp.target.kind !== 'http') throw new Error('unexpected targets');
  const started = await startNginx(staticSite.target.root, nginxDir);
  nginx = started.child;

  // The access cookie, as a browser gets it from the sign-in form.
  const signIn = await httpRequest(`${hoist.edge}/.hoist/access/password`, {
    method: 'POST',
    headers: {
      host: privateSite.host,
      origin: `http://${privateSite.host}`,
      'content-type': 'application/x-www-form-urlencoded',
    },
    body: new URLSearchParams({ password: PASSWORD, next: '/' }).toString(),
  });
  const cookie = signIn.headers['set-cookie']?.map((c) => c.split(';')[0])[0];
  if (signIn.status !== 303 || !cookie) throw new Error(`sign-in answered ${signIn.status}`);

  const host = staticSite.host;
  const cases: SideBySideCase[] = [
    { name: 'index.html (4 KB)', hoist: [`${hoist.edge}/`, { host }], other: [`${started.origin}/`, {}], target: 0.8 },
    {
      name: 'asset (100 KB)',
      hoist: [`${hoist.edge}/assets/index-4f3a9c.js`, { host }],
      other: [`${started.origin}/assets/index-4f3a9c.js`, {}],
      target: 0.8,
    },
    {
      name: '304 (If-None-Match)',
      hoist: [`${hoist.edge}/`, { host, 'if-none-match': await etagOf(`${hoist.edge}/`, host) }],
      other: [`${started.origin}/`, { 'if-none-match': await etagOf(`${started.origin}/`) }],
      target: 0.8,
    },
    {
      name: 'private, with the cookie',
      hoist: [`${hoist.edge}/`, { host: privateSite.host, cookie }],
      other: [`${started.origin}/`, { cookie }],
      target: 0.5,
    },
    {
      name: 'Node.js app: proxied / direct',
      hoist: [`${hoist.edge}/`, { host: nodeApp.host }],
      other: [`${nodeApp.target.url}/`, {}],
      target: 0.5,
    },
  ];
  await sideBySide('edge vs nginx (1 worker), and vs the app hit directly', cases, ROUNDS, load0);
  console.log('other: nginx on the release directory, or the Node.js app at its own address (no edge).');
} finally {
  nginx?.kill('SIGTERM');
  await hoist.close();
  rmSync(nginxDir, { recursive: true, force: true });
}
