// legs: db
// SiteAccessService.on: the edge's gate reads and writes through an entity manager of its own, in no request or
// transaction context, so the edge's process never turns AsyncLocalStorage on (its hooks, once on, cost every
// request the process answers after).
import { randomUUID } from 'node:crypto';
import { AsyncLocalStorage } from 'node:async_hooks';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import {
  PASSWORD_CHECKS_AT_ONCE,
  SITE_ACCESS_SERVICE,
  SiteAccessService,
} from '../../../core/access/site-access-service.js';
import { RateLimiter } from '../../../core/auth/rate-limiter.js';
import { AccessCode } from '../../../core/entities/access-code.js';
import { AccessGrant } from '../../../core/entities/access-grant.js';
import { Project } from '../../../core/entities/project.js';
import { HoistError } from '../../../core/errors.js';
import { CIPHER, type Cipher } from '../../../core/ports/cipher.js';
import { CLOCK, type Clock } from '../../../core/ports/clock.js';
import { MAILER, type Mailer } from '../../../core/ports/mailer.js';
import { PASSWORD_HASHER, type PasswordHasher } from '../../../core/ports/password-hasher.js';
import { TOKEN_SERVICE, type TokenService } from '../../../core/ports/token-service.js';
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
    const access = service.on(k.orm.em.fork(), k.get<Cipher>(CIPHER));
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

/** A private project of its own, with `password` when given; answers its id. */
async function privateProject(password?: string): Promise<string> {
  const now = new Date();
  const project = Object.assign(new Project(), {
    accountId: randomUUID(),
    name: 'gated',
    slug: `gated-${randomUUID().slice(0, 8)}`,
    visibility: 'private',
    accessPasswordHash: password ? await k.get<PasswordHasher>(PASSWORD_HASHER).hash(password) : null,
    createdAt: now,
    updatedAt: now,
  });
  await k.orm.em.fork().insert(Project, project);
  return project.id;
}

const grant = (projectId: string, email: string) =>
  k.orm.em.fork().insert(AccessGrant, Object.assign(new AccessGrant(), { projectId, email, createdAt: new Date() }));

/** A client address no other test uses. */
let clients = 0;
const client = () => `198.51.100.${++clients}`;

/** The error `work` fails with (the test fails when it does not). */
async function failure(work: Promise<unknown>): Promise<HoistError> {
  const err = await work.then(
    () => null,
    (e: unknown) => e,
  );
  assert.instance(err, HoistError, 'it fails');
  return err as HoistError;
}

/**
 * The service on its own kernel's parts, with `config` changed and `hasher` in place of argon2 (counting its calls),
 * and a key that counts its uses.
 */
function serviceWith(
  config: Partial<Kernel['config']>,
  hasher: PasswordHasher = k.get<PasswordHasher>(PASSWORD_HASHER),
) {
  const uses = { hash: 0, verify: 0, digest: 0 };
  const cipher = k.get<Cipher>(CIPHER);
  const counted: PasswordHasher = {
    hash: (p) => (uses.hash++, hasher.hash(p)),
    verify: (h, p) => (uses.verify++, hasher.verify(h, p)),
  };
  const key = { fingerprint: (d: string) => (uses.digest++, cipher.fingerprint(d)) };
  const em = k.orm.em.fork();
  const clock = k.get<Clock>(CLOCK);
  const access = new SiteAccessService(
    em,
    counted,
    k.get<TokenService>(TOKEN_SERVICE),
    k.get<Mailer>(MAILER),
    new RateLimiter(em, clock),
    clock,
    { ...k.config, ...config },
    key,
  );
  return { access, uses };
}

const link = (to: string, code: string) => `http://gated.test/link?${to}&${code}`;
const mailsTo = (email: string) => k.orm.em.fork().count(OutboxMail, { to: email });

test('code mails to one address are limited across all projects, not per grant', async () => {
  const victim = `victim-${randomUUID().slice(0, 8)}@example.test`;
  const projects = [await privateProject(), await privateProject(), await privateProject()];
  for (const id of projects) await grant(id, victim);
  const { access } = serviceWith({});
  for (const id of projects)
    for (let i = 0; i < 3; i++) await (await access.requestCode(id, victim, client(), link)).delivery();
  assert.is(await mailsTo(victim), k.config.mailMaxPerRecipient, 'mailMaxPerRecipient codes in all');
  // Another address still gets its code.
  const friend = `friend-${randomUUID().slice(0, 8)}@example.test`;
  await grant(projects[0], friend);
  await (await access.requestCode(projects[0], friend, client(), link)).delivery();
  assert.is(await mailsTo(friend), 1);
});

test('code requests from one client address are limited across all projects', async () => {
  const { access } = serviceWith({ mailMaxPerAddress: 4, accessMaxAttempts: 3 });
  const projects = [await privateProject(), await privateProject(), await privateProject()];
  const from = client();
  const asked = (id: string, by = from) => access.requestCode(id, 'someone@example.test', by, link);
  for (let i = 0; i < 2; i++) await asked(projects[0]);
  for (let i = 0; i < 2; i++) await asked(projects[1]);
  const limited = await failure(asked(projects[2]));
  assert.is(limited.code, 'rate_limited', 'the fifth request, on a project it never asked before');
  assert.ok(Number(limited.details.retry_after) >= 1);
  await asked(projects[2], client());
});

test('password tries from one client address are limited across all projects', async () => {
  const { access, uses } = serviceWith({ loginMaxPerAddress: 4, accessMaxAttempts: 3 });
  const projects = [await privateProject('the password'), await privateProject('the password')];
  const from = client();
  const tried = (id: string, by = from) => access.verifyPassword(id, 'a guess', by);
  for (let i = 0; i < 2; i++) assert.is((await failure(tried(projects[0]))).code, 'unauthorized');
  for (let i = 0; i < 2; i++) assert.is((await failure(tried(projects[1]))).code, 'unauthorized');
  assert.is((await failure(tried(projects[1]))).code, 'rate_limited', 'the fifth try, under the per-project limit');
  assert.is(uses.verify, 4, 'no hash checked past the limit');
  // Codes count there too: the same allowance.
  assert.is((await failure(access.verifyCode(projects[0], 'a@example.test', '123456', from))).code, 'rate_limited');
  assert.is((await failure(tried(projects[1], client()))).code, 'unauthorized', 'another address is not limited');
});

test('password tries on one project are limited across client addresses', async () => {
  const { access, uses } = serviceWith({ accessPasswordMaxPerProject: 3 });
  const project = await privateProject('the password');
  for (let i = 0; i < 3; i++)
    assert.is((await failure(access.verifyPassword(project, 'a guess', client()))).code, 'unauthorized');
  const limited = await failure(access.verifyPassword(project, 'the password', client()));
  assert.is(limited.code, 'rate_limited', 'a fourth address, even with the right password');
  assert.ok(Number(limited.details.retry_after) >= 1);
  assert.is(uses.verify, 3);
  assert.ok((await access.verifyPassword(await privateProject('other'), 'other', client())).token, 'per project');
});

test('password checks run at most PASSWORD_CHECKS_AT_ONCE at once; past it unavailable, no wait', async () => {
  let open!: () => void;
  const opened = new Promise<void>((r) => (open = r));
  let waiting = 0;
  const slow: PasswordHasher = {
    hash: async () => 'unused',
    verify: async () => {
      waiting++;
      await opened;
      return false;
    },
  };
  const { access } = serviceWith({}, slow);
  const project = await privateProject('the password');
  const running = Array.from({ length: PASSWORD_CHECKS_AT_ONCE }, () =>
    failure(access.verifyPassword(project, 'a guess', client())),
  );
  while (waiting < PASSWORD_CHECKS_AT_ONCE) await new Promise((r) => setTimeout(r, 5));
  // Another request's service (on) shares this process's slots.
  const busy = await failure(
    Promise.race([
      access.on(k.orm.em.fork()).verifyPassword(project, 'a guess', client()),
      new Promise((_, reject) => setTimeout(() => reject(new Error('it waited for a slot')), 2000).unref()),
    ]),
  );
  assert.is(busy.code, 'unavailable');
  assert.is(busy.details.retry_after, 1);
  assert.is(waiting, PASSWORD_CHECKS_AT_ONCE, 'it did not wait for a slot');
  open();
  for (const err of await Promise.all(running)) assert.is(err.code, 'unauthorized');
  assert.is(
    (await failure(access.verifyPassword(project, 'a guess', client()))).code,
    'unauthorized',
    'slots given back',
  );
});

test('a code check costs the same, one HMAC and no argon2, whether or not the address holds a grant', async () => {
  const { access, uses } = serviceWith({});
  const project = await privateProject();
  const granted = `granted-${randomUUID().slice(0, 8)}@example.test`;
  await grant(project, granted);
  await (await access.requestCode(project, granted, client(), link)).delivery();
  const row = await k.orm.em.fork().findOneOrFail(AccessCode, { projectId: project });
  assert.match(row.codeHash, /^hmac-sha256:[0-9a-f]{64}$/, 'stored as a keyed HMAC');
  assert.is(uses.hash, 0, 'no argon2 to issue a code');
  const code = /Code: (\d+)/.exec(
    (await k.orm.em.fork().findOneOrFail(OutboxMail, { to: granted }, { orderBy: { createdAt: 'desc' } })).text,
  )![1]!;
  const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, '0');
  const work = async (email: string) => {
    const before = { ...uses };
    assert.is((await failure(access.verifyCode(project, email, wrong, client()))).code, 'unauthorized');
    return { verify: uses.verify - before.verify, digest: uses.digest - before.digest };
  };
  const forGranted = await work(granted);
  const forNobody = await work('nobody@example.test');
  assert.equal(forGranted, { verify: 0, digest: 1 });
  assert.equal(forNobody, forGranted, 'the same work for an address without a grant');
  assert.ok((await access.verifyCode(project, granted, code, client())).token, 'the right code still opens');
});

test('a code stored before the change (an argon2id hash) no longer opens', async () => {
  const { access } = serviceWith({});
  const project = await privateProject();
  const email = `old-${randomUUID().slice(0, 8)}@example.test`;
  await grant(project, email);
  const g = await k.orm.em.fork().findOneOrFail(AccessGrant, { projectId: project, email });
  const now = new Date();
  await k.orm.em.fork().insert(
    AccessCode,
    Object.assign(new AccessCode(), {
      projectId: project,
      grantId: g.id,
      codeHash: await k.get<PasswordHasher>(PASSWORD_HASHER).hash('123456'),
      expiresAt: new Date(now.getTime() + 60_000),
      createdAt: now,
    }),
  );
  assert.is((await failure(access.verifyCode(project, email, '123456', client()))).code, 'unauthorized');
});

test.run();
