// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
let other: { token: string; accountId: string };
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
  other = await h.login();
});
test.after(async () => h?.close());

async function project(tok: string, name: string) {
  const res = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name }),
  });
  const body = await res.json();
  assert.is(res.status, 201, JSON.stringify(body));
  return body as { id: string };
}

/** Deploys `files` to the project and waits for the operation's end; returns its id. */
async function deploy(tok: string, projectId: string, files: Record<string, string>): Promise<string> {
  const res = await h.upload(tok, `/api/v1/projects/${projectId}/local-to-live`, await zipOf(files));
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  await h.waitFor(tok, body.operation.id);
  return body.operation.id;
}

const list = (tok: string, query = '') => h.get(tok, `/api/v1/operations${query}`);

let a: { id: string };
let b: { id: string };
const ops: string[] = []; // oldest first: a ok, b ok, a failed
test("the list shows the account's operations newest first, each as GET /operations/{id} does", async () => {
  a = await project(token, 'list-a');
  b = await project(token, 'list-b');
  ops.push(await deploy(token, a.id, { 'index.html': 'a' }));
  ops.push(await deploy(token, b.id, { 'index.html': 'b' }));
  // No index.html and no package.json: Analyze fails.
  ops.push(await deploy(token, a.id, { 'readme.txt': 'nothing to serve' }));
  const otherProject = await project(other.token, 'list-other');
  await deploy(other.token, otherProject.id, { 'index.html': 'other' });

  const { status, body } = await list(token);
  assert.is(status, 200, JSON.stringify(body));
  assert.equal(
    body.operations.map((o: any) => o.id),
    [...ops].reverse(),
  );
  assert.is(body.next_cursor, null);
  const one = await h.get(token, `/api/v1/operations/${ops[0]}`);
  const listed = body.operations.find((o: any) => o.id === ops[0]);
  assert.equal({ ...listed, queue: null }, { ...one.body, queue: null });
  assert.is(body.operations[0].status, 'failed');
  assert.is(body.operations[1].status, 'succeeded');
});

test('pages follow next_cursor to the end with every operation once', async () => {
  const seen: string[] = [];
  let cursor: string | null = null;
  for (let i = 0; i < 10; i++) {
    const q: string = `?limit=1${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const { status, body } = await list(token, q);
    assert.is(status, 200, JSON.stringify(body));
    assert.is(body.operations.length, 1);
    seen.push(body.operations[0].id);
    cursor = body.next_cursor;
    if (!cursor) break;
  }
  assert.equal(seen, [...ops].reverse());
});

test('filters by project, status and kind, combined', async () => {
  const ids = async (q: string) => {
    const { status, body } = await list(token, q);
    assert.is(status, 200, JSON.stringify(body));
    return body.operations.map((o: any) => o.id);
  };
  assert.equal(await ids(`?project_id=${a.id}`), [ops[2], ops[0]]);
  assert.equal(await ids(`?project_id=${b.id}`), [ops[1]]);
  assert.equal(await ids('?status=failed'), [ops[2]]);
  assert.equal(await ids(`?status=succeeded&project_id=${a.id}`), [ops[0]]);
  assert.equal(await ids('?kind=deploy&status=succeeded'), [ops[1], ops[0]]);
  assert.equal(await ids('?kind=delete_project'), []);
  assert.equal(await ids('?status=running'), []);
});

test('bad filters, cursors and limits are 400 invalid_request naming the field', async () => {
  const cases: [string, string][] = [
    ['?status=done', 'status'],
    ['?kind=build', 'kind'],
    ['?limit=0', 'limit'],
    ['?limit=101', 'limit'],
    ['?limit=ten', 'limit'],
    ['?cursor=not-a-cursor', 'cursor'],
    ['?project_id=nope', 'project_id'],
    ['?colour=blue', 'colour'],
  ];
  for (const [q, field] of cases) {
    const { status, body } = await list(token, q);
    assert.is(status, 400, `${q}: ${JSON.stringify(body)}`);
    assert.is(body.error.code, 'invalid_request', q);
    assert.ok(typeof body.error.request_id === 'string' && body.error.message, q);
    assert.ok(JSON.stringify(body.error).includes(field), `${q}: ${JSON.stringify(body.error)}`);
  }
});

test("another account's project and operations are not visible", async () => {
  const mine = await list(other.token);
  assert.is(mine.body.operations.length, 1);
  assert.not.ok(mine.body.operations.some((o: any) => ops.includes(o.id)));
  const foreign = await list(other.token, `?project_id=${a.id}`);
  assert.is(foreign.status, 404, JSON.stringify(foreign.body));
  assert.is(foreign.body.error.code, 'not_found');
  const missing = await list(token, '?project_id=00000000-0000-4000-8000-000000000000');
  assert.is(missing.status, 404);
  assert.is((await h.get(other.token, `/api/v1/operations/${ops[0]}`)).status, 404);
  assert.is((await list('not-a-token')).status, 401);
});

test.run();
