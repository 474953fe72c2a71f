// legs: db
// kill -9 of the whole `hoist start` process group one second into six deploys (three static
// builds, three Node.js apps), then a restart: every operation ends, every live site serves its own
// content, and no release process, duplicate or workspace is left over.
import { RequestContext } from '@mikro-orm/core';
import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readdirSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ACCOUNT_SERVICE, type AccountService } from '../../core/accounts/account-service.js';
import { testCli, type TestCli } from '../helpers/cli.js';
import { freePort, startHoist, until, type HoistProcess } from '../helpers/hoist-process.js';
import { processesRunning } from '../helpers/gated-build.js';
import { zipOf } from '../helpers/live.js';

let cli: TestCli;
let server: HoistProcess | undefined;
const tag = randomUUID().slice(0, 8);

const killGroup = async (child: ChildProcess) => {
  const exited = new Promise((r) => child.once('exit', r));
  process.kill(-child.pid!, 'SIGKILL');
  await exited;
};

test.before(async () => {
  cli = await testCli();
});
test.after(async () => {
  if (server?.pid) {
    try {
      process.kill(-server.pid, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await cli?.close();
});

test(
  'kill -9 of the process group during six deploys, then a restart: all end, each ' +
    'site serves its own, nothing is left over',
  async () => {
    const [apiPort, edgePort] = [await freePort(), await freePort()];
    Object.assign(cli.env, {
      HOIST_PORT: String(apiPort),
      HOIST_EDGE_PORT: String(edgePort),
      HOIST_QUEUE_VISIBILITY_SECONDS: '2',
      HOIST_STUCK_AFTER_SECONDS: '2',
    });
    const api = `http://127.0.0.1:${apiPort}`;
    // Two accounts: six builds at once are more than one plan allows.
    for (const [email, plan] of [
      ['crash-a@example.com', 'team'],
      ['crash-b@example.com', 'pro'],
    ]) {
      await RequestContext.create(cli.kernel.orm.em.fork(), () =>
        cli.kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password: 'a-long-password', plan }),
      );
    }
    server = await startHoist(cli, { group: true });
    const login = async (email: string) =>
      (
        await (
          await fetch(`${api}/api/v1/auth/login`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ email, password: 'a-long-password' }),
          })
        ).json()
      ).token as string;
    const tokens = [await login('crash-a@example.com'), await login('crash-b@example.com')];
    const auth = { authorization: `Bearer ${tokens[0]}` };
    const op = async (id: string) => {
      for (const token of tokens) {
        const res = await fetch(`${api}/api/v1/operations/${id}`, { headers: { authorization: `Bearer ${token}` } });
        if (res.status === 200) return res.json();
      }
      throw new Error(`operation ${id} not found`);
    };
    const site = (name: string) =>
      new Promise<string | null>((resolve) => {
        http
          .get(
            { host: '127.0.0.1', port: edgePort, path: '/', headers: { host: `${name}.localhost:${edgePort}` } },
            (res) => {
              let body = '';
              res.on('data', (d) => (body += d)).on('end', () => resolve(res.statusCode === 200 ? body : null));
            },
          )
          .on('error', () => resolve(null));
      });
    const upload = async (
      name: string,
      files: Record<string, string>,
      settings?: Record<string, string>,
      token = tokens[0],
    ) => {
      const auth = { authorization: `Bearer ${token}` };
      if (settings) {
        const res = await fetch(`${api}/api/v1/projects/`, {
          method: 'POST',
          headers: { ...auth, 'content-type': 'application/json' },
          body: JSON.stringify({ name, settings }),
        });
        assert.is(res.status, 201);
      }
      const form = new FormData();
      form.append('name', name);
      form.append('file', new Blob([new Uint8Array(await zipOf(files))]), 'site.zip');
      const res = await fetch(`${api}/api/v1/local-to-live`, { method: 'POST', headers: auth, body: form });
      const body = await res.json();
      assert.is(res.status, 202, JSON.stringify(body));
      return body.operation.id as string;
    };

    // Static builds that take a moment, and Node.js apps whose processes carry their marker.
    const build = (marker: string) =>
      `setTimeout(() => { require('fs').mkdirSync('out', { recursive: true }); ` +
      `require('fs').writeFileSync('out/index.html', '${marker}'); }, 1500);`;
    const app = (marker: string) =>
      `require('http').createServer((q, r) => r.end('${marker}')).listen(Number(process.env.PORT));`;
    const ops: { name: string; marker: string; id: string; node: boolean }[] = [];
    for (let i = 0; i < 3; i++) {
      const name = `crash-static-${i}`;
      const marker = `static-${i}-${tag}`;
      ops.push({
        name,
        marker,
        node: false,
        id: await upload(
          name,
          { 'build.js': build(marker), 'index.html': 'source' },
          { build_command: 'node build.js', output_directory: 'out' },
        ),
      });
    }
    for (let i = 0; i < 3; i++) {
      const name = `crash-node-${i}`;
      const marker = `node-${i}-${tag}`;
      const pkg = JSON.stringify({ name, version: '1.0.0', scripts: { start: `node server.js ${marker}` } });
      ops.push({
        name,
        marker,
        node: true,
        id: await upload(name, { 'package.json': pkg, 'server.js': app(marker) }, undefined, tokens[i === 0 ? 0 : 1]),
      });
    }
    await new Promise((r) => setTimeout(r, 1000));
    await killGroup(server);
    server = await startHoist(cli, { group: true });

    const ended = async () => {
      for (const o of ops) if (!['succeeded', 'failed', 'canceled'].includes((await op(o.id)).status)) return false;
      return true;
    };
    await until(ended, 90_000).catch(async () => {
      // What is still running, and what Hoist printed, name the cause.
      const views = await Promise.all(ops.map(async (o) => ({ name: o.name, view: await op(o.id) })));
      const running = views.filter((v) => v.view.status === 'running');
      console.log(`! crash: still running after 90 s: ${running.map((v) => v.name).join(', ')}`);
      throw new Error(`${JSON.stringify(running, null, 1)}\nhoist printed:\n${server!.output().slice(-8000)}`);
    });
    for (const o of ops) {
      const view = await op(o.id);
      assert.is(view.status, 'succeeded', `${o.name}: ${JSON.stringify(view)}`);
      assert.is(await site(o.name), o.marker, `${o.name} serves its own content`);
    }
    for (const o of ops.filter((x) => x.node)) {
      assert.is(
        processesRunning(`node server.js ${o.marker}`).length,
        1,
        `${o.name} runs once, with no orphan from before the crash`,
      );
    }
    await until(() => readdirSync(join(cli.dataDir, 'work')).length === 0, 10_000).catch(() => {});
    assert.equal(readdirSync(join(cli.dataDir, 'work')), [], 'no workspace is left');

    // Deleting a project stops its release: nothing of it keeps serving.
    const node = ops.find((x) => x.node)!;
    const { projects } = (await (await fetch(`${api}/api/v1/projects/`, { headers: auth })).json()) as {
      projects: { id: string; name: string }[];
    };
    const project = projects.find((p) => p.name === node.name)!;
    assert.ok(project, JSON.stringify(projects));
    const del = await fetch(`${api}/api/v1/projects/${project.id}/`, { method: 'DELETE', headers: auth });
    assert.ok(del.status < 300, `delete: ${del.status}`);
    await until(() => processesRunning(`node server.js ${node.marker}`).length === 0, 30_000);
  },
);

test.run();
