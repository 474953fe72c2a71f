import type { Command } from 'commander';
import { AGENT_AUTH_SERVICE, AGENT_TTL, type AgentAuthService } from '../../../core/auth/agent-auth-service.js';
import { withKernel } from '../admin.js';
import { checkId, remoteAction, remoteOptions as remote, type RemoteOptions } from '../remote/remote-action.js';
import { usage } from '../remote/cli-error.js';
import { printTable } from './print-table.js';

const ttlOf = (text: string) => (/^\d+$/.test(text.trim()) ? Number(text) : NaN);

/**
 * `hoist tokens ls | create | revoke`: your tokens for the agent-tool interface (never valid on REST); `hoist tokens
 * mint-agent`: an operator's, for any user, on the server's own configuration.
 */
export default function tokens(program: Command): void {
  const group = program
    .command('tokens')
    .description("tokens for the agent-tool interface (the MCP server): yours, and any user's for an operator");

  remote(group.command('ls').description('list your agent tokens: id, name, how it was made, when it expires')).action(
    remoteAction<RemoteOptions, []>(async ({ client }, o) => {
      const list = await client.agentTokens();
      if (o.json) console.log(JSON.stringify(list));
      else
        printTable(
          ['id', 'name', 'source', 'expires'],
          list.map((g) => [g.id, g.name, g.source, g.expires_at]),
          'no agent tokens',
        );
    }),
  );

  remote(
    group
      .command('create')
      .description('make an agent token and print it (a secret, shown this once: keep it out of shell history)')
      .argument('<name>', 'what it is for, as hoist tokens ls shows it')
      .option(
        '--ttl <seconds>',
        `lifetime in seconds, ${AGENT_TTL.min} to ${AGENT_TTL.max}`,
        String(AGENT_TTL.default),
      ),
  ).action(
    remoteAction<RemoteOptions & { ttl: string }, [string]>(
      async ({ client }, o, name) => {
        const made = await client.createAgentToken(name, ttlOf(o.ttl));
        console.log(o.json ? JSON.stringify(made) : made.token);
      },
      {
        check: (o, name) => {
          if (!name.trim()) throw usage('an agent token needs a name (what it is for: an agent, a machine)');
          const ttl = ttlOf(o.ttl);
          if (!(ttl >= AGENT_TTL.min && ttl <= AGENT_TTL.max))
            throw usage(`--ttl takes whole seconds from ${AGENT_TTL.min} to ${AGENT_TTL.max}`);
        },
      },
    ),
  );

  remote(
    group
      .command('revoke')
      .description('revoke an agent token: it stops at once')
      .argument('<tokenID>', 'agent token id (see hoist tokens ls)'),
  ).action(
    remoteAction<RemoteOptions, [string]>(
      async ({ client }, o, id) => {
        await client.revokeAgentToken(id);
        if (o.json) console.log(JSON.stringify({ revoked: id }));
        else console.log(`Revoked agent token ${id}.`);
      },
      { check: (_o, id) => checkId(id, 'agent token', 'hoist tokens ls') },
    ),
  );

  group
    .command('mint-agent')
    .description('print an agent-tool access token for a user (a secret: keep it out of shell history and logs)')
    .requiredOption('--email <email>', 'e-mail address of the user the token acts as')
    .option('--ttl <seconds>', `lifetime in seconds, ${AGENT_TTL.min} to ${AGENT_TTL.max}`, String(AGENT_TTL.default))
    .option('--json', 'print id (of the grant, to revoke), token, expires_at and user as JSON')
    .action(async (o: { email: string; ttl: string; json?: boolean }) => {
      const minted = await withKernel((k) => k.get<AgentAuthService>(AGENT_AUTH_SERVICE).mint(o.email, ttlOf(o.ttl)));
      const { id, token, expires_at, user } = minted;
      console.log(o.json ? JSON.stringify({ id, token, expires_at, user }) : token);
    });
}
