import type { EntityManager } from '@mikro-orm/core';
import { createHash, randomBytes } from 'node:crypto';
import { OneTimeToken, type OneTimePurpose } from '../entities/one-time-token.js';
import { invalid } from '../errors.js';
import type { Clock } from '../ports/clock.js';

const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');

/** Mailed one-time secrets: only their SHA-256 is stored; each is good for one purpose, once, until it expires. */
export class OneTimeTokens {
  constructor(
    private readonly em: EntityManager,
    private readonly clock: Clock,
  ) {}

  /** Stores a new token for `userId` and returns the secret (shown once, in the mail). */
  async issue(userId: string, purpose: OneTimePurpose, ttlSeconds: number): Promise<string> {
    const token = randomBytes(32).toString('base64url');
    const expiresAt = new Date(this.clock.now().getTime() + ttlSeconds * 1000);
    await this.em.insert(
      OneTimeToken,
      Object.assign(new OneTimeToken(), {
        userId,
        purpose,
        tokenHash: sha256(token),
        expiresAt,
        createdAt: this.clock.now(),
      }),
    );
    return token;
  }

  /**
   * Marks `token` used and returns its row; throws invalid_request (field `token`) when it is
   * unknown, of another purpose, used or expired. Of two concurrent uses only one succeeds.
   */
  async consume(token: string, purpose: OneTimePurpose): Promise<OneTimeToken> {
    const now = this.clock.now();
    const row = await this.em.findOne(
      OneTimeToken,
      { tokenHash: sha256(token), purpose },
      { disableIdentityMap: true },
    );
    if (!row || row.usedAt || row.expiresAt <= now)
      throw invalid('The token is unknown, used or expired', { field: 'token' });
    if (!(await this.em.nativeUpdate(OneTimeToken, { id: row.id, usedAt: null }, { usedAt: now }))) {
      throw invalid('The token is unknown, used or expired', { field: 'token' });
    }
    return row;
  }

  /** Marks every unused token of `userId` for `purpose` used (a newer one made them moot). */
  async retire(userId: string, purpose: OneTimePurpose): Promise<void> {
    await this.em.nativeUpdate(OneTimeToken, { userId, purpose, usedAt: null }, { usedAt: this.clock.now() });
  }
}
