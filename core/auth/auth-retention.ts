import type { EntityManager } from '@mikro-orm/core';
import { AgentGrant } from '../entities/agent-grant.js';
import { Session } from '../entities/session.js';

/** Days a session or agent grant is kept once revoked or expired (nothing shows or accepts it then). */
export const AUTH_RECORD_DAYS = 30;

/**
 * Deletes the sessions and agent grants revoked or expired more than AUTH_RECORD_DAYS before `now`: every login and
 * agent token leaves a row, which nothing else would ever remove. Resolves how many of each went.
 */
export async function purgeAuthRecords(em: EntityManager, now: Date): Promise<{ sessions: number; grants: number }> {
  const before = new Date(now.getTime() - AUTH_RECORD_DAYS * 24 * 3600 * 1000);
  const ended = { $or: [{ revokedAt: { $lt: before } }, { expiresAt: { $lt: before } }] };
  const fork = em.fork();
  return {
    sessions: await fork.nativeDelete(Session, ended),
    grants: await fork.nativeDelete(AgentGrant, ended),
  };
}
