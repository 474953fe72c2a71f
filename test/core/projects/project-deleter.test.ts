// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildApi } from '../../../adapters/http/app.js';
import { randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import { Build } from '../../../core/entities/build.js';
import { BuildLogChunk } from '../../../core/entities/build-log-chunk.js';
import { Deployment } from '../../../core/entities/deployment.js';
import { DEPLOYER, type Deployer } from '../../../core/ports/deployer.js';
import { STORAGE, type Storage } from '../../../core/ports/storage.js';
import { Operation } from '../../../core/entities/operation.js';
import { Project } from '../../../core/entities/project.js';
import { PROJECT_DELETER, type ProjectDeleter } from '../../../core/projects/project-deleter.js';
import { PROJECT_SERVICE, type ProjectService } from '../../../core/projects/project-service.js';
import { testApi, type TestApi } from '../../helpers/api.js';

let t: TestApi;
let projects: ProjectService;
let deleter: ProjectDeleter;
test.before(async () => {
  t = await testApi();
  projects = t.kernel.get<ProjectService>(PROJECT_SERVICE);
  deleter = t.kernel.get<ProjectDeleter>(PROJECT_DELETER);
});
test.after(async () => t?.close());

const em = () => t.kernel.orm.em.fork();

/** A deletion queued as the DELETE call queues it, but never run (as if the process died after the 202). */
async function interrupted(name: string): Promise<{ project: Project; op: Operation }> {
  const { accountId } = await t.account();
  const project = await t.inContext(() => projects.create(accountId, { name }));
  const op = await t.inContext(() => projects.requestDeletion(accountId, project.id));
  return { project, op };
}

test('requestDeletion marks the project deleting with a freed slug and starts a running operation', async () => {
  const { project, op } = await interrupted('Half Gone');
  const row = await em().findOneOrFail(Project, { id: project.id });
  assert.is(row.status, 'deleting');
  assert.is.not(row.slug, project.slug);
  assert.is(row.slug, `~deleted-${project.id}`);
  assert.equal([op.kind, op.status, op.progress, op.projectId], ['delete_project', 'running', 5, project.id]);
  await deleter.run(op.id);
});

test('run finishes the deletion once; running it again changes nothing', async () => {
  const { project, op } = await interrupted('Twice Run');
  await deleter.run(op.id);
  const done = await em().findOneOrFail(Operation, { id: op.id });
  assert.equal([done.status, done.progress], ['succeeded', 100]);
  assert.ok(done.finishedAt);
  assert.is(await em().count(Project, { id: project.id }), 0);
  await deleter.run(op.id);
  assert.equal((await em().findOneOrFail(Operation, { id: op.id })).finishedAt, done.finishedAt);
  await deleter.run('00000000-0000-4000-8000-000000000000');
});

test('finishUnfinished completes every interrupted deletion', async () => {
  const a = await interrupted('Lost One');
  const b = await interrupted('Lost Two');
  assert.ok((await deleter.finishUnfinished()) >= 2);
  for (const { op, project } of [a, b]) {
    assert.is((await em().findOneOrFail(Operation, { id: op.id })).status, 'succeeded');
    assert.is(await em().count(Project, { id: project.id }), 0);
  }
  assert.is(await deleter.finishUnfinished(), 0);
});

test('a freshly started API finishes interrupted deletions', async () => {
  const { op } = await interrupted('Restart Me');
  const app = await buildApi(t.kernel);
  await app.ready();
  await app.close();
  assert.is((await em().findOneOrFail(Operation, { id: op.id })).status, 'succeeded');
});

/** A finished deploy operation of the project, with build-log lines of a build record that does not exist. */
async function loggedOperation(accountId: string, projectId: string): Promise<string> {
  const now = new Date();
  const op = Object.assign(new Operation(), {
    accountId,
    projectId,
    kind: 'deploy',
    status: 'failed',
    createdAt: now,
    updatedAt: now,
  });
  const chunk = Object.assign(new BuildLogChunk(), {
    operationId: op.id,
    buildId: randomUUID(),
    fromLine: 0,
    toLine: 2,
    lines: ['npm install', 'npm ERR! boom'],
    createdAt: now,
  });
  await em().persist([op, chunk]).flush();
  return op.id;
}

test("a project's deletion removes the build-log lines of its operations, and only those", async () => {
  const { project, op } = await interrupted('Logged');
  const other = await t.inContext(() => projects.create(project.accountId, { name: 'Kept Logs' }));
  const gone = await loggedOperation(project.accountId, project.id);
  const kept = await loggedOperation(project.accountId, other.id);
  await deleter.run(op.id);
  assert.is(await em().count(BuildLogChunk, { operationId: gone }), 0);
  assert.is(await em().count(BuildLogChunk, { operationId: kept }), 1);
});

test("every release of the project goes, a crashed one's too; an artifact no other build holds goes", async () => {
  const { project, op } = await interrupted('Leaves Nothing');
  const other = await interrupted('Shares An Artifact');
  const storage = t.kernel.get<Storage>(STORAGE);
  const mine = `artifacts/sha256/${'a'.repeat(64)}.zip`;
  const shared = `artifacts/sha256/${'b'.repeat(64)}.zip`;
  for (const key of [mine, shared]) await storage.put(key, Readable.from([Buffer.from(key)]));
  const row = (p: Project, artifactKey: string) =>
    Object.assign(new Build(), {
      accountId: p.accountId,
      projectId: p.id,
      versionId: randomUUID(),
      operationId: randomUUID(),
      status: 'succeeded',
      artifactKey,
      createdAt: new Date(),
    });
  const statuses = ['failed', 'canceled', 'expired', 'superseded', 'live'];
  const deployments = statuses.map((status) =>
    Object.assign(new Deployment(), {
      accountId: project.accountId,
      projectId: project.id,
      versionId: randomUUID(),
      buildId: randomUUID(),
      operationId: randomUUID(),
      status,
      createdAt: new Date(),
    }),
  );
  await em()
    .persist([row(project, mine), row(project, shared), row(other.project, shared), ...deployments])
    .flush();
  const deployer = t.kernel.get<Deployer>(DEPLOYER);
  const remove = deployer.remove.bind(deployer);
  const removed: string[] = [];
  deployer.remove = async (id) => {
    removed.push(id);
    return remove(id);
  };
  try {
    await deleter.run(op.id);
  } finally {
    deployer.remove = remove;
  }
  assert.equal(removed.sort(), deployments.map((d) => d.id).sort(), 'each release, whatever its status');
  assert.not.ok(await storage.stat(mine), "the artifact only this project's builds held");
  assert.ok(await storage.stat(shared), "the artifact another project's build holds");
  await deleter.run(other.op.id);
  assert.not.ok(await storage.stat(shared), 'gone with its last build');
});

test.run();
