import type { Command } from 'commander';
import { AGENT_AUTH_SERVICE, AGENT_TTL, type AgentAuthService } from '../../../core/auth/agent-auth-service.js';
import { withKernel } from '../admin.js';

/** `hoist tokens mint-agent`: issue access tokens for the agent-tool interface (never valid on REST). */
export default function tokens(program: Command): void {
  const group = program.command('tokens').description('issue tokens for the agent-tool interface');

  group
    .command('mint-agent')
    .description('print an agent-tool access token for a user (a secret: keep it out of shell history and logs)')
    .requiredOption('--email <email>', 'e-mail address of the user the token acts as')
    .option('--ttl <seconds>', `lifetime in seconds, ${AGENT_TTL.min} to ${AGENT_TTL.max}`, String(AGENT_TTL.default))
    .option('--json', 'print token, expires_at and user as JSON')
    .action(async (o: { email: string; ttl: string; json?: boolean }) => {
      const ttl = /^\d+$/.test(o.ttl.trim()) ? Number(o.ttl) : NaN;
      const minted = await withKernel((k) => k.get<AgentAuthService>(AGENT_AUTH_SERVICE).mint(o.email, ttl));
      console.log(o.json ? JSON.stringify(minted) : minted.token);
    });
}
