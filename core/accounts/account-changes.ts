import type { ChangeFeed } from '../ports/change-feed.js';

/** The change-feed channel of account and user records, keyed `accountKey(id)` or `userKey(id)` (session-cache). */
export const ACCOUNTS_CHANNEL = 'accounts';

/** The change-feed key of an account whose record changed (name, plan, billing state). */
export const accountKey = (accountId: string) => `account:${accountId}`;

/**
 * Announces, after its write committed, that the account or user `key` names changed, so every API process drops
 * the `GET /me` answers it keeps of it. A failure is not thrown at the write that already committed: a kept answer
 * lasts `answerCacheSeconds` at most.
 */
export async function accountChanged(changes: Pick<ChangeFeed, 'publish'>, key: string): Promise<void> {
  await changes.publish(ACCOUNTS_CHANNEL, key).catch(() => undefined);
}
