// legs: db
// The worker's purge of records nothing shows or uses any more: sessions and agent grants long revoked or expired
// (after AUTH_RECORD_DAYS), Idempotency-Keys past 24 h, finished project deletions' operations after
// DELETION_RECORD_DAYS; what is active, or ended more recently, stays.
import { RequestContext } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { startRecordRetention } from '../../../adapters/worker/record-retention.js';
import { AUTH_RECORD_DAYS } from '../../../core/auth/auth-retention.js';
import { AgentGrant } from '../../../core/entities/agent-grant.js';
import { IdempotencyRecord } from '../../../core/entities/idempotency-record.js';
import { Operation } from '../../../core/entities/operation.js';
import { Session } from '../../../core/entities/session.js';
import { DELETION_RECORD_DAYS } from '../../../core/projects/project-deleter.js';
import { testKernel } from '../../helpers/kernel.js';

const DAY = 24 * 3600 * 1000;

test('a round deletes sessions and grants ended more than AUTH_RECORD_DAYS ago, and keeps the others', async () => {
  const kernel = await testKernel();
  try {
    const now = Date.now();
    const userId = randomUUID();
    const at = (days: number) => new Date(now - days * DAY);
    const rows = {
      oldExpired: { createdAt: at(100), expiresAt: at(AUTH_RECORD_DAYS + 1), revokedAt: null },
      oldRevoked: { createdAt: at(100), expiresAt: at(-10), revokedAt: at(AUTH_RECORD_DAYS + 2) },
      recentlyExpired: { createdAt: at(40), expiresAt: at(AUTH_RECORD_DAYS - 1), revokedAt: null },
      recentlyRevoked: { createdAt: at(40), expiresAt: at(-10), revokedAt: at(1) },
      active: { createdAt: at(1), expiresAt: at(-1), revokedAt: null },
    };
    const ids: Record<string, { session: string; grant: string }> = {};
    await RequestContext.create(kernel.orm.em.fork(), async () => {
      const em = kernel.orm.em;
      for (const [name, times] of Object.entries(rows)) {
        const session = Object.assign(new Session(), { userId, ...times });
        const grant = Object.assign(new AgentGrant(), { userId, name, source: 'api' as const, ...times });
        em.persist([session, grant]);
        ids[name] = { session: session.id, grant: grant.id };
      }
      await em.flush();
    });
    await startRecordRetention(kernel, 60_000)();
    const left = await RequestContext.create(kernel.orm.em.fork(), async () => ({
      sessions: (await kernel.orm.em.find(Session, { userId })).map((s) => s.id).sort(),
      grants: (await kernel.orm.em.find(AgentGrant, { userId })).map((g) => g.id).sort(),
    }));
    const kept = ['recentlyExpired', 'recentlyRevoked', 'active'];
    assert.equal(left.sessions, kept.map((k) => ids[k].session).sort());
    assert.equal(left.grants, kept.map((k) => ids[k].grant).sort());
  } finally {
    await kernel.stop();
  }
});

test('a round deletes Idempotency-Keys past 24 h and deletions finished DELETION_RECORD_DAYS ago', async () => {
  const kernel = await testKernel();
  try {
    const now = Date.now();
    const at = (hours: number) => new Date(now - hours * 3600 * 1000);
    const accountId = randomUUID();
    const key = (name: string, createdAt: Date) =>
      Object.assign(new IdempotencyRecord(), {
        id: `${accountId}:${name}`,
        requestHash: 'h',
        status: 1,
        body: {},
        createdAt,
      });
    const op = (kind: string, status: string, finishedAt: Date | null) =>
      Object.assign(new Operation(), {
        accountId,
        kind,
        status,
        finishedAt,
        createdAt: at(24 * 100),
        updatedAt: at(1),
      });
    const ops = {
      oldDeletion: op('delete_project', 'succeeded', at(24 * (DELETION_RECORD_DAYS + 1))),
      recentDeletion: op('delete_project', 'succeeded', at(24 * (DELETION_RECORD_DAYS - 1))),
      runningDeletion: op('delete_project', 'running', null),
      oldDeploy: op('deploy', 'succeeded', at(24 * (DELETION_RECORD_DAYS + 1))),
    };
    await RequestContext.create(kernel.orm.em.fork(), async () => {
      const em = kernel.orm.em;
      em.persist([key('old', at(25)), key('recent', at(23)), ...Object.values(ops)]);
      await em.flush();
    });
    await startRecordRetention(kernel, 60_000)();
    const left = await RequestContext.create(kernel.orm.em.fork(), async () => ({
      keys: (await kernel.orm.em.find(IdempotencyRecord, { id: { $like: `${accountId}:%` } })).map((k) => k.id),
      ops: (await kernel.orm.em.find(Operation, { accountId })).map((o) => o.id).sort(),
    }));
    assert.equal(left.keys, [`${accountId}:recent`]);
    assert.equal(left.ops, [ops.recentDeletion.id, ops.runningDeletion.id, ops.oldDeploy.id].sort());
  } finally {
    await kernel.stop();
  }
});

test.run();
