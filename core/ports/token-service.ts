import { token } from '../tokens.js';

/**
 * The kinds of token Hoist issues; each is valid only where its kind is expected. `site` is the
 * edge's access cookie of a private project (sub: project id, jti: what opened it); `refresh` an agent grant's OAuth
 * refresh token (sub: user id, jti: `<grant id>.<generation>`).
 */
export type TokenKind = 'rest' | 'agent' | 'site' | 'refresh';

export interface TokenClaims {
  /** User id (project id for `site`). */
  sub: string;
  /** Session id (REST), grant id (agent), access proof (site) or grant and generation (refresh). */
  jti: string;
  kind: TokenKind;
  issuedAt: Date;
  expiresAt: Date;
}

/** Signs and verifies bearer tokens. Plugin: `token-jose` (JWT, HS256 pinned). */
export interface TokenService {
  /** Signs a token of `kind` for `sub`, identified by `jti`, expiring after `ttlSeconds`. */
  sign(kind: TokenKind, sub: string, jti: string, ttlSeconds: number): Promise<{ token: string; expiresAt: Date }>;
  /** Verifies signature, algorithm, issuer, audience, type and expiry for `kind`; null when any fails. */
  verify(kind: TokenKind, token: string): Promise<TokenClaims | null>;
}

export const TOKEN_SERVICE = token<TokenService>('hoist.TokenService');
