import type { FastifyPluginAsync } from 'fastify';
import { MEMBER_SERVICE, type MemberService } from '../../../core/accounts/member-service.js';
import { ROLES } from '../../../core/accounts/roles.js';
import { bearer, principalOf } from '../auth.js';
import { errorResponses, Timestamp, Uuid } from '../schemas.js';
import type { RouteOptions } from './index.js';

const WHO =
  'Every member of an account works on all of its projects; an owner also invites, changes and removes members and ' +
  'renames the account. A call only an owner may make answers 403 forbidden to a member.';

const Member = {
  type: 'object',
  required: ['id', 'email', 'role', 'status', 'created_at'],
  properties: {
    id: Uuid,
    email: { type: 'string' },
    role: { type: 'string', enum: ROLES, description: 'owner or member.' },
    status: {
      type: 'string',
      enum: ['invited', 'expired', 'active'],
      description:
        'invited until the member chose a password with the mailed token, then active; expired when nobody did ' +
        'within 7 days of the last invitation (the address is then free for another account; invite it again to ' +
        'send a new token).',
    },
    created_at: Timestamp,
  },
} as const;

const Role = { type: 'string', enum: ROLES, description: 'owner or member.' } as const;
const params = {
  type: 'object',
  required: ['userID'],
  properties: { userID: { type: 'string', description: 'Member (user) id (UUID).' } },
} as const;

/** Members: the people of the authenticated account (list, invite, change a role, remove). */
const members: FastifyPluginAsync<RouteOptions> = async (app, { kernel }) => {
  const service = kernel.get<MemberService>(MEMBER_SERVICE);
  app.addHook('onRequest', app.authenticate);
  const tags = ['Members'];

  app.get(
    '/account/members',
    {
      schema: {
        tags,
        summary: 'List the members of the account',
        description: `The account's members, oldest first. ${WHO}`,
        security: bearer,
        response: {
          200: { type: 'object', required: ['members'], properties: { members: { type: 'array', items: Member } } },
          ...errorResponses(401),
        },
      },
    },
    async (req) => ({ members: await service.list(principalOf(req)) }),
  );

  app.post<{ Body: { email: string; role?: string } }>(
    '/account/members',
    {
      schema: {
        tags,
        summary: 'Invite a member',
        description:
          'Adds the address to the account (status invited) and mails it a set-password token, good for 7 days, ' +
          'to send to POST /auth/password-recovery/reset; then it logs in as usual. Answers 201; 200 with a new ' +
          'token mailed when the address was invited here already and has no password yet. An address that has ' +
          'an account (this one or another: one address, one account; an invitation nobody accepted within 7 days ' +
          'no longer counts) → 409 conflict; a bad address or role → ' +
          "400 invalid_request; past the plan's members_per_account (invited ones count) → 403 plan_restricted; " +
          'too many invitations from one client address, from the account or to one address within the mail ' +
          'window → 429 ' +
          `rate_limited. ${WHO}`,
        security: bearer,
        body: {
          type: 'object',
          required: ['email'],
          additionalProperties: false,
          properties: {
            email: { type: 'string', maxLength: 320, description: 'The e-mail address to invite.' },
            role: { ...Role, default: 'member' },
          },
        },
        response: { 200: Member, 201: Member, ...errorResponses(400, 401, 403, 409, 429) },
      },
    },
    async (req, reply) => {
      const { member, created } = await service.invite(principalOf(req), req.body, { address: req.ip });
      return reply.status(created ? 201 : 200).send(member);
    },
  );

  app.patch<{ Params: { userID: string }; Body: { role: string } }>(
    '/account/members/:userID',
    {
      schema: {
        tags,
        summary: "Change a member's role",
        description:
          'Makes the member an owner or a member; takes effect at once. Leaving the account without an owner → ' +
          `409 conflict; a member of another account, or none, → 404. ${WHO}`,
        security: bearer,
        params,
        body: { type: 'object', required: ['role'], additionalProperties: false, properties: { role: Role } },
        response: { 200: Member, ...errorResponses(400, 401, 403, 404, 409) },
      },
    },
    async (req) => service.setRole(principalOf(req), req.params.userID, req.body.role),
  );

  app.delete<{ Params: { userID: string } }>(
    '/account/members/:userID',
    {
      schema: {
        tags,
        summary: 'Remove a member',
        description:
          "Removes the member: their tokens are refused at once, on every API process; the account's projects " +
          'and what the member deployed stay. An owner removes anyone; a member only themselves (leaving the ' +
          `account). The last owner → 409 conflict; a member of another account, or none, → 404. ${WHO}`,
        security: bearer,
        params,
        response: { 204: { type: 'null', description: 'Removed.' }, ...errorResponses(401, 403, 404, 409) },
      },
    },
    async (req, reply) => {
      await service.remove(principalOf(req), req.params.userID);
      return reply.status(204).send();
    },
  );
};

export default members;
