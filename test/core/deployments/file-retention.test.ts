// legs: db
import { randomUUID } from 'node:crypto';
import { mkdtemp } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import { FileRetention } from '../../../core/deployments/file-retention.js';
import { fetchVersion } from '../../../core/deployments/stages/analyze.js';
import { Project } from '../../../core/entities/project.js';
import { StageError } from '../../../core/errors.js';
import { ARCHIVE } from '../../../core/ports/archive.js';
import { Build } from '../../../core/entities/build.js';
import { Deployment } from '../../../core/entities/deployment.js';
import { Operation } from '../../../core/entities/operation.js';
import { Version } from '../../../core/entities/version.js';
import { STORAGE, type Storage } from '../../../core/ports/storage.js';
import { deploymentRows } from '../../helpers/deployment-rows.js';
import { testKernel } from '../../helpers/kernel.js';

const DAY = 24 * 3600 * 1000;

let kernel: Kernel;
let storage: Storage;
const clock = { at: Date.now(), now: () => new Date(clock.at) };
let retention: FileRetention;

test.before(async () => {
  kernel = await testKernel();
  storage = kernel.get(STORAGE);
  retention = new FileRetention(kernel.orm.em, storage, clock, 7, 30);
});
test.after(async () => kernel?.stop());

const em = () => kernel.orm.em.fork();

/** A finished deployment of its own project whose build's artifact is at `artifactKey`, in `status`. */
async function deployed(artifactKey: string, status: string) {
  const { op, version } = await deploymentRows(kernel);
  await em().nativeUpdate(Operation, { id: op.id }, { status: 'succeeded', finishedAt: new Date() });
  const build = Object.assign(new Build(), {
    accountId: op.accountId,
    projectId: op.projectId!,
    versionId: version.id,
    operationId: op.id,
    status: 'succeeded',
    artifactKey,
    createdAt: new Date(),
  });
  const deployment = Object.assign(new Deployment(), {
    accountId: op.accountId,
    projectId: op.projectId!,
    versionId: version.id,
    buildId: build.id,
    operationId: op.id,
    status,
    createdAt: new Date(),
  });
  await em().persist([build, deployment]).flush();
  return { build, deployment };
}

const stored = async (key: string) => (await storage.stat(key)) !== null;

test('an artifact two builds share stays in Storage until neither uses it', async () => {
  const key = `artifacts/sha256/${randomUUID().replaceAll('-', '')}.zip`;
  await storage.put(key, Readable.from([Buffer.from('shared bytes')]));
  const old = await deployed(key, 'failed');
  const live = await deployed(key, 'live');

  clock.at = Date.now() + 8 * DAY;
  await retention.sweep();
  const rows = await em().find(Build, { id: { $in: [old.build.id, live.build.id] } });
  const removed = (id: string) => rows.find((b) => b.id === id)!.artifactRemovedAt;
  assert.ok(removed(old.build.id), 'the unused build lets it go');
  assert.is(removed(live.build.id), null, 'the live one keeps it');
  assert.ok(await stored(key), 'still stored: the live build uses it');

  await em().nativeUpdate(Deployment, { id: live.deployment.id }, { status: 'superseded', prunedAt: new Date() });
  await retention.sweep();
  assert.ok((await em().findOneOrFail(Build, { id: live.build.id })).artifactRemovedAt);
  assert.not.ok(await stored(key), 'removed once the last build let it go');
});

test("trimAccount removes the account's oldest unretained archives and artifacts until within the bytes", async () => {
  clock.at = Date.now();
  const { op: first, version: v0 } = await deploymentRows(kernel);
  const { accountId, projectId } = { accountId: first.accountId, projectId: first.projectId! };
  await em().nativeUpdate(Operation, { id: first.id }, { status: 'succeeded', finishedAt: new Date() });
  await em().nativeDelete(Version, { id: v0.id });
  const rows: { version: Version; build: Build }[] = [];
  for (let i = 0; i < 4; i++) {
    const createdAt = new Date(clock.at - (4 - i) * 60_000);
    const op = Object.assign(new Operation(), {
      accountId,
      projectId,
      kind: 'deploy',
      status: 'succeeded',
      createdAt,
      updatedAt: createdAt,
      finishedAt: createdAt,
    });
    const archiveKey = `uploads/${randomUUID()}.zip`;
    const artifactKey = `artifacts/${accountId}/sha256/${randomUUID().replaceAll('-', '')}.zip`;
    await storage.put(archiveKey, Readable.from([Buffer.alloc(100)]));
    await storage.put(artifactKey, Readable.from([Buffer.alloc(100)]));
    const version = Object.assign(new Version(), {
      accountId,
      projectId,
      operationId: op.id,
      archiveKey,
      archiveSize: 100,
      archiveSha256: 'x',
      createdAt,
    });
    const build = Object.assign(new Build(), {
      accountId,
      projectId,
      versionId: version.id,
      operationId: op.id,
      status: 'succeeded',
      artifactKey,
      artifactSize: 100,
      createdAt,
    });
    await em().persist([op, version, build]).flush();
    rows.push({ version, build });
  }
  // The newest is live: retained whatever the limit.
  const live = Object.assign(new Deployment(), {
    accountId,
    projectId,
    versionId: rows[3].version.id,
    buildId: rows[3].build.id,
    operationId: rows[3].version.operationId,
    status: 'live',
    createdAt: new Date(),
  });
  await em().persist(live).flush();
  await em().nativeUpdate(Project, { id: projectId }, { liveDeploymentId: live.id });
  // Another account's files are never counted or touched.
  const other = await deployed(`artifacts/${randomUUID()}/sha256/${'c'.repeat(64)}.zip`, 'failed');

  assert.equal(await retention.trimAccount(accountId, 1000), { archives: 0, artifacts: 0, logs: 0 }, 'within');
  // 800 bytes kept, 350 allowed: the oldest go, archive before artifact, until 300 are left.
  assert.equal(await retention.trimAccount(accountId, 350), { archives: 3, artifacts: 2, logs: 0 });
  const gone = async (r: { version: Version; build: Build }) => [
    Boolean((await em().findOneOrFail(Version, { id: r.version.id })).archiveRemovedAt) &&
      !(await stored(r.version.archiveKey)),
    Boolean((await em().findOneOrFail(Build, { id: r.build.id })).artifactRemovedAt) &&
      !(await stored(r.build.artifactKey!)),
  ];
  assert.equal(await Promise.all(rows.map(gone)), [
    [true, true],
    [true, true],
    [true, false],
    [false, false],
  ]);
  // Only the live release's files are left: it stays even past a limit of nothing.
  assert.equal(await retention.trimAccount(accountId, 0), { archives: 0, artifacts: 1, logs: 0 });
  assert.equal(await gone(rows[3]), [false, false]);
  assert.is((await em().findOneOrFail(Build, { id: other.build.id })).artifactRemovedAt, null);
});

test('Analyze and Build meet a removed archive with the stage error archive_removed', async () => {
  const { op, version } = await deploymentRows(kernel);
  const project = await em().findOneOrFail(Project, { id: op.projectId! });
  const ctx = { operation: op, version, project, attempt: 1, signal: new AbortController().signal, progress() {} };
  // With S3 the archive is copied here: into the test's data directory, removed with it.
  const dir = async () => mkdtemp(join(kernel.config.dataDir, 'fetch-'));
  const archive = kernel.get(ARCHIVE);
  // Marked on the row, or gone from Storage without the mark (a sweep racing the operation's start).
  for (const removedAt of [new Date(), null]) {
    version.archiveKey = `uploads/${randomUUID()}.zip`;
    version.archiveRemovedAt = removedAt;
    const err = await fetchVersion(storage, archive, ctx, dir).catch((e: unknown) => e);
    assert.instance(err, StageError);
    assert.is((err as StageError).code, 'archive_removed');
  }
});

test.run();
