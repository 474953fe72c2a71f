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
