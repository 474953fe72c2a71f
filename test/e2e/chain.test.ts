// legs: db
import type { AbstractSqlConnection } from '@mikro-orm/knex';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gatedProject } from '../helpers/gated-build.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { footprint } from '../helpers/raw-http.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
});
test.after(async () => h?.close());

const kernel = () => h.running.kernel;

/** Uploads `zip` at account level (by `name`) or project level (`projectId`); status and body. */
async function upload(zip: Buffer, target: { name: string } | { projectId: string }) {
  const res =
    'name' in target
      ? await h.upload(token, '/api/v1/local-to-live', zip, { name: target.name })
      : await h.upload(token, `/api/v1/projects/${target.projectId}/local-to-live`, zip);
  return { status: res.status, body: await res.json() };
}

test(
  'one chain per project: a second upload while the first runs → 409 ' + 'deployment_in_progress; nothing stored',
  async () => {
    const p = await gatedProject(h, token, 'one-chain');
    const first = await upload(await p.zip('first'), { name: p.name });
    assert.is(first.status, 202, JSON.stringify(first.body));
    assert.is(first.body.project.id, p.id, 'the account-level upload selects the project by name');
    const running = first.body.operation.id;
    await h.waitFor(token, running, (op) => op.stages.build.status === 'running');

    const before = await footprint(kernel());
    for (const target of [{ name: p.name }, { projectId: p.id }]) {
      const second = await upload(await p.zip('second'), target);
      assert.is(second.status, 409, JSON.stringify(second.body));
      assert.is(second.body.error.code, 'deployment_in_progress');
      assert.is(second.body.error.details.operation_id, running);
    }
    assert.equal(await footprint(kernel()), before);
    assert.is((await h.get(token, `/api/v1/operations/${running}`)).body.status, 'running');

    p.open();
    const done = await h.waitFor(token, running);
    assert.is(done.status, 'succeeded', JSON.stringify(done));
    assert.is((await h.site(hostOf(first.body.project.url))).body, 'first');

    const next = await upload(await p.zip('next'), { projectId: p.id });
    assert.is(next.status, 202, JSON.stringify(next.body));
    assert.is((await h.waitFor(token, next.body.operation.id)).status, 'succeeded');
    assert.is((await h.site(hostOf(first.body.project.url))).body, 'next');
  },
);

test('concurrent uploads to one project: one chain starts, the others get 409; only its upload is kept', async () => {
  const p = await gatedProject(h, token, 'racing');
  const before = await footprint(kernel());
  const zips = await Promise.all([1, 2, 3, 4].map((i) => p.zip(`racer ${i}`)));
  const results = await Promise.all(zips.map((zip, i) => upload(zip, i % 2 ? { name: p.name } : { projectId: p.id })));
  const started = results.filter((r) => r.status === 202);
  assert.is(started.length, 1, JSON.stringify(results));
  const running = started[0].body.operation.id;
  for (const r of results) {
    if (r === started[0]) continue;
    assert.is(r.status, 409, JSON.stringify(r.body));
    assert.is(r.body.error.code, 'deployment_in_progress');
    assert.is(r.body.error.details.operation_id, running);
  }
  const after = await footprint(kernel());
  assert.equal(after, {
    ...before,
    uploads: before.uploads + 1,
    versions: before.versions + 1,
    operations: before.operations + 1,
  });
  p.open();
  assert.is((await h.waitFor(token, running)).status, 'succeeded');
});

test('a new project and its chains rewrite no row they did not change (no update of a creation date)', async () => {
  const knex = (kernel().orm.em.getConnection() as AbstractSqlConnection).getKnex();
  const updates: string[] = [];
  const seen = (q: { sql: string }) => void (/^\s*update/i.test(q.sql) && updates.push(q.sql));
  knex.on('query', seen);
  try {
    const first = await upload(await zipOf({ 'index.html': 'first' }), { name: 'no-rewrites' });
    assert.is(first.status, 202, JSON.stringify(first.body));
    assert.is((await h.waitFor(token, first.body.operation.id)).status, 'succeeded');
    // The second goes live over the first: the path that reads the live release.
    const second = await upload(await zipOf({ 'index.html': 'second' }), { projectId: first.body.project.id });
    assert.is((await h.waitFor(token, second.body.operation.id)).status, 'succeeded');
    assert.is((await h.site(hostOf(first.body.project.url))).body, 'second');
  } finally {
    knex.off('query', seen);
  }
  assert.ok(updates.length > 0, 'the chain wrote its operations');
  assert.equal(
    updates.filter((sql) => /created_at/.test(sql)),
    [],
  );
});

test.run();
