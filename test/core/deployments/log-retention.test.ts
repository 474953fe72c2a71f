// legs: db
import { Readable } from 'node:stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { Kernel } from '../../../adapters/kernel.js';
import { BuildLog } from '../../../core/deployments/build-log.js';
import { LOG_CHUNKS } from '../../../core/deployments/log-chunks.js';
import { LogRetention } from '../../../core/deployments/log-retention.js';
import { OPERATION_EVENTS, type StreamEvent } from '../../../core/deployments/operation-events.js';
import { Build } from '../../../core/entities/build.js';
import { BuildLogChunk } from '../../../core/entities/build-log-chunk.js';
import { Operation } from '../../../core/entities/operation.js';
import { Project } from '../../../core/entities/project.js';
import { STORAGE, type Storage } from '../../../core/ports/storage.js';
import { deploymentRows } from '../../helpers/deployment-rows.js';
import { testKernel } from '../../helpers/kernel.js';

const DAY = 24 * 3600 * 1000;

let kernel: Kernel;
let storage: Storage;
/** The retention's clock; the lines are written (and operations finish) at the real time. */
const clock = { at: Date.now(), now: () => new Date(clock.at) };
let retention: LogRetention;

test.before(async () => {
  kernel = await testKernel();
  storage = kernel.get(STORAGE);
  retention = new LogRetention(kernel.orm.em, storage, clock, 7);
});
test.after(async () => kernel?.stop());

const em = () => kernel.orm.em.fork();
const linesOf = (tag: string, n: number) =>
  Array.from({ length: n }, (_, i) => (i % 7 === 3 ? '' : `${tag} line ${i}\r progress é ${'x'.repeat(i % 50)}`));

/**
 * A finished operation with one build per entry of `builds`, each with its lines written as a build writes them
 * (LogChunks, several chunks) and, unless `stored` is false, its whole log stored as BuildLog stores it.
 */
async function finished(builds: string[][], { stored = true, status = 'failed' } = {}) {
  const { op } = await deploymentRows(kernel);
  const ids: string[] = [];
  for (const [i, lines] of builds.entries()) {
    const build = Object.assign(new Build(), {
      accountId: op.accountId,
      projectId: op.projectId!,
      versionId: op.versionId!,
      operationId: op.id,
      status: 'failed',
      logKey: `logs/${op.id}/build-${i + 1}.log`,
      createdAt: new Date(),
    });
    await em().persist(build).flush();
    ids.push(build.id);
    const writer = kernel.get(LOG_CHUNKS).writer(op.id, build.id);
    for (let at = 0; at < lines.length; at += 700) await writer.append(lines.slice(at, at + 700));
    const log = new BuildLog();
    for (const l of lines) log.line(l);
    if (stored) await storage.put(build.logKey, Readable.from([Buffer.from(log.text())]));
  }
  await em().nativeUpdate(Operation, { id: op.id }, { status, finishedAt: new Date(), updatedAt: new Date() });
  return { op, builds: ids };
}

/** The log events of a stream, checked to follow each other, as one list of lines. */
async function streamed(events: AsyncGenerator<StreamEvent>, from = 0): Promise<string[]> {
  const lines: string[] = [];
  for await (const e of events)
    if (e.event === 'log') {
      assert.is(e.data.from, from + lines.length, 'events follow each other');
      lines.push(...e.data.lines);
    }
  return lines;
}

const opStream = (op: Operation, from = 0) =>
  streamed(
    kernel
      .get(OPERATION_EVENTS)
      .operation(op.accountId, op.id, { revision: -1, line: from }, new AbortController().signal),
    from,
  );
const buildStream = (op: Operation, buildId: string, from: number) =>
  streamed(
    kernel.get(OPERATION_EVENTS).buildLog(op.accountId, op.projectId!, buildId, from, new AbortController().signal),
    from,
  );
const rows = (operationId: string) => em().find(BuildLogChunk, { operationId }, { orderBy: { fromLine: 'asc' } });

test('lines of an operation finished over N days ago leave the database; its streams answer the same', async () => {
  const [first, second] = [linesOf('first', 2500), linesOf('second', 3)];
  const { op, builds } = await finished([first, second]);
  const all = [...first, ...second];
  assert.equal(await opStream(op), all);

  clock.at = Date.now() + 6 * DAY;
  await retention.sweep();
  assert.ok((await rows(op.id)).length > 2, 'not yet: finished 6 days ago');

  clock.at = Date.now() + 8 * DAY;
  assert.ok((await retention.sweep()) >= 2);
  const left = await rows(op.id);
  assert.equal(
    left.map((r) => [r.buildId, r.fromLine, r.toLine, r.inStorage, r.lines.length]),
    [
      [builds[0], 0, 2500, true, 0],
      [builds[1], 2500, 2503, true, 0],
    ],
  );
  assert.equal(await opStream(op), all);
  assert.equal(await opStream(op, 1200), all.slice(1200), 'a stream resumes where it stood');
  assert.equal(await buildStream(op, builds[0], 0), first);
  assert.equal(await buildStream(op, builds[1], 2500), second);
  assert.equal(await buildStream(op, builds[1], 2501), second.slice(1));
  assert.is(await retention.sweep(), 0, 'nothing moves twice');

  // A retry's build goes on counting after the moved lines.
  await kernel.get(LOG_CHUNKS).writer(op.id, builds[1]).append(['retried']);
  assert.equal((await rows(op.id)).at(-1)!.fromLine, 2503);
});

test('a build whose log was never stored gets it from its lines before they go', async () => {
  const lines = linesOf('crashed', 40);
  const { op } = await finished([lines], { stored: false });
  clock.at = Date.now() + 8 * DAY;
  await retention.sweep();
  assert.ok((await rows(op.id)).every((r) => r.inStorage));
  const body = await storage.get(`logs/${op.id}/build-1.log`);
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  assert.is(Buffer.concat(chunks).toString(), lines.map((l) => `${l}\n`).join(''));
  assert.equal(await opStream(op), lines);
});

test('a stored log that is gone leaves the stream without those lines, not failing', async () => {
  const { op } = await finished([linesOf('lost', 5)]);
  clock.at = Date.now() + 8 * DAY;
  await retention.sweep();
  await storage.delete(`logs/${op.id}/build-1.log`);
  assert.equal(await opStream(op), []);
});

test('an operation still running, or of a project being deleted, keeps its lines', async () => {
  const running = await finished([linesOf('running', 10)]);
  await em().nativeUpdate(Operation, { id: running.op.id }, { status: 'running', finishedAt: null });
  const deleting = await finished([linesOf('deleting', 10)]);
  await em().nativeUpdate(Project, { id: deleting.op.projectId! }, { status: 'deleting' });
  clock.at = Date.now() + 30 * DAY;
  await retention.sweep();
  for (const { op } of [running, deleting]) assert.ok((await rows(op.id)).every((r) => !r.inStorage && r.lines.length));
});

test.run();
