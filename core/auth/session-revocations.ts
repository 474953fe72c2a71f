import type { HoistConfig } from '../../config/schema.js';
import { TaggedCache } from '../caching/tagged-cache.js';
import type { ChangeFeed } from '../ports/change-feed.js';
import { token } from '../tokens.js';
import type { Principal } from './principal.js';
import { revokedTag, SESSIONS_CHANNEL } from './session-cache.js';

export const SESSION_REVOCATIONS = token<SessionRevocations>('hoist.SessionRevocations');

/**
 * This process's cache of verified REST tokens (token → principal, tagged `principalTags`), kept true to
 * revocations: what this process revokes is dropped before the revoking request answers, and what another process
 * revokes arrives on the change feed (channel `sessions`).
 */
export class SessionRevocations {
  readonly cache: TaggedCache<Principal>;

  constructor(
    private readonly feed: ChangeFeed,
    config: Pick<HoistConfig, 'authCacheSize' | 'authCacheSeconds'>,
  ) {
    this.cache = new TaggedCache(config.authCacheSize, config.authCacheSeconds * 1000);
    feed.subscribe(SESSIONS_CHANNEL, (key) => this.cache.drop(revokedTag(key)));
  }

  /**
   * Tells every process that what `key` names (`sessionKey(id)`, `userKey(id)`) was revoked: dropped here at
   * once, then announced. Call it after the revocation committed. When the announcement fails, other
   * processes stop trusting the token within `authCacheSeconds`.
   */
  async revoked(key: string): Promise<void> {
    this.cache.drop(revokedTag(key));
    await this.feed.publish(SESSIONS_CHANNEL, key).catch(() => undefined);
  }
}
