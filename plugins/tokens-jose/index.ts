import { SignJWT, jwtVerify, errors } from 'jose';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONFIG, definePlugin, PLUGIN_API_VERSION } from '../../core/plugin.js';
import type { TokenClaims, TokenKind, TokenService } from '../../core/ports/token-service.js';

const ISSUER = 'hoist';
// Each kind has its own audience and JWT type header, so one kind never passes for the other.
const kinds: Record<TokenKind, { audience: string; typ: string }> = {
  rest: { audience: 'hoist-rest-api', typ: 'hoist-rest+jwt' },
  agent: { audience: 'hoist-agent-tools', typ: 'hoist-agent+jwt' },
  site: { audience: 'hoist-site-access', typ: 'hoist-site+jwt' },
  refresh: { audience: 'hoist-agent-refresh', typ: 'hoist-refresh+jwt' },
};

/** JWT bearer tokens signed with HS256; the algorithm is pinned on verification. */
export class JoseTokenService implements TokenService {
  constructor(private readonly key: Uint8Array) {}

  async sign(kind: TokenKind, sub: string, jti: string, ttlSeconds: number) {
    const now = Math.floor(Date.now() / 1000);
    const exp = now + ttlSeconds;
    const token = await new SignJWT({})
      .setProtectedHeader({ alg: 'HS256', typ: kinds[kind].typ })
      .setIssuer(ISSUER)
      .setAudience(kinds[kind].audience)
      .setSubject(sub)
      .setJti(jti)
      .setIssuedAt(now)
      .setExpirationTime(exp)
      .sign(this.key);
    return { token, expiresAt: new Date(exp * 1000) };
  }

  async verify(kind: TokenKind, token: string): Promise<TokenClaims | null> {
    try {
      const { payload } = await jwtVerify(token, this.key, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        audience: kinds[kind].audience,
        typ: kinds[kind].typ,
        requiredClaims: ['exp', 'iat', 'sub', 'jti'],
      });
      return {
        sub: payload.sub!,
        jti: payload.jti!,
        kind,
        issuedAt: new Date(payload.iat! * 1000),
        expiresAt: new Date(payload.exp! * 1000),
      };
    } catch (err) {
      if (err instanceof errors.JOSEError || err instanceof TypeError) return null;
      throw err;
    }
  }
}

/** The configured secret, or one generated once into `<dataDir>/jwt.key` (mode 0600). */
function signingKey(dataDir: string, secret?: string): Uint8Array {
  if (secret) {
    if (Buffer.byteLength(secret) < 32) throw new Error('jwtSecret (HOIST_JWT_SECRET) must be at least 32 bytes');
    return new TextEncoder().encode(secret);
  }
  const file = join(dataDir, 'jwt.key');
  if (!existsSync(file)) {
    mkdirSync(dataDir, { recursive: true });
    try {
      writeFileSync(file, randomBytes(48).toString('base64url'), { mode: 0o600, flag: 'wx' });
    } catch (err) {
      // Another process sharing the data directory wrote it first: use theirs.
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
  }
  chmodSync(file, 0o600);
  return new TextEncoder().encode(readFileSync(file, 'utf8').trim());
}

export default definePlugin({
  apiVersion: PLUGIN_API_VERSION,
  id: 'tokens-jose',
  port: 'tokens',
  name: 'jose',
  deps: { config: CONFIG },
  create: ({ config }) => new JoseTokenService(signingKey(config.dataDir, config.jwtSecret)),
});
