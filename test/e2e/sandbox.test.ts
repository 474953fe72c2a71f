// legs: db
// Tenant code through the whole pipeline, on the default sandbox: what an account's build command,
// npm lifecycle script and running release try against Hoist fails, is reported, and leaks
// nothing; real projects (a Vite build, npm dependencies with a postinstall script) still deploy.
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist({ healthTimeoutSeconds: 10 });
  ({ token } = await h.login());
});
test.after(async () => h?.close());

async function deploy(
  name: string,
  files: Record<string, string>,
  settings?: Record<string, string>,
  as: string = token,
) {
  if (settings) {
    const res = await fetch(`${h.api}/api/v1/projects/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${as}`, 'content-type': 'application/json' },
      body: JSON.stringify({ name, settings }),
    });
    assert.is(res.status, 201, await res.text());
  }
  const res = await h.upload(as, '/api/v1/local-to-live', await zipOf(files), { name });
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  return { op: await h.waitFor(as, body.operation.id, undefined, 180_000), url: body.project.url as string };
}

/** Hoist's secrets as they are on disk: none of them may show up anywhere a tenant can read. */
const secrets = () =>
  ['jwt.key', 'master-keys.json']
    .map((f) => readFileSync(join(h.dataDir, f), 'utf8').trim())
    .flatMap((s) => [s, ...s.split(/[",:{}\s]+/).filter((part) => part.length >= 16)]);

/** Tries the ways out and prints ESCAPED for each that works; `hostPorts` are Hoist's services on the host. */
const attempts = (hostPorts: number[]) => `
const fs = require('fs'), net = require('net');
const out = [];
const data = ${JSON.stringify(h?.dataDir ?? '')};
const secrets = [data + '/jwt.key', data + '/master-keys.json', data + '/hoist.sqlite'];
for (const f of [...secrets, '/root', '/var/run/docker.sock', '/proc/1/environ']) {
  try {
    const c = fs.readFileSync(f, 'utf8');
    if (!f.startsWith('/proc') || /HOIST_/.test(c)) out.push('ESCAPED read ' + f);
  } catch (e) {
    out.push('refused ' + f + ' ' + e.code);
  }
}
try {
  fs.writeFileSync('/usr/escape', 'x');
  out.push('ESCAPED wrote /usr');
} catch (e) {
  out.push('refused write /usr ' + e.code);
}
Promise.all(${JSON.stringify(hostPorts)}.map((p) => new Promise((resolve) => {
  const s = net.connect(p, '127.0.0.1');
  s.setTimeout(2000);
  s.on('connect', () => { out.push('ESCAPED connect ' + p); s.destroy(); resolve(); });
  s.on('error', (e) => { out.push('refused connect ' + p + ' ' + e.code); resolve(); });
  s.on('timeout', () => { out.push('refused connect ' + p + ' timeout'); s.destroy(); resolve(); });
}))).then(() => { console.log(out.join('\\n')); REPORT(out); });
`;

const ports = () => [new URL(h.api).port, new URL(h.edge).port, '5432', '4222'].map(Number);

test(
  'a build command that attacks Hoist is refused everywhere, the build log says so ' + 'and holds no secret',
  async () => {
    const script = attempts(ports()).replace(
      'REPORT(out);',
      "fs.mkdirSync('out', { recursive: true }); fs.writeFileSync('out/index.html', out.join('\\n'));",
    );
    const { op, url } = await deploy(
      'escape-build',
      { 'index.html': 'source', 'escape.js': script },
      { build_command: 'node escape.js', output_directory: 'out' },
    );
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    const log = await h.get(token, `/api/v1/operations/${op.id}`);
    const site = (await h.site(hostOf(url), '/')).body;
    assert.match(site, 'refused connect 5432');
    assert.not.match(site, 'ESCAPED');
    for (const s of secrets())
      assert.not.ok(site.includes(s) || JSON.stringify(log.body).includes(s), 'a secret leaked');
  },
);

test(
  'an npm postinstall script that attacks Hoist is refused, and a project with ' +
    'dependencies and a postinstall still deploys',
  async () => {
    const pkg = JSON.stringify({
      name: 'npm-escape',
      version: '1.0.0',
      private: true,
      scripts: { postinstall: 'node escape.js', build: 'node build.js' },
      dependencies: { 'is-number': '7.0.0' },
    });
    const script = attempts(ports()).replace('REPORT(out);', "fs.writeFileSync('attempts.txt', out.join('\\n'));");
    const build =
      "const fs = require('fs'); fs.mkdirSync('dist', { recursive: true }); " +
      "fs.writeFileSync('dist/index.html', 'is-number says ' + require('is-number')(5) " +
      "+ '\\n' + fs.readFileSync('attempts.txt', 'utf8'));";
    const { op, url } = await deploy(
      'escape-npm',
      { 'package.json': pkg, 'escape.js': script, 'build.js': build, 'index.html': 'x' },
      { output_directory: 'dist' },
    );
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    const site = (await h.site(hostOf(url), '/')).body;
    assert.match(site, 'is-number says true');
    assert.match(site, 'refused connect 4222');
    assert.not.match(site, 'ESCAPED');
    for (const s of secrets()) assert.not.ok(site.includes(s), 'a secret leaked');
  },
);

test(
  'a running Node.js release that attacks Hoist is refused and goes on serving ' +
    '(WebSockets through the sandbox: node-apps)',
  async () => {
    const script = attempts(ports()).replace(
      'REPORT(out);',
      `const http = require('http');
     const s = http.createServer((q, r) => r.end(out.join('\\n')));
     s.listen(Number(process.env.PORT));`,
    );
    const pkg = JSON.stringify({ name: 'app', version: '1.0.0', scripts: { start: 'node server.js' } });
    const { op, url } = await deploy('escape-release', { 'package.json': pkg, 'server.js': script });
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    const site = (await h.site(hostOf(url), '/')).body;
    assert.match(site, 'refused connect 5432');
    assert.match(site, 'refused write /usr');
    assert.not.match(site, 'ESCAPED');
    for (const s of secrets()) assert.not.ok(site.includes(s), 'a secret leaked');
  },
);

test('a Vite build installs from its lockfile and deploys', async () => {
  const dir = join(import.meta.dirname ?? new URL('.', import.meta.url).pathname, '../fixtures/vite-site');
  const files: Record<string, string> = {};
  const walk = (d: string, prefix = ''): void => {
    for (const e of readdirSync(join(dir, d), { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name), `${prefix}${e.name}/`);
      else files[`${prefix}${e.name}`] = readFileSync(join(dir, d, e.name), 'utf8');
    }
  };
  walk('.');
  const { op, url } = await deploy('vite-site', files);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(op.stages.analyze.result.framework, 'vite');
  const html = (await h.site(hostOf(url), '/')).body;
  const js = /src="(\/assets\/[^"]+\.js)"/.exec(html)?.[1];
  assert.ok(js, html);
  assert.match((await h.site(hostOf(url), js!)).body, 'vite-built');
});

test("an account's build cache (~/.npm) is its own: the next build finds what one left, another's none", async () => {
  /** A project whose build lists what earlier builds planted in ~/.npm, plants its own `mark`, and serves the list. */
  const project = (mark: string) => ({
    'package.json': JSON.stringify({ name: mark, version: '1.0.0', scripts: { build: 'node build.js' } }),
    'build.js': `const fs = require('fs'), d = require('os').homedir() + '/.npm';
const seen = fs.existsSync(d) ? fs.readdirSync(d).filter((n) => n.startsWith('planted')).sort() : [];
fs.mkdirSync(d, { recursive: true });
fs.writeFileSync(d + '/planted-${mark}', 'x');
fs.mkdirSync('dist', { recursive: true });
fs.writeFileSync('dist/index.html', 'seen:' + seen.join(','));`,
  });
  const served = async (name: string, as: string) => {
    const { op, url } = await deploy(name, project(name), { output_directory: 'dist' }, as);
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    return { site: (await h.site(hostOf(url), '/')).body, op };
  };
  const first = await served('cache-a1', token);
  assert.is(first.site, 'seen:');
  const second = await served('cache-a2', token);
  assert.is(second.site, 'seen:planted-cache-a1', 'another project of the account finds what the first kept');
  assert.match(JSON.stringify(second.op), 'Build cache: restored');
  const other = await h.login();
  assert.is((await served('cache-b1', other.token)).site, 'seen:', "another account's build finds none of it");
});

test.run();
