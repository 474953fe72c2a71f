// legs: db
import { randomUUID } from 'node:crypto';
import { UniqueConstraintViolationException, wrap } from '@mikro-orm/core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import { Project } from '../../../core/entities/project.js';
import { Deployment } from '../../../core/entities/deployment.js';
import { deleteRows, insertRow, loadById, loadOne, queryRows, updateRows } from '../../../core/entities/plain-sql.js';
import { testKernel } from '../../helpers/kernel.js';

let kernel: Kernel;
test.before(async () => {
  kernel = await testKernel();
});
test.after(async () => kernel?.stop());

/** A stored project with settings (a JSON column) and dates; its id and account. */
async function stored(status = 'active') {
  const project = Object.assign(new Project(), {
    accountId: randomUUID(),
    name: `p-${randomUUID().slice(0, 8)}`,
    slug: `s-${randomUUID().slice(0, 8)}`,
    status,
    settings: { build_command: 'npm run build', output_directory: 'dist' },
    createdAt: new Date(Date.now() - 60_000),
    updatedAt: new Date(),
  });
  await kernel.orm.em.fork().insert(Project, project);
  return project;
}
const plain = <T extends object>(p: T | null) => (p ? (wrap(p).toObject() as Record<string, unknown>) : null);

test('the entity findOne gives: every column mapped the same (dates, JSON), or null when no row matches', async () => {
  const p = await stored();
  const found = await kernel.orm.em.fork().findOne(Project, { id: p.id, accountId: p.accountId, status: 'active' });
  const loaded = await loadOne(kernel.orm.em.fork(), Project, { id: p.id, account_id: p.accountId, status: 'active' });
  assert.ok(found && loaded);
  assert.equal(plain(loaded), plain(found));
  assert.instance(loaded!.createdAt, Date);
  assert.equal(loaded!.settings, { build_command: 'npm run build', output_directory: 'dist' });
  assert.equal(plain(await loadById(kernel.orm.em.fork(), Project, p.id)), plain(found));
  assert.is(await loadOne(kernel.orm.em.fork(), Project, { id: p.id, account_id: randomUUID() }), null);
  const gone = await stored('deleting');
  assert.is(await loadOne(kernel.orm.em.fork(), Project, { id: gone.id, status: 'active' }), null);
  assert.is(await loadById(kernel.orm.em.fork(), Project, randomUUID()), null);
});

test('an entity the entity manager holds is given as it is, unflushed changes kept, as findOne gives it', async () => {
  const p = await stored();
  const em = kernel.orm.em.fork();
  const held = (await em.findOne(Project, { id: p.id }))!;
  held.name = 'changed, not flushed';
  const again = await loadOne(em, Project, { id: p.id, status: 'active' });
  assert.is(again, held);
  assert.is(again!.name, 'changed, not flushed');
  await em.flush();
  assert.is((await loadById(kernel.orm.em.fork(), Project, p.id))!.name, 'changed, not flushed');
});

test('updateRows writes what nativeUpdate writes (JSON, dates, null), and counts the rows it changed', async () => {
  const [a, b] = [await stored(), await stored()];
  const at = new Date(Date.now() - 5_000);
  const set = {
    name: "O'Brien's site? yes",
    settings: { build_command: 'vite build', output_directory: 'out' },
    updatedAt: at,
    liveDeploymentId: null,
    activeOperationId: randomUUID(),
  };
  assert.is(await updateRows(kernel.orm.em.fork(), Project, { id: a.id }, set), 1);
  assert.is(await kernel.orm.em.fork().nativeUpdate(Project, { id: b.id }, set), 1);
  const [x, y] = [
    await loadById(kernel.orm.em.fork(), Project, a.id),
    await loadById(kernel.orm.em.fork(), Project, b.id),
  ];
  const { id: _x, slug: _sx, name: _nx, accountId: _ax, createdAt: _cx, ...fromPlain } = plain(x)!;
  const { id: _y, slug: _sy, name: _ny, accountId: _ay, createdAt: _cy, ...fromOrm } = plain(y)!;
  assert.equal(fromPlain, fromOrm);
  assert.is(x!.name, set.name, 'a value with quotes and a question mark is bound as it is');
  assert.is(x!.updatedAt.getTime(), at.getTime());
  assert.equal(x!.settings, set.settings);
  // A where on a value and on null: a compare-and-set that misses changes nothing.
  assert.is(
    await updateRows(kernel.orm.em.fork(), Project, { id: a.id, liveDeploymentId: null }, { visibility: 'public' }),
    1,
  );
  assert.is(
    await updateRows(kernel.orm.em.fork(), Project, { id: a.id, activeOperationId: null }, { visibility: 'private' }),
    0,
  );
  assert.is((await loadById(kernel.orm.em.fork(), Project, a.id))!.visibility, 'public');
});

test('plain statements run in the transaction of the entity manager, and roll back with it', async () => {
  const p = await stored();
  const err = await kernel.orm.em
    .fork()
    .transactional(async (tx) => {
      assert.is(await updateRows(tx, Project, { id: p.id }, { name: 'inside' }), 1);
      const [row] = await queryRows<{ name: string }>(tx, 'select name from projects where id = ?', [p.id]);
      assert.is(row!.name, 'inside', 'seen inside');
      throw new Error('undo');
    })
    .catch((e: Error) => e);
  assert.is(err.message, 'undo');
  assert.is((await loadById(kernel.orm.em.fork(), Project, p.id))!.name, p.name);
});

test('a statement the database refuses fails as the ORM reports it; an unknown property is refused', async () => {
  const p = await stored();
  const err = await updateRows(kernel.orm.em.fork(), Project, { id: p.id }, { name: null }).catch((e: Error) => e);
  assert.is((err as Error).name, 'NotNullConstraintViolationException');
  const unknown = await updateRows(kernel.orm.em.fork(), Project, { id: p.id }, { nope: 1 } as never).catch(
    (e: Error) => e,
  );
  assert.match((unknown as Error).message, 'Project has no column property nope');
  assert.is((await loadById(kernel.orm.em.fork(), Project, p.id))!.name, p.name);
});

test('an undefined value in a where is refused (it would match nothing), and nothing is changed', async () => {
  const p = await stored();
  const where = { id: p.id, liveDeploymentId: undefined };
  const update = await updateRows(kernel.orm.em.fork(), Project, where, { name: 'changed' }).catch((e: Error) => e);
  assert.match((update as Error).message, 'Project has liveDeploymentId undefined');
  const removal = await deleteRows(kernel.orm.em.fork(), Project, where).catch((e: Error) => e);
  assert.match((removal as Error).message, 'Project has liveDeploymentId undefined');
  assert.is((await loadById(kernel.orm.em.fork(), Project, p.id))!.name, p.name);
});

/** A deployment (booleans, JSON, dates, nulls) of a new project, not stored. */
const deployment = (fields: Partial<Deployment> = {}) =>
  Object.assign(new Deployment(), {
    accountId: randomUUID(),
    projectId: randomUUID(),
    versionId: randomUUID(),
    buildId: randomUUID(),
    operationId: randomUUID(),
    preview: true,
    target: { kind: 'static', root: '/srv/releases/x' },
    expiresAt: new Date(Date.now() + 60_000),
    createdAt: new Date(Date.now() - 1_000),
    ...fields,
  });

test('insertRow stores what em.insert stores; a row that breaks a unique key fails as em.insert fails', async () => {
  const a = deployment();
  // The same times: two calls a millisecond apart made rows that differ.
  const b = deployment({ expiresAt: a.expiresAt, createdAt: a.createdAt });
  await insertRow(kernel.orm.em.fork(), Deployment, a);
  await kernel.orm.em.fork().insert(Deployment, b);
  const [x, y] = [
    await loadById(kernel.orm.em.fork(), Deployment, a.id),
    await loadById(kernel.orm.em.fork(), Deployment, b.id),
  ];
  const mine = ['id', 'accountId', 'projectId', 'versionId', 'buildId', 'operationId'];
  const rest = (d: Deployment | null) =>
    Object.fromEntries(Object.entries(plain(d)!).filter(([k]) => !mine.includes(k)));
  assert.equal(rest(x), rest(y));
  assert.is(x!.preview, true);
  assert.equal(x!.target, a.target);
  assert.is(x!.expiresAt!.getTime(), a.expiresAt!.getTime());
  assert.is(x!.liveAt, null);
  const again = await insertRow(kernel.orm.em.fork(), Deployment, deployment({ id: a.id })).catch((e: Error) => e);
  assert.instance(again, UniqueConstraintViolationException);
  assert.is((await loadById(kernel.orm.em.fork(), Deployment, a.id))!.projectId, a.projectId, 'the first row kept');
});

test('deleteRows deletes the rows that match, a boolean and a null among the conditions, and counts them', async () => {
  const kept = deployment({ preview: false });
  const gone = deployment({ projectId: kept.projectId });
  for (const d of [kept, gone]) await insertRow(kernel.orm.em.fork(), Deployment, d);
  const where = { projectId: kept.projectId, preview: true, liveAt: null };
  assert.is(await deleteRows(kernel.orm.em.fork(), Deployment, where), 1);
  assert.is(await deleteRows(kernel.orm.em.fork(), Deployment, where), 0);
  assert.ok(await loadById(kernel.orm.em.fork(), Deployment, kept.id));
  assert.is(await loadById(kernel.orm.em.fork(), Deployment, gone.id), null);
});

test.run();
