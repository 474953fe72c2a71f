import type { EntityManager } from '@mikro-orm/core';
import { SET_PASSWORD_TTL_SECONDS } from '../auth/password-recovery-service.js';
import { OneTimeToken } from '../entities/one-time-token.js';
import { User } from '../entities/user.js';

/** How long an invitation holds its address after it was last sent: its set-password token's lifetime. */
export const INVITATION_TTL_MS = SET_PASSWORD_TTL_SECONDS * 1000;

/** Whether `user` is an invitation nobody accepted (chose a password) within INVITATION_TTL_MS of its last sending. */
export const lapsed = (user: Pick<User, 'passwordHash' | 'invitedAt'>, now: Date): boolean =>
  user.passwordHash === null && user.invitedAt !== null && now.getTime() - user.invitedAt.getTime() > INVITATION_TTL_MS;

/**
 * Frees `email` of an invitation that lapsed, so that an owner cannot hold an address they do not control: its user
 * (who never chose a password, so never logged in) and its tokens go. Resolves whether one went.
 */
export async function dropLapsedInvitation(em: EntityManager, email: string, now: Date): Promise<boolean> {
  const user = await em.findOne(
    User,
    { email, passwordHash: null, invitedAt: { $lt: new Date(now.getTime() - INVITATION_TTL_MS) } },
    { disableIdentityMap: true },
  );
  if (!user) return false;
  await em.nativeDelete(OneTimeToken, { userId: user.id });
  return (await em.nativeDelete(User, { id: user.id, passwordHash: null })) === 1;
}
