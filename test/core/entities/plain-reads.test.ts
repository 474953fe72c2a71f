// legs: db
import { randomUUID } from 'node:crypto';
import { wrap } from '@mikro-orm/core';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import { Project } from '../../../core/entities/project.js';
import { loadById, loadOne } from '../../../core/entities/plain-reads.js';
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
const plain = (p: Project | null) => (p ? wrap(p).toObject() : null);

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

test.run();
