import { Option, type Command } from 'commander';
import {
  ACCESS_REQUEST_SERVICE,
  accessRequestStatuses,
  type AccessRequestService,
} from '../../../core/access-requests/access-request-service.js';
import type { Kernel } from '../../kernel.js';
import { withKernel } from '../admin.js';
import { printTable } from './print-table.js';

/** `hoist access-requests list | approve`: review the public requests for an account. */
export default function accessRequests(program: Command): void {
  const group = program.command('access-requests').description('review public access requests');
  const service = (k: Kernel) => k.get<AccessRequestService>(ACCESS_REQUEST_SERVICE);

  group
    .command('list')
    .description('list access requests, with their status')
    .addOption(new Option('--status <status>', 'only requests in this status').choices(accessRequestStatuses))
    .option('--json', 'print the requests as JSON')
    .action(async (o: { status?: string; json?: boolean }) => {
      const list = await withKernel((k) => service(k).list(o.status));
      const rows = list.map((r) => ({
        email: r.email,
        name: r.name,
        message: r.message,
        status: r.status,
        created_at: r.createdAt.toISOString(),
        approved_at: r.approvedAt?.toISOString() ?? null,
      }));
      if (o.json) console.log(JSON.stringify(rows));
      else
        printTable(
          ['e-mail', 'status', 'requested', 'name', 'message'],
          rows.map((r) => [r.email, r.status, r.created_at, r.name ?? '', r.message?.replace(/\s+/g, ' ') ?? '']),
          'no access requests',
        );
    });

  group
    .command('approve')
    .description('approve a request: creates the account and mails the user how to set a password')
    .requiredOption('--email <email>', 'e-mail address of the request')
    .option('--json', 'print the result as JSON')
    .action(async (o: { email: string; json?: boolean }) => {
      const { account, user, outbox } = await withKernel(async (k) => ({
        ...(await service(k).approve(o.email)),
        outbox: k.config.mailer === 'outbox',
      }));
      if (o.json)
        console.log(
          JSON.stringify({
            user: { id: user.id, email: user.email },
            account: { id: account.id, name: account.name, plan: account.plan },
          }),
        );
      else {
        const read = outbox ? ` (read it with: hoist mail list --to ${user.email})` : '';
        console.log(
          `approved ${user.email}: created user ${user.id} in account ${account.id}; ` +
            `mailed instructions to set a password${read}`,
        );
      }
    });
}
