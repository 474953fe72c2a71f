// Hoist's edge against one nginx worker (Debian's nginx-light, started here with its own prefix) on
// the same release files, and the edge proxying a Node.js release against the app hit directly:
// `wrk -t2 -c50 -d5s`, Hoist and each counterpart in turn, each case run ROUNDS times (median kept).
// The edge runs as operators run it, in its own process (`node bin/hoist.js edge`, the built dist/:
// `npm run build` first); the API and the worker that deploy the sites run in this process, idle
// while wrk runs. nginx runs in two configurations: `access_log off`, and Debian's own nginx.conf
// (access log to a file, gzip on, default keep-alive limits). A bare node:http server answering the
// same bytes with the same headers from memory is the ceiling of node:http on this machine. Each static row also
// gives the CPU the edge's process and the other server's (nginx: master and worker) spent per request.
// Run: node --import tsx bench/edge-vs-nginx.ts [rounds]   Prints figures; never fails on the clock.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/helpers/hoist-process.js';
import {
  filler,
  httpRequest,
  sideBySide,
  startBenchHoist,
  startEdgeProcess,
  withChildren,
  type Counterpart,
  type SideBySideCase,
  type WrkTarget,
} from './bench-hoist.js';

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

/** How nginx is configured: as the bench always ran it, or Debian's own nginx.conf. */
type NginxConfig = 'access_log off' | 'debian';

/** The http block's settings of each configuration (Debian's: /etc/nginx/nginx.conf, its access log in the prefix). */
const httpSettings = (config: NginxConfig, dir: string) =>
  config === 'debian'
    ? `  sendfile on;
  tcp_nopush on;
  types_hash_max_size 2048;
  include /etc/nginx/mime.types;
  default_type application/octet-stream;
  access_log ${dir}/logs/access.log;
  gzip on;`
    : `  include /etc/nginx/mime.types;
  access_log off;
  sendfile on;
  tcp_nopush on;
  keepalive_requests 1000000;`;

/** Starts one nginx worker serving `root` on a free port, in a prefix of its own; resolves its origin. */
async function startNginx(
  root: string,
  dir: string,
  config: NginxConfig,
): Promise<{ origin: string; child: ChildProcess }> {
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
${httpSettings(config, dir)}
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

/** What a bare server answers for one path: the edge's status, headers and body, and its 304's headers. */
interface BareAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
  etag: string;
  notModified: Record<string, string>;
}

/** The headers node:http writes itself (Date, Connection, Keep-Alive), which the bare server's node:http adds too. */
const OWN = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding']);
const headersOf = (h: Record<string, string | string[] | undefined>) =>
  Object.fromEntries(Object.entries(h).filter(([k, v]) => !OWN.has(k) && typeof v === 'string')) as Record<
    string,
    string
  >;

/**
 * A bare node:http server in a process of its own answering `paths` with exactly what the edge answered
 * (bytes and headers, read here from `edge` with Host `host`), from memory, and a 304 for a matching
 * If-None-Match: what node:http alone reaches on this machine.
 */
async function startBare(edge: string, host: string, paths: string[], dir: string) {
  const answers: Record<string, BareAnswer> = {};
  for (const path of paths) {
    const res = await httpRequest(`${edge}${path}`, { headers: { host } });
    const etag = String(res.headers.etag);
    const again = await httpRequest(`${edge}${path}`, { headers: { host, 'if-none-match': etag } });
    if (res.status !== 200 || again.status !== 304) throw new Error(`${path}: ${res.status}, ${again.status}`);
    answers[path] = {
      status: res.status,
      headers: headersOf(res.headers),
      body: res.body,
      etag,
      notModified: headersOf(again.headers),
    };
  }
  const file = join(dir, 'answers.json');
  writeFileSync(file, JSON.stringify(answers));
  const code = `
const answers = JSON.parse(require('node:fs').readFileSync(${JSON.stringify(file)}, 'utf8'));
for (const a of Object.values(answers)) a.bytes = Buffer.from(a.body);
const server = require('node:http').createServer((req, res) => {
  const a = answers[req.url];
  if (!a) return res.writeHead(404).end();
  if (req.headers['if-none-match'] === a.etag) return res.writeHead(304, a.notModified).end();
  res.writeHead(a.status, a.headers).end(req.method === 'HEAD' ? undefined : a.bytes);
});
server.keepAliveTimeout = 72000;
server.listen(0, '127.0.0.1', () => console.log(server.address().port));`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (d) => resolve(String(d).trim()));
    child.once('exit', (c) => reject(new Error(`bare server exited with ${c}`)));
  });
  return { origin: `http://127.0.0.1:${port}`, child };
}

const load0 = loadavg()[0];
const hoist = await startBenchHoist({}, {}, ['api', 'worker']);
const dirs = [1, 2, 3].map(() => mkdtempSync(join(tmpdir(), 'hoist-bench-nginx-')));
const children: ChildProcess[] = [];
let edgeProcess: Awaited<ReturnType<typeof startEdgeProcess>> | undefined;
try {
  const staticSite = await hoist.deploy({ name: 'bench static' }, site);
  const privateSite = await hoist.deploy(
    { name: 'bench private', visibility: 'private', access_password: PASSWORD },
    site,
  );
  const nodeApp = await hoist.deploy({ name: 'bench app' }, app);
  if (staticSite.target.kind !== 'static' || nodeApp.target.kind !== 'http') throw new Error('unexpected targets');
  // Started after the deploys: it loads them from the database as it starts.
  edgeProcess = await startEdgeProcess(hoist.dataDir);
  const edge = edgeProcess.origin;
  const nginxOff = await startNginx(staticSite.target.root, dirs[0], 'access_log off');
  const nginxDebian = await startNginx(staticSite.target.root, dirs[1], 'debian');
  children.push(nginxOff.child, nginxDebian.child);

  // The access cookie, as a browser gets it from the sign-in form.
  const signIn = await httpRequest(`${edge}/.hoist/access/password`, {
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
  const asset = '/assets/index-4f3a9c.js';
  const bare = await startBare(edge, host, ['/', asset], dirs[2]);
  children.push(bare.child);
  // The processes whose CPU per request is counted: the edge's, each nginx's master and worker, the bare server's.
  const hoistPids = [edgeProcess.child.pid!];
  const pidsOf = (child: ChildProcess) => withChildren(child.pid!);
  /** nginx in both configurations, and the bare server, on `path` with `headers` (and `own`: each one's ETag). */
  const counterparts = async (path: string, headers: Record<string, string>, target: number, own?: 'etag') => {
    const at = async (origin: string): Promise<WrkTarget> => [
      `${origin}${path}`,
      { ...headers, ...(own ? { 'if-none-match': await etagOf(`${origin}${path}`) } : {}) },
    ];
    const others: Counterpart[] = [
      { label: 'nginx, access_log off', at: await at(nginxOff.origin), target, pids: pidsOf(nginxOff.child) },
      {
        label: "nginx, Debian's nginx.conf (access log)",
        at: await at(nginxDebian.origin),
        target,
        pids: pidsOf(nginxDebian.child),
      },
    ];
    if (!headers.cookie)
      others.push({
        label: 'bare node:http, same bytes and headers',
        at: await at(bare.origin),
        ceiling: true,
        pids: [bare.child.pid!],
      });
    return others;
  };
  const cases: SideBySideCase[] = [
    { name: 'index.html (4 KB)', hoist: [`${edge}/`, { host }], hoistPids, others: await counterparts('/', {}, 0.8) },
    {
      name: 'asset (100 KB)',
      hoist: [`${edge}${asset}`, { host }],
      hoistPids,
      others: await counterparts(asset, {}, 0.8),
    },
    {
      name: '304 (If-None-Match)',
      hoist: [`${edge}/`, { host, 'if-none-match': await etagOf(`${edge}/`, host) }],
      hoistPids,
      others: await counterparts('/', {}, 0.8, 'etag'),
    },
    {
      name: 'private, with the cookie',
      hoist: [`${edge}/`, { host: privateSite.host, cookie }],
      hoistPids,
      others: await counterparts('/', { cookie }, 0.5),
    },
    {
      name: 'Node.js app: proxied / direct',
      hoist: [`${edge}/`, { host: nodeApp.host }],
      others: [{ label: 'the app hit directly', at: [`${nodeApp.target.url}/`, {}], target: 0.5 }],
    },
  ];
  await sideBySide('edge (its own process) vs nginx (1 worker), and vs the app hit directly', cases, ROUNDS, load0);
} finally {
  for (const c of children) c.kill('SIGTERM');
  await edgeProcess?.close();
  await hoist.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}
