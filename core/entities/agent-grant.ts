import { EntitySchema } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';

/** How an agent grant was made: by the admin CLI, by its user over REST, or by an agent through OAuth. */
export type AgentGrantSource = 'admin' | 'api' | 'oauth';

/**
 * One grant of the agent-tool interface: every agent token carries its id as `jti`, and is refused once the grant is
 * revoked (by its user, a password reset or the user's removal) or expired. An OAuth grant is made pending at the
 * user's consent (`codeHash` set, `refreshGeneration` not yet, expiring in minutes) and is active once its code is
 * exchanged; its refresh token (a signed token of its id and generation) renews its access tokens and is replaced by
 * the next generation at each use.
 */
export class AgentGrant {
  id: string = randomUUID();
  userId!: string;
  name!: string;
  source!: AgentGrantSource;
  /** The OAuth client the grant was made for (its client_id), else null. */
  clientId: string | null = null;
  createdAt!: Date;
  /** When the grant ends: an active one's tokens are refused after it. */
  expiresAt!: Date;
  revokedAt: Date | null = null;
  /** SHA-256 of the OAuth authorization code while the grant is pending. */
  codeHash: string | null = null;
  /** What the code was issued for (OAuth, while pending): the redirect URI and the PKCE S256 challenge. */
  redirectUri: string | null = null;
  codeChallenge: string | null = null;
  /** The generation of the OAuth refresh token now valid (0 from the code's exchange, one more at each refresh). */
  refreshGeneration: number | null = null;
}

/** Whether the grant waits for its OAuth code to be exchanged (its tokens are not valid yet). */
export const isPending = (g: Pick<AgentGrant, 'codeHash' | 'refreshGeneration'>): boolean =>
  g.codeHash !== null && g.refreshGeneration === null;

export const AgentGrantSchema = new EntitySchema<AgentGrant>({
  class: AgentGrant,
  tableName: 'agent_grants',
  properties: {
    id: { type: 'uuid', primary: true },
    userId: { type: 'uuid', index: true },
    name: { type: 'string', length: 100 },
    source: { type: 'string', length: 16 },
    clientId: { type: 'text', nullable: true },
    createdAt: { type: 'Date' },
    expiresAt: { type: 'Date' },
    revokedAt: { type: 'Date', nullable: true },
    codeHash: { type: 'string', length: 64, nullable: true },
    redirectUri: { type: 'text', nullable: true },
    codeChallenge: { type: 'string', length: 43, nullable: true },
    refreshGeneration: { type: 'integer', nullable: true },
  },
});
