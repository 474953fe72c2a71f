// legs: db
import { createHash, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import { RateLimiter } from '../../../core/auth/rate-limiter.js';
import { EntitlementService } from '../../../core/billing/entitlement-service.js';
import { Account } from '../../../core/entities/account.js';
import { KeptFile } from '../../../core/entities/kept-file.js';
import { ARCHIVE } from '../../../core/ports/archive.js';
import { STORAGE, type Storage } from '../../../core/ports/storage.js';
import { WORKSPACES } from '../../../core/ports/workspaces.js';
import { KeptFiles } from '../../../core/uploads/kept-files.js';
import { UploadManifests } from '../../../core/uploads/upload-manifests.js';
import { HoistError } from '../../../core/errors.js';
import { testKernel } from '../../helpers/kernel.js';

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

let kernel: Kernel;
let storage: Storage;
/** The clock every service under test reads; tests move it. */
const clock = { at: Date.now(), now: () => new Date(clock.at) };
/** Limits per account; 100 bytes and 7 days unless a test says otherwise. */
const limits = new Map<string, { kept_file_bytes: number; kept_file_days: number }>();
let kept: KeptFiles;

test.before(async () => {
  kernel = await testKernel();
  storage = kernel.get(STORAGE);
  kept = new KeptFiles(kernel.orm.em, storage, clock, {
    of: async (id) => limits.get(id) ?? { kept_file_bytes: 100, kept_file_days: 7 },
    least: { kept_file_bytes: 20, kept_file_days: 7 },
  });
});
test.after(async () => kernel?.stop());

const em = () => kernel.orm.em.fork();
const sha = (body: string) => createHash('sha256').update(body).digest('hex');
const file = (body: string) => ({
  sha256: sha(body),
  size: Buffer.byteLength(body),
  open: () => Readable.from([Buffer.from(body)]),
});
/** `n` bytes of a distinct file. */
const sized = (n: number, tag = randomUUID()) => file(tag.padEnd(n, '.').slice(0, n));

async function account(): Promise<string> {
  const a = Object.assign(new Account(), { name: 'a', createdAt: clock.now(), updatedAt: clock.now() });
  await em().persistAndFlush(a);
  return a.id;
}

/** The account's objects in Storage, by hash, and their bytes in all. */
async function objects(accountId: string): Promise<{ hashes: string[]; bytes: number }> {
  const hashes: string[] = [];
  let bytes = 0;
  for await (const o of storage.list(`files/${accountId}/`)) {
    hashes.push(o.key.split('/').pop()!);
    bytes += o.size;
  }
  return { hashes: hashes.sort(), bytes };
}

const rowBytes = async (accountId: string) =>
  (await em().find(KeptFile, { accountId })).reduce((sum, r) => sum + r.size, 0);

test('a kept file is found by the next manifest, and another account never finds it', async () => {
  const [a, b] = [await account(), await account()];
  const f = file('hello');
  await kept.keep(a, [f, f]);
  assert.equal([...(await kept.use(a, [f.sha256, sha('other')]))], [f.sha256]);
  assert.equal([...(await kept.use(b, [f.sha256]))], []);
  assert.equal((await objects(a)).hashes, [f.sha256]);
  assert.equal((await objects(b)).hashes, []);
});

test('a file expires kept_file_days after its last use; using it again keeps it', async () => {
  const a = await account();
  const [used, unused] = [sized(10), sized(10)];
  await kept.keep(a, [used, unused]);
  clock.at += 6 * DAY;
  await kept.use(a, [used.sha256]);
  clock.at += 2 * DAY;
  const swept = await kept.sweep();
  assert.ok(swept.expired >= 1, JSON.stringify(swept));
  assert.equal([...(await kept.use(a, [used.sha256, unused.sha256]))], [used.sha256]);
  assert.equal((await objects(a)).hashes, [used.sha256]);
});

test('past the cap the least recently used files no manifest needs make room, oldest first', async () => {
  const a = await account();
  const [oldest, older, recent] = [sized(40), sized(40), sized(20)];
  await kept.keep(a, [oldest]);
  clock.at += 2 * HOUR;
  await kept.keep(a, [older]);
  clock.at += 2 * HOUR;
  await kept.keep(a, [recent]);
  clock.at += 2 * HOUR;
  const next = sized(30);
  await kept.keep(a, [next]);
  const left = await kept.use(
    a,
    [oldest, older, recent, next].map((f) => f.sha256),
  );
  assert.equal([...left].sort(), [older, recent, next].map((f) => f.sha256).sort());
  assert.is(await rowBytes(a), 90);
  assert.is((await objects(a)).bytes, 90);
});

test('a file an unexpired manifest found is never dropped for the cap: the new file is not kept instead', async () => {
  const a = await account();
  const [x, y] = [sized(50), sized(50)];
  await kept.keep(a, [x, y]);
  clock.at += 3 * HOUR;
  // A manifest finds both; within its hour, an upload of new bytes finds no room.
  assert.is((await kept.use(a, [x.sha256, y.sha256])).size, 2);
  clock.at += 50 * 60 * 1000;
  const z = sized(10);
  await kept.keep(a, [z]);
  assert.equal([...(await kept.use(a, [z.sha256]))], []);
  assert.is((await kept.use(a, [x.sha256, y.sha256])).size, 2);
  assert.equal((await objects(a)).hashes, [x.sha256, y.sha256].sort());
  // A file larger than the cap is never kept, and takes nothing with it.
  await kept.keep(a, [sized(101)]);
  assert.is((await objects(a)).bytes, 100);
});

test('a hostile account racing uploads never keeps more than its cap', async () => {
  const a = await account();
  await Promise.all(Array.from({ length: 12 }, () => kept.keep(a, [sized(15), sized(15)])));
  assert.ok((await rowBytes(a)) <= 100, `rows hold ${await rowBytes(a)} bytes`);
  assert.ok((await objects(a)).bytes <= 100, `storage holds ${(await objects(a)).bytes} bytes`);
  assert.ok((await objects(a)).bytes >= 90, 'the cap is used');
});

test('a smaller cap (a plan changed) is enforced by the sweep, sparing files in use', async () => {
  const a = await account();
  const [old1, old2, fresh] = [sized(30), sized(30), sized(30)];
  await kept.keep(a, [old1, old2]);
  clock.at += 2 * HOUR;
  await kept.keep(a, [fresh]);
  limits.set(a, { kept_file_bytes: 20, kept_file_days: 7 });
  const swept = await kept.sweep();
  assert.ok(swept.evicted >= 2, JSON.stringify(swept));
  // The fresh file may still be in a manifest's hands: it stays, over the cap, until its hour is over.
  assert.equal((await objects(a)).hashes, [fresh.sha256]);
  clock.at += 2 * HOUR;
  await kept.sweep();
  assert.equal((await objects(a)).hashes, []);
  assert.is(await rowBytes(a), 0);
});

test('objects no row claims are removed once old; claimed ones stay', async () => {
  clock.at = Date.now(); // Storage dates objects by its own clock
  const a = await account();
  const claimed = sized(10);
  await kept.keep(a, [claimed]);
  await storage.putContentAddressed(`files/${a}`, Readable.from([Buffer.from('left by a crash')]));
  assert.is((await kept.sweep()).orphans, 0, 'a fresh object may be an upload in progress');
  clock.at += 2 * HOUR;
  assert.ok((await kept.sweep()).orphans >= 1);
  assert.equal((await objects(a)).hashes, [claimed.sha256]);
});

test('a file removed while an upload brought it again is asked for again, never believed kept', async () => {
  const a = await account();
  const f = sized(10);
  await kept.keep(a, [f]);
  clock.at += 8 * DAY;
  // The sweep removes the row and object; the same bytes come back meanwhile (the row is written first).
  const sweeping = kept.sweep();
  const again = kept.keep(a, [f]);
  await Promise.all([sweeping, again]);
  const found = await kept.use(a, [f.sha256]);
  const there = (await objects(a)).hashes.includes(f.sha256);
  assert.ok(!found.has(f.sha256) || there, 'a file reported kept is in Storage');
});

test('expired manifests are removed from Storage and then answer 410 gone, unknown ones 404', async () => {
  clock.at = Date.now(); // Storage dates objects by its own clock
  const a = await account();
  const manifests = new UploadManifests(
    storage,
    kept,
    kernel.get(ARCHIVE),
    kernel.get(WORKSPACES),
    clock,
    kernel.config.maxArchiveBytes,
    { limiter: new RateLimiter(em(), clock), entitlements: new EntitlementService(em()) },
  );
  const m = await manifests.create(a, [{ path: 'index.html', sha256: sha('x'), size: 1 }]);
  assert.is(await manifests.removeExpired(), 0);
  clock.at += 2 * HOUR;
  assert.ok((await manifests.removeExpired()) >= 1);
  let keys = 0;
  for await (const o of storage.list(`upload-manifests/${a}/`)) keys += o ? 1 : 0;
  assert.is(keys, 0);
  const codeOf = (p: Promise<unknown>) =>
    p.then(
      () => 'ok',
      (err: HoistError) => err.code,
    );
  assert.is(await codeOf(manifests.assemble(a, m.id, null)), 'gone');
  assert.is(await codeOf(manifests.assemble(a, randomUUID(), null)), 'not_found');
});

test.run();
