import { existsSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { networkInterfaces } from 'node:os';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { DEPLOYER, type ReleaseLogLine } from '../../core/ports/deployer.js';
import { dockerLeftovers, dockerMissing, removeDockerProjects, testDocker } from '../helpers/docker.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

const missing = await dockerMissing();
if (missing) console.log(`! deployer=docker end-to-end test skipped: ${missing}`);
else {
  let h: LiveHoist;
  let token: string;
  test.before(async () => {
    h = await liveHoist({ deployer: 'docker', healthTimeoutSeconds: 60 });
    ({ token } = await h.login());
  });
  const projects: string[] = [];
  test.after(async () => {
    await h?.close();
    await removeDockerProjects(projects);
  });

  async function deploy(name: string, files: Record<string, string>) {
    const res = await h.upload(token, '/api/v1/local-to-live', await zipOf(files), { name });
    const body = await res.json();
    assert.is(res.status, 202, JSON.stringify(body));
    projects.push(body.project.id);
    const op = await h.waitFor(token, body.operation.id, undefined, 180_000);
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    return { host: hostOf(body.project.url), projectId: body.project.id as string };
  }

  /** The container of the project's live release, inspected. */
  async function liveContainer(projectId: string) {
    const [c] = await testDocker().listContainers({
      filters: { label: [`hoist.project=${projectId}`, 'hoist.managed=true'] },
    });
    assert.ok(c, 'a running container carries the project label');
    return testDocker().getContainer(c.Id).inspect();
  }

  test('a static site goes live in its own container and is served through the edge with the edge rules', async () => {
    const css = 'body { color: #123456; }\n'.repeat(100);
    const { host, projectId } = await deploy('Docker Site', {
      'index.html': '<h1>docker home</h1>',
      'about/index.html': 'about',
      '404.html': 'custom missing',
      'style.css': css,
      '.env': 'SECRET=1',
    });
    const home = await h.site(host, '/');
    assert.is(home.status, 200);
    assert.match(home.body, 'docker home');
    assert.match(String(home.headers['content-type']), /^text\/html/);
    const release = home.headers['x-hoist-release'] as string;
    assert.ok(String(home.headers.etag).includes(release), 'the ETag names the release');
    assert.is((await h.site(host, '/', { 'if-none-match': String(home.headers.etag) })).status, 304);
    assert.is((await h.site(host, '/about')).status, 301);
    assert.is((await h.site(host, '/about/')).body, 'about');
    const missingPage = await h.site(host, '/nope');
    assert.is(missingPage.status, 404);
    assert.is(missingPage.body, 'custom missing');
    assert.is((await h.site(host, '/.env')).status, 404);

    // Its container runs the static server, which prints nothing of the site's: no log.
    assert.is(await h.running.kernel.get(DEPLOYER).logs!(release, 10), null);
    const log = await h.get(token, `/api/v1/projects/${projectId}/deployments/${release}/logs`);
    assert.equal(log, { status: 200, body: { deployment_id: release, kept: false, lines: [] } });

    const info = await liveContainer(projectId);
    assert.is(info.Config.Labels['hoist.deployment'], release);
    assert.is(info.Config.User, '10001:10001');
    assert.is(info.HostConfig.ReadonlyRootfs, true);
    assert.equal(info.HostConfig.CapDrop, ['ALL']);
    assert.equal(info.HostConfig.SecurityOpt, ['no-new-privileges']);
    assert.is(info.HostConfig.Memory, 512 * 1024 * 1024);
    assert.is(info.HostConfig.NanoCpus, 1_000_000_000);
    assert.is(info.HostConfig.PidsLimit, 256);
    assert.equal(info.HostConfig.Ulimits, [{ Name: 'fsize', Soft: 1024 * 1024 * 1024, Hard: 1024 * 1024 * 1024 }]);
    assert.is(info.HostConfig.Init, true);
    assert.ok(info.HostConfig.Tmpfs?.['/tmp']?.includes('size=1024m'));
    assert.is(info.HostConfig.Runtime, process.env.HOIST_DOCKER_RUNTIME ?? 'runc');
    assert.not.ok(info.Mounts.length, 'no host path, no Docker socket');
    assert.ok(info.NetworkSettings.Networks.hoist, 'on the hoist network');
  });

  test("a static site's _redirects and _headers are followed in its container: deep links get index.html", async () => {
    const { host } = await deploy('Docker SPA', {
      'index.html': '<h1>spa shell</h1>',
      _redirects: '/old/:id /new/:id 301\n/* /index.html 200\n',
      _headers: '/*\n  X-Frame-Options: DENY\n',
    });
    const deep = await h.site(host, '/app/deep/link');
    assert.is(deep.status, 200);
    assert.is(deep.body, '<h1>spa shell</h1>');
    assert.is(deep.headers['x-frame-options'], 'DENY', 'its _headers too');
    const moved = await h.site(host, '/old/42?x=1');
    assert.is(moved.status, 301);
    assert.is(moved.headers.location, '/new/42?x=1');
    // The rules file is not served: the fallback answers in its place.
    assert.is((await h.site(host, '/_redirects')).body, '<h1>spa shell</h1>');
  });

  test('a Node.js app goes live in its container, reached through the edge; a redeploy replaces it', async () => {
    const server = (marker: string) => `
const http = require('http');
const fs = require('fs');
http.createServer((req, res) => {
  if (req.url.startsWith('/probe/')) {
    const [host, port] = req.url.slice(7).split(':');
    const s = require('net').connect({ host, port: Number(port), timeout: 3000 });
    const done = (r) => { s.destroy(); res.end(r); };
    return s
      .on('connect', () => done('connected'))
      .on('timeout', () => done('timeout'))
      .on('error', (e) => done(e.code));
  }
  console.log('request ' + req.url);
  let writable = 'no';
  try { fs.writeFileSync('/app/x', '1'); writable = 'yes'; } catch {}
  fs.writeFileSync('/tmp/scratch', 'ok');
  res.setHeader('content-type', 'application/json');
  res.end(JSON.stringify({
    marker: ${JSON.stringify(marker)},
    uid: process.getuid(),
    appWritable: writable,
    tmp: fs.readFileSync('/tmp/scratch', 'utf8'),
    forwardedHost: req.headers['x-forwarded-host'] || null,
  }));
}).listen(Number(process.env.PORT), '127.0.0.1', () => console.log('docker app ${marker} listening'));
`;
    const pkg = JSON.stringify({ name: 'app', version: '1.0.0', scripts: { start: 'node server.js' } });
    const first = await deploy('Docker App', { 'package.json': pkg, 'server.js': server('one') });
    const res = await h.site(first.host, '/hello');
    assert.is(res.status, 200, res.body);
    const body = JSON.parse(res.body);
    assert.equal(body, { marker: 'one', uid: 10001, appWritable: 'no', tmp: 'ok', forwardedHost: first.host });
    const before = (await liveContainer(first.projectId)).Config.Labels['hoist.deployment'];
    // What it printed, read from its container's log by the deployer (as the API process does: this kernel's).
    const deployer = h.running.kernel.get(DEPLOYER);
    let lines: ReleaseLogLine[] | null = null;
    for (const end = Date.now() + 10_000; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
      lines = await deployer.logs!(before, 50);
      if (lines?.at(-1)?.text === 'request /hello') break;
    }
    assert.ok(lines, 'its lines are kept');
    assert.is(lines[0].text, 'docker app one listening', JSON.stringify(lines));
    assert.is(lines.at(-1)!.text, 'request /hello', JSON.stringify(lines));
    for (const { at } of lines) assert.ok(new Date(at).toISOString() === at && Date.now() - Date.parse(at) < 600_000);
    assert.equal(await deployer.logs!(before, 1), [lines.at(-1)]);
    assert.is(await deployer.logs!('no-such-release', 10), null);
    const log = await h.get(token, `/api/v1/projects/${first.projectId}/deployments/${before}/logs?lines=2`);
    assert.equal(log, { status: 200, body: { deployment_id: before, kept: true, lines: lines.slice(-2) } });
    // The release cannot open a connection to this host (through its network's gateway or any address) when Hoist, as
    // root here, firewalls it.
    const net = await testDocker().getNetwork('hoist').inspect();
    const bridge = net.Options?.['com.docker.network.bridge.name'] ?? `br-${net.Id.slice(0, 12)}`;
    if (process.getuid?.() === 0 && existsSync(`/sys/class/net/${bridge}`)) {
      const listener = createServer((c) => c.end('host'));
      await new Promise<void>((r) => listener.listen(0, '0.0.0.0', r));
      const port = (listener.address() as AddressInfo).port;
      try {
        for (const addr of [
          net.IPAM?.Config?.[0]?.Gateway,
          ...Object.values(networkInterfaces())
            .flat()
            .filter((a) => a?.family === 'IPv4' && !a.internal)
            .map((a) => a!.address),
        ]) {
          assert.match(
            (await h.site(first.host, `/probe/${addr}:${port}`)).body,
            /^(ECONNREFUSED|EHOSTUNREACH|timeout)$/,
            `${addr}:${port}`,
          );
        }
      } finally {
        listener.close();
      }
    }

    const up = await h.upload(
      token,
      `/api/v1/projects/${first.projectId}/local-to-live`,
      await zipOf({ 'package.json': pkg, 'server.js': server('two') }),
    );
    const op = await h.waitFor(token, (await up.json()).operation.id, undefined, 180_000);
    assert.is(op.status, 'succeeded', JSON.stringify(op));
    assert.is(JSON.parse((await h.site(first.host, '/')).body).marker, 'two');
    // The replaced release's container is removed once its drain time (30 s) is over; its image is kept
    // (within the plan's release_retention) so that a promote can start it again.
    const containers = async () => (await dockerLeftovers(before)).filter((l) => l.startsWith('container'));
    const end = Date.now() + 120_000;
    while ((await containers()).length && Date.now() < end) await new Promise((r) => setTimeout(r, 500));
    assert.equal(await containers(), []);
    assert.is((await dockerLeftovers(before)).filter((l) => l.startsWith('image')).length, 1);
  });

  test.run();
}
