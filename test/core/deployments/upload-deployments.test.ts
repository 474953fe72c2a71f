// legs: db
import { Readable } from 'node:stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { runSteps, type Step } from '../../../core/deployments/run-steps.js';
import {
  UPLOAD_DEPLOYMENTS,
  type UploadDeployments,
  type UploadTarget,
} from '../../../core/deployments/upload-deployments.js';
import { EnvironmentVariable } from '../../../core/entities/environment-variable.js';
import { Project } from '../../../core/entities/project.js';
import { ProjectKey } from '../../../core/entities/project-key.js';
import { Version } from '../../../core/entities/version.js';
import { HoistError } from '../../../core/errors.js';
import { STORAGE, type Storage } from '../../../core/ports/storage.js';
import { PROJECT_SERVICE } from '../../../core/projects/project-service.js';
import { testApi, type TestApi } from '../../helpers/api.js';

let t: TestApi;
let uploads: UploadDeployments;
let storage: Storage;
test.before(async () => {
  t = await testApi();
  uploads = t.kernel.get(UPLOAD_DEPLOYMENTS);
  storage = t.kernel.get(STORAGE);
});
test.after(async () => t?.close());

const em = () => t.kernel.orm.em.fork();
let n = 0;

/** An archive in Storage, as a route hands it over. */
async function stored() {
  const key = `uploads/test-${process.pid}-${++n}.zip`;
  return { ...(await storage.put(key, Readable.from([Buffer.from(`zip ${n}`)]))), filename: 'site.zip' };
}

/** A free account (one concurrent deployment chain) whose one chain already runs: the next start is refused. */
async function busyAccount() {
  const { accountId } = await t.account();
  const first = await t.inContext(async () =>
    uploads.deploy({ accountId, target: { name: 'busy' }, upload: await stored(), options: {} }),
  );
  assert.is(first.started.operation.status, 'running');
  return accountId;
}

const refused = async (work: () => Promise<unknown>, code: string) => {
  const err = await t.inContext(work).then(
    () => null,
    (e: unknown) => e,
  );
  assert.instance(err, HoistError);
  assert.is((err as HoistError).code, code, (err as Error).message);
};

test('runSteps undoes the finished steps, last first, and reports an undo that fails', async () => {
  const seen: string[] = [];
  const step = (name: string, fails = false): Step<string[]> => ({
    name,
    run: async (s) => {
      if (fails) throw new Error(`${name} failed`);
      s.push(`run ${name}`);
    },
    compensate: async (s) => {
      s.push(`undo ${name}`);
      if (name === 'b') throw new Error('undo b failed');
    },
  });
  const failed: string[] = [];
  await runSteps(seen, [step('a'), step('b'), step('c'), step('d', true), step('e')], (name) => failed.push(name)).then(
    () => assert.unreachable(),
    (err: Error) => assert.is(err.message, 'd failed'),
  );
  assert.equal(seen, ['run a', 'run b', 'run c', 'undo c', 'undo b', 'undo a']);
  assert.equal(failed, ['b']);
});

test("runSteps: a step that answers 'done' ends the use case there", async () => {
  const ran: string[] = [];
  const step = (name: string, done = false): Step<string[]> => ({
    name,
    run: async (s) => {
      s.push(name);
      return done ? 'done' : undefined;
    },
  });
  await runSteps(ran, [step('a'), step('b', true), step('c')], () => assert.unreachable());
  assert.equal(ran, ['a', 'b']);
});

test('a refused start after the project was created leaves no project, no environment and no archive', async () => {
  const accountId = await busyAccount();
  const upload = await stored();
  const environment = JSON.stringify({ API_KEY: 'secret-value', MODE: { value: 'x', scope: 'build' } });
  await refused(
    () => uploads.deploy({ accountId, target: { name: 'Fresh', environment }, upload, options: {} }),
    'plan_restricted',
  );
  assert.is(await em().count(Project, { accountId, name: 'Fresh' }), 0);
  assert.is(await em().count(EnvironmentVariable, {}), 0);
  assert.is(await em().count(ProjectKey, {}), 0);
  assert.is(await storage.stat(upload.key), null);
  assert.is(await em().count(Version, { archiveKey: upload.key }), 0);
});

test('an existing project is never deleted: by name or by id, whatever step refuses', async () => {
  const accountId = await busyAccount();
  const project = await t.inContext(() => t.kernel.get(PROJECT_SERVICE).create(accountId, { name: 'Kept' }));
  const cases: [UploadTarget, string][] = [
    [{ name: 'Kept' }, 'plan_restricted'],
    [{ projectId: project.id }, 'plan_restricted'],
    [{ name: 'Kept', environment: '{"A": "b"}' }, 'invalid_request'],
    [{ name: 'Kept', accessPassword: 'long enough' }, 'invalid_request'],
  ];
  for (const [target, code] of cases) {
    const upload = await stored();
    await refused(() => uploads.deploy({ accountId, target, upload, options: {} }), code);
    assert.is(await storage.stat(upload.key), null);
  }
  const kept = await em().findOneOrFail(Project, { id: project.id });
  assert.equal([kept.name, kept.status], ['Kept', 'active']);
  assert.is(await em().count(Project, { accountId, name: 'Kept' }), 1);
});

test('bad options are refused before anything is created, and the archive goes', async () => {
  const { accountId } = await t.account();
  const upload = await stored();
  await refused(
    () => uploads.deploy({ accountId, target: { name: 'Never' }, upload, options: { skip_build: 'maybe' } }),
    'invalid_request',
  );
  assert.is(await em().count(Project, { accountId }), 0);
  assert.is(await storage.stat(upload.key), null);
});

test('a repeated Idempotency-Key replays the first start and drops the repeated archive', async () => {
  const { accountId } = await t.account();
  const first = await stored();
  const again = { ...(await stored()), sha256: first.sha256, size: first.size };
  const start = (upload: typeof first) =>
    t.inContext(() =>
      uploads.deploy({ accountId, target: { name: 'Once' }, upload, options: {}, idempotencyKey: 'k-1' }),
    );
  const a = await start(first);
  const b = await start(again);
  assert.is(a.replayed, false);
  assert.is(b.replayed, true);
  assert.equal(b.started, a.started);
  assert.ok(await storage.stat(first.key));
  assert.is(await storage.stat(again.key), null);
  assert.is(await em().count(Project, { accountId }), 1);
});

test.run();
