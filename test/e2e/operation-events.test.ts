// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { workspaceGate } from '../helpers/gated-build.js';
import { liveHoist, type LiveHoist } from '../helpers/live.js';
import { expected, logLines, openStream, ours, readEvents, streamedSite, type SseEvent } from '../helpers/sse.js';

let h: LiveHoist;
let token: string;
let other: { token: string };
const STREAMS_PER_ACCOUNT = 7;
test.before(async () => {
  h = await liveHoist({ eventStreamHeartbeatSeconds: 1, eventStreamsPerAccount: STREAMS_PER_ACCOUNT });
  ({ token } = await h.login());
  other = await h.login();
});
let closed = false;
test.after(async () => {
  if (!closed) await h?.close();
});

const gate = () => workspaceGate(h.dataDir, 'build.js');
async function gatedDeploy(name: string) {
  const g = gate();
  const res = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, settings: { build_command: 'node build.js', output_directory: 'dist' } }),
  });
  const project = await res.json();
  assert.is(res.status, 201, JSON.stringify(project));
  const up = await h.upload(token, `/api/v1/projects/${project.id}/local-to-live`, await streamedSite(g.id));
  const queued = await up.json();
  assert.is(up.status, 202, JSON.stringify(queued));
  return { gate: g, project, op: queued.operation.id as string };
}

const opUrl = (id: string) => `${h.api}/api/v1/operations/${id}`;

test('a stream resumes with Last-Event-ID; many clients each get every line once and the final state', async () => {
  const { gate: g, project, op } = await gatedDeploy('events-resume');
  // The first client: reads until the build waits at the gate, lingers past a heartbeat, then hangs up.
  const first = await openStream(opUrl(op), token);
  assert.is(first.status, 200);
  assert.match(first.headers.get('content-type') ?? '', /^text\/event-stream/);
  const before = await readEvents(first, (e) => e.event === 'log' && e.data.lines.includes('line 9'));
  await new Promise((r) => setTimeout(r, 1300));
  first.close();
  assert.ok(first.text().includes(': heartbeat'), 'a heartbeat comment came while the build waited');
  const states = before.filter((e) => e.event === 'state');
  assert.ok(states.length >= 1 && states[0].data.id === op, 'the first event is the state');
  assert.equal(ours(logLines(before)), expected.slice(0, 10));
  const lastId = before.at(-1)!.id!;

  // A resumed client, five new ones and a build-log stream; one more stream of the account is refused.
  const resumed = await openStream(opUrl(op), token, lastId);
  const fresh = await Promise.all(Array.from({ length: 5 }, () => openStream(opUrl(op), token)));
  const buildId = before.filter((e) => e.event === 'log')[0].data.build_id;
  const buildStream = await openStream(`${h.api}/api/v1/projects/${project.id}/builds/${buildId}/log`, token);
  assert.is(buildStream.status, 200);
  const refused = await openStream(opUrl(op), token);
  assert.is(refused.status, 429, JSON.stringify(refused.body));
  assert.is(refused.body.error.code, 'rate_limited');
  g.open();

  const after = await readEvents(resumed);
  const all = [...before, ...after];
  const lines = logLines(all);
  assert.equal(ours(lines), expected, 'no gap, no repeat across the reconnect');
  const ids = all.map((e) => e.id!.split('.').map(Number));
  for (let i = 1; i < ids.length; i++)
    assert.ok(ids[i][0] >= ids[i - 1][0] && ids[i][1] >= ids[i - 1][1], `ids never go back: ${all.map((e) => e.id)}`);
  const revisions = all.filter((e) => e.event === 'state').map((e) => Number(e.id!.split('.')[0]));
  assert.equal(
    revisions,
    [...new Set(revisions)].sort((a, b) => a - b),
    'no state revision twice',
  );
  const last = after.at(-1)!;
  assert.is(last.event, 'state', 'the final state comes last');
  assert.is(last.data.status, 'succeeded');
  assert.is(last.data.result.live, true);

  for (const s of fresh) {
    const got = await readEvents(s);
    assert.equal(ours(logLines(got)), expected);
    assert.is(got.at(-1)!.data.status, 'succeeded');
    assert.is(got.filter((e) => e.event === 'state')[0].data.stages.analyze.status !== undefined, true);
  }
  const buildEvents = await readEvents(buildStream);
  assert.ok(buildEvents.every((e: SseEvent) => e.event === 'log' && e.data.build_id === buildId));
  assert.equal(ours(logLines(buildEvents)), expected);

  // Polling the same URL without the Accept header still answers JSON.
  const polled = await h.get(token, `/api/v1/operations/${op}`);
  assert.is(polled.status, 200);
  assert.is(polled.body.status, 'succeeded');
  // Resuming a finished stream from its last event gives nothing more, and ends.
  const again = await openStream(opUrl(op), token, last.id);
  assert.equal(await readEvents(again), []);
  // From the start, a finished operation's stream has every line and the final state, then ends.
  const replay = await readEvents(await openStream(opUrl(op), token));
  assert.equal(ours(logLines(replay)), expected);
  assert.is(replay.at(-1)!.data.status, 'succeeded');
});

test('a client that disconnects in the middle frees its stream; a deletion streams to its end', async () => {
  const { gate: g, project, op } = await gatedDeploy('events-leave');
  for (let i = 0; i < STREAMS_PER_ACCOUNT * 2; i++) {
    const s = await openStream(opUrl(op), token);
    assert.is(s.status, 200, `stream ${i}: ${JSON.stringify(s.body)}`);
    await readEvents(s, (e) => e.event === 'state');
    s.close();
  }
  g.open();
  const end = await readEvents(await openStream(opUrl(op), token));
  assert.is(end.at(-1)!.data.status, 'succeeded');

  // A project deletion's operation streams too, to its end.
  const del = await fetch(`${h.api}/api/v1/projects/${project.id}/`, {
    method: 'DELETE',
    headers: { authorization: `Bearer ${token}` },
  });
  const queued = await del.json();
  assert.is(del.status, 202, JSON.stringify(queued));
  const gone = await readEvents(await openStream(opUrl(queued.operation.id), token));
  assert.is(gone.at(-1)!.event, 'state');
  assert.is(gone.at(-1)!.data.kind, 'delete_project');
  assert.is(gone.at(-1)!.data.status, 'succeeded');
});

test("bad Last-Event-ID is 400; another account's operation and build are 404", async () => {
  const { body } = await h.get(token, '/api/v1/operations?kind=deploy&limit=1');
  const op = body.operations[0];
  for (const bad of ['x', '1', '1.2.3', '-2.0']) {
    const s = await openStream(opUrl(op.id), token, bad);
    assert.is(s.status, 400, bad);
    assert.is(s.body.error.code, 'invalid_request');
    assert.is(s.body.error.details.field, 'Last-Event-ID');
  }
  const foreign = await openStream(opUrl(op.id), other.token);
  assert.is(foreign.status, 404);
  assert.is(foreign.body.error.code, 'not_found');
  const build = `${h.api}/api/v1/projects/${op.project_id}/builds/${op.build_log.build_id}/log`;
  assert.is((await openStream(build, other.token)).status, 404);
  assert.is((await openStream(build, token, 'x')).status, 400);
});

test('closing the server ends its open streams (last: it stops Hoist)', async () => {
  const { op } = await gatedDeploy('events-shutdown');
  const s = await openStream(opUrl(op), token);
  await readEvents(s, (e) => e.event === 'state');
  const rest = readEvents(s);
  closed = true;
  await h.close();
  const after = await rest;
  assert.ok(
    after.every((e) => e.data.status !== 'succeeded'),
    'the stream ended without the build finishing',
  );
});

test.run();
