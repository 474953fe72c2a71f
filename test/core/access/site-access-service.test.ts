// legs: db
// SiteAccessService.on: the edge's gate reads and writes through an entity manager of its own, in no request or
// transaction context, so the edge's process never turns AsyncLocalStorage on (its hooks, once on, cost every
// request the process answers after).
import { randomUUID } from 'node:crypto';
import { AsyncLocalStorage } from 'node:async_hooks';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import { SITE_ACCESS_SERVICE, type SiteAccessService } from '../../../core/access/site-access-service.js';
import { AccessCode } from '../../../core/entities/access-code.js';
import { AccessGrant } from '../../../core/entities/access-grant.js';
import { Project } from '../../../core/entities/project.js';
import { HoistError } from '../../../core/errors.js';
import { PASSWORD_HASHER, type PasswordHasher } from '../../../core/ports/password-hasher.js';
import { OutboxMail } from '../../../plugins/mailer-outbox/outbox-mail.js';
import { testKernel } from '../../helpers/kernel.js';

let k: Kernel;
test.before(async () => {
  k = await testKernel();
});
test.after(async () => k?.stop());

/** Counts the AsyncLocalStorage contexts entered while `fn` runs. */
async function contextsEntered(fn: () => Promise<void>): Promise<number> {
  const proto = AsyncLocalStorage.prototype;
  const { run, enterWith } = proto;
  let entered = 0;
  proto.run = function (this: AsyncLocalStorage<unknown>, ...args: Parameters<typeof run>) {
    entered++;
    return run.apply(this, args);
  } as typeof run;
  proto.enterWith = function (this: AsyncLocalStorage<unknown>, store: unknown) {
    entered++;
    return enterWith.call(this, store);
  };
  try {
    await fn();
  } finally {
    Object.assign(proto, { run, enterWith });
  }
  return entered;
}

test('on(fork): the gate signs in by password and by code with no AsyncLocalStorage context', async () => {
  const em = k.orm.em.fork();
  const now = new Date();
  const project = Object.assign(new Project(), {
    accountId: randomUUID(),
    name: 'gated',
    slug: `gated-${randomUUID().slice(0, 8)}`,
    visibility: 'private',
    accessPasswordHash: await k.get<PasswordHasher>(PASSWORD_HASHER).hash('the site password'),
    createdAt: now,
    updatedAt: now,
  });
  await em.insert(Project, project);
  const email = 'guest@example.test';
  await em.insert(AccessGrant, Object.assign(new AccessGrant(), { projectId: project.id, email, createdAt: now }));
  const service = k.get<SiteAccessService>(SITE_ACCESS_SERVICE);
  const codesOf = () => k.orm.em.fork().count(AccessCode, { projectId: project.id });

  const entered = await contextsEntered(async () => {
    const access = service.on(k.orm.em.fork());
    assert.equal(await access.project(project.id), {
      id: project.id,
      name: 'gated',
      visibility: 'private',
      hasPassword: true,
    });
    const wrong = await access.verifyPassword(project.id, 'not it', '192.0.2.1').catch((e: unknown) => e);
    assert.instance(wrong, HoistError);
    assert.is((wrong as HoistError).code, 'unauthorized');
    assert.ok((await access.verifyPassword(project.id, 'the site password', '192.0.2.1')).token);

    // A second code replaces the first: its delete and insert are one transaction.
    const link = (to: string, code: string) => `http://gated.test/link?${to}&${code}`;
    for (let i = 0; i < 2; i++) await (await access.requestCode(project.id, email, '192.0.2.1', link)).delivery();
    assert.is(await codesOf(), 1);
    const mail = await k.orm.em.fork().findOneOrFail(OutboxMail, { to: email }, { orderBy: { createdAt: 'desc' } });
    const code = /Code: (\d+)/.exec(mail.text)![1]!;
    assert.ok((await access.verifyCode(project.id, email, code, '192.0.2.1')).token);
    assert.is(await codesOf(), 0, 'a code opens once');
  });
  assert.is(entered, 0, 'no AsyncLocalStorage context was entered');
});

test.run();
