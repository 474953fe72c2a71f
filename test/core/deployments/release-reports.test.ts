// legs: db
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Redaction } from '../../../core/deployments/redaction.js';
import { DeploymentReports } from '../../../core/deployments/release-reports.js';
import { Deployment } from '../../../core/entities/deployment.js';
import { CLOCK } from '../../../core/ports/clock.js';
import type { Logger } from '../../../core/tokens.js';
import type { Kernel } from '../../../adapters/kernel.js';
import { testKernel } from '../../helpers/kernel.js';

const SECRET = 'sk_live_0123456789';
let kernel: Kernel;
let reports: DeploymentReports;
/** The operation and project whose environment the redaction was asked for. */
const asked: string[][] = [];
const errors: object[] = [];
const log = { error: (obj: object) => void errors.push(obj) } as unknown as Logger;

test.before(async () => {
  kernel = await testKernel();
  const redaction = new Redaction(kernel.config.dataDir, {
    valuesOf: async (operationId, projectId) => (asked.push([operationId, projectId]), [SECRET]),
  });
  reports = new DeploymentReports(kernel.orm.em, redaction, kernel.get(CLOCK), log);
});
test.after(async () => kernel?.stop());

async function deployment(status: string): Promise<Deployment> {
  const id = () => randomUUID();
  const d = Object.assign(new Deployment(), {
    accountId: id(),
    projectId: id(),
    versionId: id(),
    buildId: id(),
    operationId: id(),
    status,
    target: { kind: 'http', url: 'http://127.0.0.1:1' },
    createdAt: new Date(),
  });
  await kernel.orm.em.fork().persist(d).flush();
  return d;
}

const row = (id: string) => kernel.orm.em.fork().findOneOrFail(Deployment, { id });

test('targetChanged records the new address', async () => {
  const d = await deployment('live');
  await reports.targetChanged(d.id, { kind: 'http', url: 'http://10.0.0.7:8080' });
  const after = await row(d.id);
  assert.equal(after.target, { kind: 'http', url: 'http://10.0.0.7:8080' });
  assert.is(after.status, 'live');
});

test('exited marks a live deployment failed (deploy_crash_loop), its message masked as it is written', async () => {
  const d = await deployment('live');
  const path = `${kernel.config.dataDir}/releases/${d.id}/server.js`;
  await reports.exited(d.id, 'The app crashed 5 times within a minute and was stopped.', [
    `token=${SECRET}`,
    `    at ${path}:1:9`,
  ]);
  const after = await row(d.id);
  assert.is(after.status, 'failed');
  assert.ok(after.endedAt);
  assert.equal(after.error, {
    code: 'deploy_crash_loop',
    message:
      'The app crashed 5 times within a minute and was stopped. Last lines:\ntoken=***\n    at <release>/server.js:1:9',
  });
  assert.equal(asked.at(-1), [d.operationId, d.projectId]);
});

test('failed marks a live deployment failed (deploy_restore_failed), masked', async () => {
  const d = await deployment('live');
  await reports.failed(d.id, `the app exited with 1 (${SECRET})`);
  const after = await row(d.id);
  assert.is(after.status, 'failed');
  assert.equal(after.error, {
    code: 'deploy_restore_failed',
    message: 'The release did not come back after a restart: the app exited with 1 (***)',
  });
});

test('a deployment no longer live keeps its end; an unknown one is no error', async () => {
  const d = await deployment('superseded');
  await reports.exited(d.id, 'The app crashed.', []);
  await reports.failed(d.id, 'gone');
  const after = await row(d.id);
  assert.is(after.status, 'superseded');
  assert.is(after.error, null);
  await reports.failed(randomUUID(), 'gone');
  assert.equal(errors, []);
});

test('a report that cannot be recorded is logged, never thrown at the deployer', async () => {
  const d = await deployment('live');
  const broken = new DeploymentReports(
    kernel.orm.em,
    { forOperation: () => Promise.reject(new Error('no redaction')) },
    kernel.get(CLOCK),
    log,
  );
  await broken.exited(d.id, 'The app crashed.', ['x']);
  assert.is((await row(d.id)).status, 'live');
  assert.equal(errors, [{ deploymentId: d.id, reason: 'no redaction' }]);
});

test.run();
