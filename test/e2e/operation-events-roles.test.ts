// An operation's event stream with `hoist api` and `hoist worker` as separate processes (PostgreSQL +
// NATS JetStream): the worker writes the build's lines and state to the database, the API streams
// them; a client that hangs up in the middle resumes with Last-Event-ID, with no gap and no repeat.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { workspaceGate } from '../helpers/gated-build.js';
import { cluster, type Cluster, type RoleProcess } from '../helpers/roles.js';
import { expected, logLines, openStream, ours, readEvents, streamedSite } from '../helpers/sse.js';

let c: Cluster;
let api: RoleProcess;
let token: string;
test.before(async () => {
  c = await cluster();
  [api] = await Promise.all([c.start('api'), c.start('worker')]);
  token = await c.login(api.url);
});
test.after(async () => c?.close());

test('the API process streams what the worker process does, and a reconnect resumes', async () => {
  const gate = workspaceGate(c.dataDir, 'build.js');
  const res = await fetch(`${api.url}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      name: 'roles-events',
      settings: { build_command: 'node build.js', output_directory: 'dist' },
    }),
  });
  const project = await res.json();
  assert.is(res.status, 201, JSON.stringify(project));
  const form = new FormData();
  form.append('file', new Blob([new Uint8Array(await streamedSite(gate.id))]), 'site.zip');
  const up = await fetch(`${api.url}/api/v1/projects/${project.id}/local-to-live`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}` },
    body: form,
  });
  const queued = await up.json();
  assert.is(up.status, 202, JSON.stringify(queued));
  const url = `${api.url}/api/v1/operations/${queued.operation.id}`;

  const first = await openStream(url, token);
  assert.is(first.status, 200);
  const before = await readEvents(first, (e) => e.event === 'log' && e.data.lines.includes('line 9'));
  first.close();
  gate.open();
  const after = await readEvents(await openStream(url, token, before.at(-1)!.id));
  assert.equal(ours(logLines([...before, ...after])), expected);
  assert.is(after.at(-1)!.event, 'state');
  assert.is(after.at(-1)!.data.status, 'succeeded');
  gate.close();
});

test.run();
