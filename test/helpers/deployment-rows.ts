import { randomUUID } from 'node:crypto';
import type { Kernel } from '../../adapters/kernel.js';
import { Operation } from '../../core/entities/operation.js';
import { Project } from '../../core/entities/project.js';
import { Version } from '../../core/entities/version.js';
import { createOperation, type Effect } from '../../core/operations/state-machine.js';

/**
 * A running deployment on real project, operation and version rows, its Analyze due but not enqueued:
 * `effects` are what enqueues it (OperationStore.carryOut).
 */
export async function deploymentRows(kernel: Kernel): Promise<{ op: Operation; version: Version; effects: Effect[] }> {
  const em = kernel.orm.em.fork();
  const accountId = randomUUID();
  const projectId = randomUUID();
  const name = `p-${randomUUID().slice(0, 8)}`;
  await em.insert(Project, {
    id: projectId,
    accountId,
    name,
    slug: name,
    visibility: 'draft',
    settings: {},
    status: 'active',
    createdAt: new Date(),
    updatedAt: new Date(),
  } as never);
  const { state, effects } = createOperation(new Date());
  const op = Object.assign(new Operation(), {
    accountId,
    projectId,
    kind: 'deploy',
    status: 'running',
    state: state as never,
    createdAt: new Date(),
    updatedAt: new Date(),
  });
  const version = Object.assign(new Version(), {
    accountId,
    projectId,
    operationId: op.id,
    archiveKey: 'k',
    archiveSize: 1,
    archiveSha256: 'x',
    createdAt: new Date(),
  });
  op.versionId = version.id;
  await em.persist([op, version]).flush();
  return { op, version, effects };
}
