import type { Principal } from './principal.js';

/** The change-feed channel that carries session revocations between processes. */
export const SESSIONS_CHANNEL = 'sessions';

/** The change-feed key of one revoked session. */
export const sessionKey = (sessionId: string) => `session:${sessionId}`;
/** The change-feed key of a user whose every session was revoked. */
export const userKey = (userId: string) => `user:${userId}`;

/** The tags a verified token is cached under (see SessionRevocations): its session and its user. */
export const principalTags = (principal: Principal) => [sessionKey(principal.sessionId), userKey(principal.userId)];

/** What a revocation announced as `key` drops: that session or user; null (everything) for any other key. */
export const revokedTag = (key: string | null) => (key && /^(session|user):/.test(key) ? key : null);
