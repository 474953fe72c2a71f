import type { TokenClaims, TokenService } from '../ports/token-service.js';

/**
 * Access tokens (the edge's `hoist_access` cookie) verified once, then remembered until they expire:
 * a private project's visitor costs one signature check, not one per request. Bounded: the oldest
 * entry goes first. What the token names (its grant, the password) is checked against the routing
 * table on every request, so a removed grant or a new password still shuts the visitor out at once.
 */
export class AccessTokenCache {
  private readonly verified = new Map<string, TokenClaims>();

  constructor(
    private readonly tokens: Pick<TokenService, 'verify'>,
    private readonly max = 10_000,
  ) {}

  /** The claims of `token` when it was verified before and has not expired, else null (`claims` verifies). */
  known(token: string | undefined, now = Date.now()): TokenClaims | null {
    const hit = token ? this.verified.get(token) : undefined;
    return hit && hit.expiresAt.getTime() > now ? hit : null;
  }

  /** The claims of a valid, unexpired `site` token, or null. */
  async claims(token: string | undefined, now = Date.now()): Promise<TokenClaims | null> {
    if (!token || token.length > 4096) return null;
    const known = this.verified.get(token);
    if (known) {
      if (known.expiresAt.getTime() > now) return known;
      this.verified.delete(token);
      return null;
    }
    const claims = await this.tokens.verify('site', token);
    if (!claims) return null;
    if (this.verified.size >= this.max) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, claims);
    return claims;
  }

  /** Whether `token` opens project `projectId`, whose current proofs are `proofs`. */
  async opens(projectId: string, proofs: ReadonlySet<string>, token: string | undefined): Promise<boolean> {
    const claims = await this.claims(token);
    return !!claims && claims.sub === projectId && proofs.has(claims.jti);
  }
}
