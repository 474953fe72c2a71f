// What a server answers reaches a person's terminal as text only: a stand-in server puts escape sequences (window
// title, clipboard write, cursor moves, a C1 CSI, a carriage return) in every string a command shows (a project
// name a teammate chose, a build's output quoted in an error, a webhook endpoint's answer...), and the commands,
// run in this process, print none of them.
import { Command } from 'commander';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { commands } from '../../../../adapters/cli/commands/index.js';

const EVIL = '\x1b]0;owned\x07\x1b]52;c;cm0gLXJmIH4=\x1b\\\x1b[1A\x1b[2K\x9b2J\rok';
const id = '11111111-1111-4111-8111-111111111111';
const project = {
  id,
  name: `site${EVIL}`,
  slug: `site${EVIL}`,
  visibility: 'public',
  url: `http://site.localhost/${EVIL}`,
};
const op = {
  id,
  kind: 'deploy',
  status: 'failed',
  progress: 100,
  project_id: id,
  created_at: `now${EVIL}`,
  stages: {
    analyze: { status: 'succeeded' },
    build: { status: 'failed', error: { code: 'build_failed', message: `"npm run build${EVIL}" exited with 1` } },
  },
  build_log: { last_lines: [`> build${EVIL}`] },
  error: { code: `deploy_crash_loop${EVIL}`, message: `The app crashed. Last lines:\n${EVIL}\nbye${EVIL}` },
  next_step: { action: 'fix_input', message: `Fix it${EVIL}` },
};
const domain = {
  id,
  hostname: `app.example.com${EVIL}`,
  status: 'pending',
  message: `No TXT record${EVIL}`,
  url: `https://app.example.com${EVIL}`,
  next_check_at: `soon${EVIL}`,
  records: [{ type: 'TXT', name: `_hoist${EVIL}`, value: `token${EVIL}` }],
};
const GET: Record<string, unknown> = {
  '/api/v1/projects/': { projects: [project], next_cursor: null },
  [`/api/v1/operations/${id}`]: op,
  '/api/v1/operations': { operations: [op], next_cursor: `c${EVIL}` },
  '/api/v1/me': { user: { id, email: `me@x${EVIL}` }, account: { id, name: `acct${EVIL}`, plan: `pro${EVIL}` } },
  '/api/v1/account/members': {
    members: [{ id, email: `m@x${EVIL}`, role: 'owner', status: `active${EVIL}`, created_at: 'x' }],
  },
  [`/api/v1/projects/${id}/environment`]: {
    environment: [{ name: `A${EVIL}`, scope: 'both', target: 'all', digest: `d${EVIL}`, updated_at: 'x' }],
  },
  [`/api/v1/projects/${id}/releases`]: {
    releases: [{ id, live: true, target: 'production', status: 'live', source: `cli${EVIL}`, promotable: true }],
    next_cursor: null,
  },
  [`/api/v1/projects/${id}/domains`]: { domains: [domain] },
  [`/api/v1/projects/${id}/webhooks`]: { webhooks: [] },
  [`/api/v1/projects/${id}/deploy-hooks`]: { deploy_hooks: [] },
  [`/api/v1/projects/${id}/webhooks/${id}/deliveries`]: {
    deliveries: [{ created_at: 'x', event: 'ping', status: 'failed', attempts: 1, error: `502 ${EVIL}` }],
  },
  [`/api/v1/projects/${id}/deployments/${id}/logs`]: { deployment_id: `${id}${EVIL}`, kept: false, lines: [] },
};
const POST: Record<string, [number, unknown]> = {
  '/api/v1/upload-manifests': [200, { id: 'manifest', missing: [], file_count: 1, total_size: 2 }],
  '/api/v1/local-to-live': [202, { operation: { id }, project }],
  [`/api/v1/projects/${id}/releases/${id}/promote`]: [202, { operation: { id }, project }],
  [`/api/v1/projects/${id}/domains`]: [201, domain],
};

let server: http.Server;
let home: string;
const saved = { ...process.env };
test.before(async () => {
  server = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const [status, body] =
      req.method === 'GET' && path in GET
        ? [200, GET[path]]
        : req.method === 'POST' && path in POST
          ? POST[path]
          : req.method === 'DELETE' && path === `/api/v1/projects/${id}/`
            ? [202, { operation: { id } }]
            : [404, { error: { code: 'not_found', message: `No such thing${EVIL}` } }];
    req.resume().on('end', () => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  home = mkdtempSync(join(tmpdir(), 'hoist-server-text-'));
  Object.assign(process.env, {
    HOIST_API_URL: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    HOIST_TOKEN: 'token',
    XDG_CONFIG_HOME: home,
    NO_COLOR: '1',
  });
});
test.after(() => {
  server.close();
  rmSync(home, { recursive: true, force: true });
  process.env = saved;
});

/** Runs `hoist ...args` in this process (not on a terminal); everything it wrote, stdout and stderr together. */
async function run(args: string[]): Promise<string> {
  const program = new Command('hoist').exitOverride();
  for (const add of commands) add(program);
  let out = '';
  const write = (chunk: unknown) => ((out += String(chunk)), true);
  const saved = { log: console.log, error: console.error, out: process.stdout.write, err: process.stderr.write };
  const tty = process.stdout.isTTY;
  console.log = (...a: unknown[]) => write(`${a.join(' ')}\n`);
  console.error = console.log;
  process.stdout.write = write as typeof process.stdout.write;
  process.stderr.write = write as typeof process.stderr.write;
  process.stdout.isTTY = false;
  try {
    await program.parseAsync(['node', 'hoist', ...args]);
  } finally {
    Object.assign(console, { log: saved.log, error: saved.error });
    process.stdout.write = saved.out;
    process.stderr.write = saved.err;
    process.stdout.isTTY = tty;
    process.exitCode = 0;
  }
  return out;
}

// What a terminal would act on: C0 controls but tab and newline, DEL and C1 controls (ESC, BEL, CR, CSI...).
const CONTROL = /[\x00-\x08\x0b-\x1f\x7f-\x9f]/;

const cases: string[][] = [
  ['projects'],
  ['operations', 'show', id],
  ['operations', 'list'],
  ['whoami'],
  ['members', 'ls'],
  ['env', 'ls', '--project', id],
  ['releases', '--project', id],
  ['rollback', id, '--project', id],
  ['domains', 'ls', '--project', id],
  ['domains', 'add', 'app.example.com', '--project', id],
  ['webhooks', 'deliveries', id, '--project', id],
  ['logs', id, '--project', id],
  ['projects', 'rm', id, '--yes'],
  ['operations', 'show', 'missing'],
];
for (const args of cases)
  test(`hoist ${args.join(' ')} prints no escape sequence a server sent`, async () => {
    const out = await run(args);
    assert.ok(out.trim(), 'it printed something');
    assert.not.match(out, CONTROL, JSON.stringify(out));
  });

test('hoist deploy prints no escape sequence of the project, the stages or the error the server sent', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'hoist-server-text-site-'));
  writeFileSync(join(dir, 'index.html'), 'hi');
  try {
    const out = await run(['deploy', dir, '--name', 'site']);
    assert.match(out, 'Deploying site');
    assert.match(out, 'build: failed (build_failed: "npm run build');
    assert.match(out, 'The deployment failed: deploy_crash_loop');
    assert.match(out, 'Next step: Fix it');
    assert.not.match(out, CONTROL, JSON.stringify(out));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('--json keeps what the server sent as it came (JSON escapes it)', async () => {
  const out = await run(['projects', '--json']);
  assert.equal(JSON.parse(out), [project]);
});

test.run();
