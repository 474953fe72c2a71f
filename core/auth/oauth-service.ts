import type { EntityManager } from '@mikro-orm/core';
import { createHash, randomBytes } from 'node:crypto';
import { AgentGrant } from '../entities/agent-grant.js';
import { isUuid } from '../projects/keyset-cursor.js';
import type { Clock } from '../ports/clock.js';
import type { TokenService } from '../ports/token-service.js';
import { token as diToken } from '../tokens.js';
import { AGENT_TTL, type AgentAuthService } from './agent-auth-service.js';
import type { AuthService, ClientInfo } from './auth-service.js';
import { clientOf, redirectAllowed, type OAuthClient } from './oauth-clients.js';
import { OAuthError } from './oauth-error.js';
import { sessionKey } from './session-cache.js';
import type { SessionRevocations } from './session-revocations.js';

export const OAUTH_SERVICE = diToken<OAuthService>('hoist.OAuthService');

/** How long a user's consent waits for its code to be exchanged. */
export const CODE_TTL_SECONDS = 600;
/** How long an OAuth grant lasts after its last refresh. */
export const GRANT_TTL_SECONDS = 30 * 24 * 3600;

/** Where an authorization request is answered: a client and a redirect URI it registered. */
export interface AuthorizationTarget {
  client: OAuthClient;
  clientId: string;
  redirectUri: string;
  state: string | null;
}

/** An authorization request that was checked whole. */
export interface AuthorizationRequest extends AuthorizationTarget {
  codeChallenge: string;
}

/** What the token endpoint answers (RFC 6749 5.1). */
export interface TokenAnswer {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token: string;
}

/** Thrown for an authorization request that must not be sent back to its redirect URI (it named none we trust). */
export class UntrustedRedirect extends Error {}

const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const secret = () => randomBytes(32).toString('base64url');
/** A PKCE code verifier (RFC 7636 4.1). */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
/** An S256 code challenge: the base64url of a SHA-256, always 43 characters. */
const CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/**
 * OAuth 2.1 for the agent-tool interface (the MCP server): an agent registers (oauth-clients), sends its user to the
 * consent page with a PKCE challenge, the user logs in there and allows it, and the agent exchanges the code for an
 * access token (an agent token, one hour) and a refresh token (rotated at each use) of a grant the user sees among
 * their agent tokens and may revoke.
 */
export class OAuthService {
  constructor(
    private readonly em: EntityManager,
    private readonly auth: AuthService,
    private readonly agents: AgentAuthService,
    private readonly tokens: TokenService,
    private readonly clock: Clock,
    private readonly revocations: SessionRevocations,
  ) {}

  /**
   * Where an authorization request (its query, or the consent form's fields) is answered: its client, redirect URI
   * and state. Throws UntrustedRedirect when the client or its redirect URI is not one to send anything to.
   */
  target(q: Record<string, unknown>): AuthorizationTarget {
    const client = clientOf(q.client_id);
    if (!client) throw new UntrustedRedirect('Unknown client: register it first (client_id)');
    const redirectUri = q.redirect_uri ?? (client.redirectUris.length === 1 ? client.redirectUris[0] : undefined);
    if (!redirectAllowed(client, redirectUri))
      throw new UntrustedRedirect('redirect_uri is not one the client registered');
    // A state too long is not sent back: authorization() refuses the request for it.
    const state = typeof q.state === 'string' && q.state.length <= 1024 ? q.state : null;
    return { client, clientId: q.client_id as string, redirectUri, state };
  }

  /**
   * Checks a whole authorization request. Throws UntrustedRedirect as `target` does, else OAuthError for what goes
   * back to the client.
   */
  authorization(q: Record<string, unknown>): AuthorizationRequest {
    const target = this.target(q);
    if (q.state !== undefined && target.state === null)
      throw new OAuthError('invalid_request', 'state must be one value of at most 1024 characters');
    if (q.response_type !== 'code') throw new OAuthError('unsupported_response_type', 'response_type must be code');
    if (q.code_challenge_method !== 'S256' || typeof q.code_challenge !== 'string' || !CHALLENGE.test(q.code_challenge))
      throw new OAuthError('invalid_request', 'PKCE is required: code_challenge with code_challenge_method S256');
    return { ...target, codeChallenge: q.code_challenge };
  }

  /**
   * The user allowed the request, with their e-mail and password (under the login limits): makes a pending grant
   * and answers the code to send back. Throws what checkCredentials and AgentAuthService.record throw.
   */
  async approve(req: AuthorizationRequest, email: string, password: string, client: ClientInfo): Promise<string> {
    const user = await this.auth.checkCredentials(email, password, client);
    const now = this.clock.now();
    const code = secret();
    const grant = Object.assign(new AgentGrant(), {
      userId: user.id,
      name: req.client.name,
      source: 'oauth' as const,
      clientId: req.clientId,
      createdAt: now,
      expiresAt: new Date(now.getTime() + CODE_TTL_SECONDS * 1000),
      codeHash: sha256(code),
      redirectUri: req.redirectUri,
      codeChallenge: req.codeChallenge,
    });
    await this.agents.record(grant);
    return `${grant.id}.${code}`;
  }

  /** Answers the token endpoint: grant_type authorization_code or refresh_token. Throws OAuthError. */
  async token(body: Record<string, unknown>): Promise<TokenAnswer> {
    if (body.grant_type === 'authorization_code') return this.exchange(body);
    if (body.grant_type === 'refresh_token') return this.refresh(body);
    throw new OAuthError('unsupported_grant_type', 'grant_type must be authorization_code or refresh_token');
  }

  /**
   * Revokes the grant of a refresh or access token (RFC 7009): its tokens are refused at once on every process. A
   * token that names no grant is ignored, as the RFC asks.
   */
  async revoke(token: unknown): Promise<void> {
    if (typeof token !== 'string') throw new OAuthError('invalid_request', 'token is required');
    const grantId = (await this.refreshOf(token))?.grantId ?? (await this.tokens.verify('agent', token))?.jti;
    if (grantId) await this.end(grantId);
  }

  /** The grant and generation a refresh token names, when it is one Hoist signed (and unexpired); else null. */
  private async refreshOf(token: string): Promise<{ grantId: string; generation: number; userId: string } | null> {
    const claims = await this.tokens.verify('refresh', token);
    const m = claims && /^([0-9a-f-]{36})\.(\d{1,9})$/.exec(claims.jti);
    return m && isUuid(m[1]) ? { grantId: m[1], generation: Number(m[2]), userId: claims.sub } : null;
  }

  private async exchange(body: Record<string, unknown>): Promise<TokenAnswer> {
    const code = body.code;
    if (typeof code !== 'string' || !code) throw new OAuthError('invalid_request', 'code is required');
    const [id, value] = code.split('.', 2);
    const grant =
      isUuid(id) && value && code === `${id}.${value}`
        ? await this.em.fork().findOne(AgentGrant, { id, source: 'oauth' })
        : null;
    const now = this.clock.now();
    const verifier = body.code_verifier;
    if (
      !grant ||
      grant.codeHash !== sha256(value) ||
      grant.clientId !== body.client_id ||
      grant.redirectUri !== body.redirect_uri
    )
      throw new OAuthError('invalid_grant', 'Unknown code, or not issued to this client_id and redirect_uri');
    if (grant.refreshGeneration !== null || grant.revokedAt) {
      // A code used twice: whoever holds it may not be the client, so the grant ends (RFC 6749 4.1.2).
      await this.end(grant.id);
      throw new OAuthError('invalid_grant', 'The code was used already; the grant it made is revoked');
    }
    if (grant.expiresAt <= now) throw new OAuthError('invalid_grant', 'The code expired');
    if (typeof verifier !== 'string' || !VERIFIER.test(verifier) || pkce(verifier) !== grant.codeChallenge)
      throw new OAuthError('invalid_grant', 'code_verifier does not match the code_challenge');
    return this.renew(grant, null, now);
  }

  private async refresh(body: Record<string, unknown>): Promise<TokenAnswer> {
    if (typeof body.refresh_token !== 'string' || !body.refresh_token)
      throw new OAuthError('invalid_request', 'refresh_token is required');
    const presented = await this.refreshOf(body.refresh_token);
    const grant = presented
      ? await this.em.fork().findOne(AgentGrant, { id: presented.grantId, userId: presented.userId, source: 'oauth' })
      : null;
    const now = this.clock.now();
    if (!presented || !grant || grant.revokedAt || grant.expiresAt <= now || grant.refreshGeneration === null)
      throw new OAuthError('invalid_grant', 'Unknown, revoked or expired refresh token');
    if (presented.generation < grant.refreshGeneration) {
      // A refresh token Hoist signed and replaced since: its holder is not the one that has the newest (one copied
      // it), so the grant ends for both (OAuth 2.1 4.3.1). Knowing a grant's id is not enough to forge one.
      await this.end(grant.id);
      throw new OAuthError('invalid_grant', 'The refresh token was replaced already; the grant is revoked');
    }
    if (presented.generation !== grant.refreshGeneration)
      throw new OAuthError('invalid_grant', 'Unknown, revoked or expired refresh token');
    if (body.client_id !== undefined && body.client_id !== grant.clientId)
      throw new OAuthError('invalid_grant', 'The refresh token was not issued to this client_id');
    return this.renew(grant, grant.refreshGeneration, now);
  }

  /**
   * Gives the grant the refresh token of the next generation (compared and set on `was`, so two racing uses of one
   * token make one) and another GRANT_TTL_SECONDS, and signs an access token of it.
   */
  private async renew(grant: AgentGrant, was: number | null, now: Date): Promise<TokenAnswer> {
    const next = was === null ? 0 : was + 1;
    const expiresAt = new Date(now.getTime() + GRANT_TTL_SECONDS * 1000);
    const changed = await this.em
      .fork()
      .nativeUpdate(
        AgentGrant,
        { id: grant.id, refreshGeneration: was, revokedAt: null },
        { refreshGeneration: next, expiresAt },
      );
    if (!changed) throw new OAuthError('invalid_grant', 'The grant changed meanwhile (revoked, or the token used)');
    const { token } = await this.tokens.sign('agent', grant.userId, grant.id, AGENT_TTL.default);
    const refresh = await this.tokens.sign('refresh', grant.userId, `${grant.id}.${next}`, GRANT_TTL_SECONDS);
    return {
      access_token: token,
      token_type: 'Bearer',
      expires_in: AGENT_TTL.default,
      refresh_token: refresh.token,
    };
  }

  private async end(id: string): Promise<void> {
    await this.em.fork().nativeUpdate(AgentGrant, { id, revokedAt: null }, { revokedAt: this.clock.now() });
    await this.revocations.revoked(sessionKey(id));
  }
}

/** The S256 challenge of a PKCE verifier. */
export const pkce = (verifier: string): string => createHash('sha256').update(verifier).digest('base64url');
