import type { FastifyPluginAsync } from 'fastify';
import { AUTH_SERVICE, type AuthService } from '../../../core/auth/auth-service.js';
import {
  EMAIL_VERIFICATION_SERVICE,
  type EmailVerificationService,
} from '../../../core/auth/email-verification-service.js';
import {
  PASSWORD_RECOVERY_SERVICE,
  type PasswordRecoveryService,
} from '../../../core/auth/password-recovery-service.js';
import { HoistError } from '../../../core/errors.js';
import { bearer, principalOf } from '../auth.js';
import { errorResponses, Timestamp, Uuid } from '../schemas.js';
import type { RouteOptions } from './index.js';

const tags = ['Authentication'];

const LoginResult = {
  type: 'object',
  required: ['token', 'expires_at', 'user'],
  properties: {
    token: { type: 'string', description: 'REST bearer token (JWT).' },
    expires_at: { type: 'string', format: 'date-time' },
    user: { type: 'object', required: ['id', 'email'], properties: { id: Uuid, email: { type: 'string' } } },
  },
} as const;

const SessionView = {
  type: 'object',
  required: ['id', 'created_at', 'expires_at', 'address', 'user_agent', 'current'],
  properties: {
    id: Uuid,
    created_at: Timestamp,
    expires_at: Timestamp,
    address: { type: ['string', 'null'], description: 'Client address at login.' },
    user_agent: { type: ['string', 'null'] },
    current: { type: 'boolean', description: 'True for the session of the token this request carries.' },
  },
} as const;

const Accepted = (description: string, values: string[]) => ({
  description,
  type: 'object',
  required: ['status'],
  properties: { status: { type: 'string', enum: values } },
});

const Token = {
  type: 'string',
  minLength: 1,
  maxLength: 200,
  description: 'The one-time token from the mail.',
} as const;
const Password = { type: 'string', minLength: 8, maxLength: 1024, description: 'At least 8 characters.' } as const;

/** Authentication: login, the registration refusal, logout, sessions, e-mail verification and password recovery. */
const auth: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const service = kernel.get<AuthService>(AUTH_SERVICE);
  const verification = kernel.get<EmailVerificationService>(EMAIL_VERIFICATION_SERVICE);
  const recovery = kernel.get<PasswordRecoveryService>(PASSWORD_RECOVERY_SERVICE);

  app.post<{ Body: { email: string; password: string } }>(
    '/auth/login',
    {
      schema: {
        tags,
        summary: 'Exchange e-mail and password for a JWT',
        description:
          'An unknown e-mail and a wrong password get the same 401. Limits, in sliding ' +
          'windows of loginWindowSeconds: all attempts ' +
          'per client address (loginMaxPerAddress), and attempts per e-mail from one client ' +
          'address not followed by a success ' +
          '(loginMaxPerAccount); past either the answer is 429 rate_limited with ' +
          'Retry-After, even for the right password, for that ' +
          'address only. Failures of one e-mail from all addresses together past ' +
          'loginMaxPerAccount only slow its logins down ' +
          '(up to 3 s; not from an address the user has logged in from before): someone ' +
          'guessing from elsewhere cannot lock the owner out.',
        body: {
          type: 'object',
          required: ['email', 'password'],
          additionalProperties: false,
          properties: {
            email: { type: 'string', minLength: 3, maxLength: 320 },
            password: { type: 'string', minLength: 1, maxLength: 1024 },
          },
        },
        response: { 200: LoginResult, ...errorResponses(400, 401, 429) },
      },
    },
    async (req) =>
      service.login(req.body.email, req.body.password, { address: req.ip, userAgent: req.headers['user-agent'] }),
  );

  // Refused in onRequest, before the body is parsed, so no body (or content type) gets anything but 403.
  const refuseRegistration = async () => {
    throw new HoistError(
      'registration_disabled',
      'Public registration is disabled; accounts come from access requests: POST ' +
        '/api/v1/access-requests with {"email": ...}',
      { access_requests: '/api/v1/access-requests' },
    );
  };
  app.post(
    '/auth/register',
    {
      onRequest: refuseRegistration,
      schema: {
        tags,
        summary: 'Public registration (disabled)',
        description:
          'Public registration is disabled: every attempt, whatever its body, gets 403 registration_disabled. ' +
          'Accounts come from access requests (POST /api/v1/access-requests) approved by an administrator.',
        response: errorResponses(403),
      },
    },
    refuseRegistration,
  );

  app.post(
    '/auth/logout',
    {
      onRequest: app.authenticate,
      schema: {
        tags,
        summary: 'Revoke the current session',
        description: 'Revokes the session of the bearer token; the same token then gets 401. Other sessions stay.',
        security: bearer,
        response: { 204: { type: 'null', description: 'Logged out.' }, ...errorResponses(401) },
      },
    },
    async (req, reply) => {
      await service.logout(principalOf(req));
      return reply.status(204).send();
    },
  );

  app.get(
    '/auth/sessions',
    {
      onRequest: app.authenticate,
      schema: {
        tags,
        summary: 'List the active sessions of the user',
        description:
          'Sessions neither revoked nor expired, newest first; `current` marks the one this request carries.',
        security: bearer,
        response: {
          200: {
            type: 'object',
            required: ['sessions'],
            properties: { sessions: { type: 'array', items: SessionView } },
          },
          ...errorResponses(401),
        },
      },
    },
    async (req) => ({ sessions: await service.sessions(principalOf(req)) }),
  );

  app.post(
    '/auth/email-verification',
    {
      onRequest: app.authenticate,
      schema: {
        tags,
        summary: 'Mail an e-mail verification token',
        description:
          'Mails the user a one-time token, valid 24 hours, to send to POST /api/v1/auth/email-verification/confirm. ' +
          'Answers status already_verified, and sends nothing, when the address is verified. A user gets at most ' +
          'mailMaxPerRecipient of these mails per mailWindowSeconds: past it 429 rate_limited with Retry-After.',
        security: bearer,
        response: {
          202: Accepted('Mailed, or nothing to do.', ['sent', 'already_verified']),
          ...errorResponses(401, 429, 503),
        },
      },
    },
    async (req, reply) => reply.status(202).send(await verification.request(principalOf(req))),
  );

  app.post<{ Body: { token: string } }>(
    '/auth/email-verification/confirm',
    {
      schema: {
        tags,
        summary: 'Confirm the e-mail address with the mailed token',
        description:
          'Marks the address verified. An unknown, used or expired token is 400 ' +
          'invalid_request with details.field token.',
        body: { type: 'object', required: ['token'], additionalProperties: false, properties: { token: Token } },
        response: { 204: { type: 'null', description: 'Verified.' }, ...errorResponses(400) },
      },
    },
    async (req, reply) => {
      await verification.confirm(req.body.token);
      return reply.status(204).send();
    },
  );

  app.post<{ Body: { email: string } }>(
    '/auth/password-recovery',
    {
      schema: {
        tags,
        summary: 'Mail a password reset token',
        description:
          'Answers 202 {status: "accepted"} the same way, in about the same time, whether ' +
          'or not the e-mail has an account; ' +
          'when it has, mails a one-time token, valid 1 hour, for POST /api/v1/auth/password-recovery/reset. ' +
          'Limited in sliding windows of mailWindowSeconds: past mailMaxPerAddress requests ' +
          'from one client address the answer is 429 ' +
          'rate_limited with Retry-After; past mailMaxPerRecipient for one e-mail (known or ' +
          'not) the answer stays 202 and nothing is mailed.',
        body: {
          type: 'object',
          required: ['email'],
          additionalProperties: false,
          properties: { email: { type: 'string', minLength: 3, maxLength: 320 } },
        },
        response: {
          202: Accepted('Accepted; a mail follows if the e-mail has an account.', ['accepted']),
          ...errorResponses(400, 429, 503),
        },
      },
    },
    async (req, reply) => {
      await recovery.request(req.body.email, { address: req.ip });
      return reply.status(202).send({ status: 'accepted' });
    },
  );

  app.post<{ Body: { token: string; password: string } }>(
    '/auth/password-recovery/reset',
    {
      schema: {
        tags,
        summary: 'Set a new password with the mailed token',
        description:
          'Sets the password, uses the token up (with any other pending reset token of the ' +
          'user) and revokes every session ' +
          'of the user, so old bearer tokens get 401. An unknown, used or expired token is ' +
          '400 invalid_request with details.field token. ' +
          'Also sets the first password of an account created from an approved access request.',
        body: {
          type: 'object',
          required: ['token', 'password'],
          additionalProperties: false,
          properties: { token: Token, password: Password },
        },
        response: { 204: { type: 'null', description: 'Password set.' }, ...errorResponses(400) },
      },
    },
    async (req, reply) => {
      await recovery.reset(req.body.token, req.body.password);
      return reply.status(204).send();
    },
  );
};

export default auth;
