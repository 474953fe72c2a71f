// legs: db
// The agent-tool interface as an MCP server (/agent/v1/mcp, JSON-RPC over POST): a coding agent with an agent token
// initializes, lists the tools, deploys files and waits for the outcome, reads the operation and its projects; a REST
// token, a bad request, an unknown method or tool, and bad files are refused with their errors, nothing deployed.
import { RequestContext } from '@mikro-orm/core';
import { createHash } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ACCOUNT_SERVICE, type AccountService } from '../../core/accounts/account-service.js';
import { AGENT_AUTH_SERVICE } from '../../core/auth/agent-auth-service.js';
import { OPERATION_VIEWS } from '../../core/deployments/operation-views.js';
import { Operation } from '../../core/entities/operation.js';
import { UploadSession } from '../../core/entities/upload-session.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let agent: string;
let rest: string;
let accountId: string;
let userId: string;
test.before(async () => {
  h = await liveHoist();
  const kernel = h.running.kernel;
  const email = `agent-${process.pid}@example.com`;
  await RequestContext.create(kernel.orm.em.fork(), async () => {
    const made = await kernel
      .get<AccountService>(ACCOUNT_SERVICE)
      .create({ email, password: 'an agent password', plan: 'pro' });
    ({ id: accountId } = made.account);
    ({ id: userId } = made.user);
    agent = (await kernel.get(AGENT_AUTH_SERVICE).mint(email, 3600)).token;
  });
  ({ token: rest } = await h.login());
});
test.after(async () => h?.close());

let id = 0;
/** POSTs one JSON-RPC request (or `raw`) to the MCP endpoint with `token`. */
async function rpc(method: string, params?: object, token = agent, raw?: string) {
  const res = await fetch(`${h.api}/agent/v1/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
    },
    body: raw ?? JSON.stringify({ jsonrpc: '2.0', id: ++id, method, ...(params && { params }) }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
const call = (name: string, args: object) => rpc('tools/call', { name, arguments: args });
const operations = () => h.running.kernel.orm.em.fork().count(Operation, { accountId });

test('an agent initializes, lists the tools, deploys files, waits for the URL and reads it back', async () => {
  const init = await rpc('initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'test-agent', version: '1' },
  });
  assert.is(init.status, 200, JSON.stringify(init.body));
  assert.equal(
    [init.body.result.protocolVersion, init.body.result.serverInfo.name, init.body.result.capabilities.tools],
    ['2025-06-18', 'hoist', { listChanged: false }],
  );
  const notified = await rpc(
    '',
    undefined,
    agent,
    JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }),
  );
  assert.is(notified.status, 202);
  const tools = (await rpc('tools/list')).body.result.tools;
  assert.equal(
    tools.map((t: { name: string }) => t.name),
    ['deploy_files', 'create_upload_url', 'get_operation', 'get_logs', 'list_projects', 'whoami'],
  );
  assert.ok(tools.every((t: any) => t.description && t.inputSchema.type === 'object'));

  const deployed = await call('deploy_files', {
    project: 'agent-site',
    files: [
      { path: 'index.html', content: '<h1>made by an agent</h1>' },
      { path: 'img/dot.gif', content: 'R0lGODlhAQABAAAAACw=', encoding: 'base64' },
    ],
  });
  assert.is(deployed.status, 200, JSON.stringify(deployed.body));
  const out = deployed.body.result.structuredContent;
  assert.is(deployed.body.result.isError, undefined, JSON.stringify(out));
  assert.is(out.operation.status, 'succeeded', JSON.stringify(out.operation));
  assert.equal(JSON.parse(deployed.body.result.content[0].text), out);
  const host = hostOf(out.project.url);
  assert.is((await h.site(host)).body, '<h1>made by an agent</h1>');
  assert.equal(
    Buffer.from((await h.site(host, '/img/dot.gif')).body, 'latin1')
      .subarray(0, 6)
      .toString(),
    'GIF89a',
  );

  const op = await call('get_operation', { operation_id: out.operation.id });
  assert.is(op.body.result.structuredContent.status, 'succeeded');
  const listed = (await call('list_projects', {})).body.result.structuredContent.projects;
  assert.equal(
    listed.map((p: any) => [p.name, p.url]),
    [['agent-site', out.project.url]],
  );
  const who = (await call('whoami', {})).body.result.structuredContent;
  assert.is(who.account.id, accountId);

  // A preview, and a deploy that does not wait.
  const preview = await call('deploy_files', {
    project: 'agent-site',
    files: [{ path: 'index.html', content: 'next' }],
    preview: true,
    wait_seconds: 0,
  });
  const started = preview.body.result.structuredContent;
  assert.ok(['queued', 'running', 'succeeded'].includes(started.operation.status), started.operation.status);
  const end = Date.now() + 60_000;
  let view = started.operation;
  while (view.status !== 'succeeded' && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 200));
    view = (await call('get_operation', { operation_id: view.id })).body.result.structuredContent;
  }
  assert.is(view.status, 'succeeded', JSON.stringify(view));
  assert.is(view.result.live, false);
  assert.is((await h.site(host)).body, '<h1>made by an agent</h1>', 'the live site stays');
});

test('REST tokens, bad requests, unknown methods and tools, bad files: refused, nothing deployed', async () => {
  const before = await operations();
  const restRefused = await rpc('tools/list', undefined, rest);
  assert.is(restRefused.status, 401);
  assert.is((await rpc('tools/list', undefined, 'not-a-token')).status, 401);

  for (const raw of ['[{"jsonrpc":"2.0","id":1,"method":"ping"}]', '{"id":1,"method":"ping"}', '"ping"']) {
    const res = await rpc('', undefined, agent, raw);
    assert.is(res.status, 400, raw);
    assert.is(res.body.error.code, raw.startsWith('"') ? -32700 : -32600, raw);
  }
  assert.is((await rpc('resources/list')).body.error.code, -32601);
  assert.is((await rpc('tools/call', { name: 'rm_rf', arguments: {} })).body.error.code, -32602);
  assert.is((await rpc('tools/call', { arguments: {} })).body.error.code, -32602);
  assert.equal((await rpc('ping')).body.result, {});
  const get = await fetch(`${h.api}/agent/v1/mcp`, { headers: { authorization: `Bearer ${agent}` } });
  assert.is(get.status, 405);
  const huge = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'tools/call',
    params: {
      name: 'deploy_files',
      arguments: { project: 'x', files: [{ path: 'a', content: 'x'.repeat(17 << 20) }] },
    },
  });
  assert.is((await rpc('', undefined, agent, huge)).status, 413);

  const bad: [object, string][] = [
    [{ project: 'x', files: [] }, 'files'],
    [{ project: '', files: [{ path: 'a', content: 'b' }] }, 'project'],
    [{ project: 'x', files: [{ path: '../escape.html', content: 'b' }] }, 'files[0].path'],
    [{ project: 'x', files: [{ path: '/etc/passwd', content: 'b' }] }, 'files[0].path'],
    [
      {
        project: 'x',
        files: [
          { path: 'a.html', content: 'b' },
          { path: 'a.html', content: 'c' },
        ],
      },
      'files[1].path',
    ],
    [{ project: 'x', files: [{ path: 'a.html', content: 7 }] }, 'files[0].content'],
    [{ project: 'x', files: [{ path: 'a.html', content: 'b', encoding: 'hex' }] }, 'files[0].encoding'],
    [{ project: 'x', files: [{ path: 'a.html', content: 'b' }], wait_seconds: 9999 }, 'wait_seconds'],
  ];
  for (const [args, field] of bad) {
    const res = await call('deploy_files', args);
    assert.is(res.status, 200, JSON.stringify(args));
    assert.is(res.body.result.isError, true, JSON.stringify(res.body));
    assert.equal(
      [res.body.result.structuredContent.error.code, res.body.result.structuredContent.error.details.field],
      ['invalid_request', field],
      JSON.stringify(args),
    );
  }
  // Another account's operation, or none, is not found.
  const denied = await call('get_operation', { operation_id: '00000000-0000-0000-0000-000000000000' });
  assert.is(denied.body.result.isError, true);
  assert.is(denied.body.result.structuredContent.error.code, 'not_found');
  assert.is(await operations(), before, 'nothing was deployed');
});

test('5,000 tiny files are packed one at a time, memory bounded; a malformed operation id is not found', async () => {
  // Each file used to start its own deflate at once (about 200 KiB of zlib state each): +1 GiB for a 250 KB request.
  const files = Array.from({ length: 5000 }, (_, i) => ({ path: `f/${i}.txt`, content: String(i % 10) }));
  files[0] = { path: 'index.html', content: 'many files' };
  const before = process.memoryUsage.rss();
  let peak = before;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 5);
  const deployed = await call('deploy_files', { project: 'agent-many', files, wait_seconds: 0 }).finally(() =>
    clearInterval(sampler),
  );
  const out = deployed.body.result.structuredContent;
  assert.is(deployed.body.result.isError, undefined, JSON.stringify(out));
  assert.ok(peak - before < 400 * 2 ** 20, `the API grew by ${Math.round((peak - before) / 2 ** 20)} MiB`);
  let op = out.operation;
  const end = Date.now() + 120_000;
  while (!['succeeded', 'failed', 'canceled'].includes(op.status) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 250));
    op = (await call('get_operation', { operation_id: op.id })).body.result.structuredContent;
  }
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is((await h.site(hostOf(out.project.url), '/f/4999.txt')).body, '9');

  for (const operation_id of ['not-a-uuid', "x' or '1'='1"]) {
    const res = await call('get_operation', { operation_id });
    assert.is(res.body.error, undefined, JSON.stringify(res.body));
    assert.is(res.body.result.structuredContent.error.code, 'not_found');
  }
});

test('an agent that goes away while deploy_files waits: the server stops waiting, the deploy goes on', async () => {
  const views = h.running.kernel.get(OPERATION_VIEWS);
  const read = views.get.bind(views);
  let reads = 0;
  views.get = (...args: Parameters<typeof read>) => {
    reads++;
    return read(...args);
  };
  try {
    const files = [
      {
        path: 'package.json',
        content: JSON.stringify({ name: 'slow', scripts: { build: 'node -e "setTimeout(() => {}, 20000)"' } }),
      },
      { path: 'index.html', content: 'slow' },
    ];
    const gone = new AbortController();
    const call = fetch(`${h.api}/agent/v1/mcp`, {
      method: 'POST',
      signal: gone.signal,
      headers: { authorization: `Bearer ${agent}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: ++id,
        method: 'tools/call',
        params: { name: 'deploy_files', arguments: { project: 'agent-gone', files, wait_seconds: 60 } },
      }),
    }).catch((err: Error) => err);
    const deadline = Date.now() + 10_000;
    while (reads < 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(reads >= 3, 'the call waits, reading its operation');
    gone.abort();
    assert.instance(await call, Error);
    await new Promise((r) => setTimeout(r, 600));
    const after = reads;
    await new Promise((r) => setTimeout(r, 1500));
    assert.is(reads, after, 'no more reads once the agent is gone');
    const ops = await RequestContext.create(h.running.kernel.orm.em.fork(), () =>
      h.running.kernel.orm.em.find(Operation, { accountId }, { orderBy: { createdAt: 'desc' }, limit: 1 }),
    );
    assert.not.ok(['failed', 'canceled'].includes(ops[0].status), 'the deploy itself goes on');
  } finally {
    views.get = read;
  }
});

test("get_logs reads what a project's Node.js app printed; a static site keeps none; bad asks refused", async () => {
  const server =
    "console.log('hello from the agent app');" +
    "require('http').createServer((q, s) => s.end('up')).listen(process.env.PORT);";
  const app = await call('deploy_files', {
    project: 'agent-logs',
    files: [
      { path: 'package.json', content: JSON.stringify({ name: 'agent-logs', main: 'server.js' }) },
      { path: 'server.js', content: server },
    ],
  });
  const deployed = app.body.result.structuredContent;
  assert.is(deployed.operation.status, 'succeeded', JSON.stringify(deployed));
  let logs = (await call('get_logs', { project: 'agent-logs' })).body.result.structuredContent;
  const end = Date.now() + 10_000;
  while (!logs.lines?.some((l: { text: string }) => l.text.includes('hello from the agent app')) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 250));
    logs = (await call('get_logs', { project: 'agent-logs', lines: 5 })).body.result.structuredContent;
  }
  assert.is(logs.kept, true, JSON.stringify(logs));
  assert.ok(
    logs.lines.some((l: { text: string; at: string }) => l.text.includes('hello from the agent app') && l.at),
    JSON.stringify(logs),
  );
  const mine = logs.deployment_id;
  const same = (await call('get_logs', { project: 'agent-logs', deployment_id: mine })).body.result;
  assert.is(same.structuredContent.deployment_id, mine);

  const site = await call('deploy_files', { project: 'agent-static', files: [{ path: 'index.html', content: 'hi' }] });
  assert.is(site.body.result.structuredContent.operation.status, 'succeeded');
  const none = (await call('get_logs', { project: 'agent-static' })).body.result.structuredContent;
  assert.equal([none.kept, none.lines], [false, []]);

  for (const [args, code, why] of [
    [{ project: 'no-such-project' }, 'not_found', 'an unknown project'],
    [{ project: 'agent-static', deployment_id: mine }, 'not_found', "another project's deployment"],
    [{ project: 'agent-logs', deployment_id: 'not-a-uuid' }, 'not_found', 'a malformed id'],
    [{ project: 'agent-logs', lines: 0 }, 'invalid_request', 'no lines'],
    [{ project: 'agent-logs', lines: 1001 }, 'invalid_request', 'too many lines'],
  ] as const) {
    const res = await call('get_logs', args);
    assert.is(res.body.result.isError, true, why);
    assert.is(res.body.result.structuredContent.error.code, code, why);
  }
});

test('create_upload_url: a one-time URL takes a ZIP without a token and deploys it; bad asks refused', async () => {
  const made = await call('create_upload_url', { project: 'agent-zip' });
  const out = made.body.result.structuredContent;
  assert.is(made.body.result.isError, undefined, JSON.stringify(out));
  assert.match(out.upload_url, `${h.api}/api/v1/upload-sessions/`);
  assert.match(out.how, out.upload_url);
  const tokenHash = createHash('sha256').update(out.upload_url.split('/').at(-2)).digest('hex');
  const session = await h.running.kernel.orm.em.fork().findOneOrFail(UploadSession, { tokenHash });
  assert.is(session.userId, userId, 'the session records the user the agent acts for (removing them expires it)');
  const post = () => {
    const form = new FormData();
    return zipOf({ 'index.html': 'from a zip' }).then((zip) => {
      form.append('file', new Blob([new Uint8Array(zip)]), 'site.zip');
      return fetch(out.upload_url, { method: 'POST', body: form });
    });
  };
  const sent = await post();
  assert.is(sent.status, 202, await sent.clone().text());
  let op = (await sent.json()).operation;
  const end = Date.now() + 60_000;
  while (!['succeeded', 'failed', 'canceled'].includes(op.status) && Date.now() < end) {
    await new Promise((r) => setTimeout(r, 250));
    op = (await call('get_operation', { operation_id: op.id })).body.result.structuredContent;
  }
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is((await h.site(hostOf(op.result.url), '/')).body, 'from a zip');
  assert.is((await post()).status, 410, 'the URL works once');
  for (const [args, why] of [
    [{}, 'no project'],
    [{ project: '' }, 'an empty name'],
    [{ project: 'x', preview: 'yes' }, 'preview not a boolean'],
  ] as const) {
    const res = await call('create_upload_url', args);
    assert.is(res.body.result.isError, true, why);
    assert.is(res.body.result.structuredContent.error.code, 'invalid_request', why);
  }
});

test.run();
