import { Option, type Command } from 'commander';
import { ACCOUNT_SERVICE, type AccountService } from '../../../core/accounts/account-service.js';
import { invalid } from '../../../core/errors.js';
import type { Kernel } from '../../kernel.js';
import { withKernel } from '../admin.js';
import { printTable } from './print-table.js';
import { PASSWORD_IN_ARGV, readPassword } from './read-password.js';

/** `hoist accounts create | list | set-plan`: account administration (public registration is disabled). */
export default function accounts(program: Command): void {
  const group = program.command('accounts').description('create and administer accounts');
  const service = (k: Kernel) => k.get<AccountService>(ACCOUNT_SERVICE);

  group
    .command('create')
    .description(
      'create an account and its first user; the password is read from stdin (or a hidden prompt) or --password-file',
    )
    .requiredOption('--email <email>', 'e-mail address of the first user')
    .option('--name <name>', 'account name (default: the e-mail address)')
    .option('--plan <plan>', 'plan id (default: free)')
    .option('--password-file <file>', 'read the password from this file instead of stdin')
    .addOption(new Option('--password [password]').hideHelp())
    .option('--json', 'print the result as JSON')
    .action(
      async (o: {
        email: string;
        name?: string;
        plan?: string;
        passwordFile?: string;
        password?: unknown;
        json?: boolean;
      }) => {
        if (o.password !== undefined) throw invalid(PASSWORD_IN_ARGV, { field: 'password' });
        const password = await readPassword(o.passwordFile);
        const { account, user } = await withKernel((k) =>
          service(k).create({ email: o.email, password, name: o.name, plan: o.plan }),
        );
        if (o.json)
          console.log(
            JSON.stringify({
              user: { id: user.id, email: user.email },
              account: { id: account.id, name: account.name, plan: account.plan },
            }),
          );
        else console.log(`created user ${user.id} (${user.email}) in account ${account.id}, plan ${account.plan}`);
      },
    );

  group
    .command('list')
    .description('list accounts, oldest first')
    .option('--json', 'print the accounts as JSON')
    .action(async (o: { json?: boolean }) => {
      const list = await withKernel((k) => service(k).list());
      const rows = list.map(({ account: a, emails }) => ({
        id: a.id,
        name: a.name,
        plan: a.plan,
        emails,
        created_at: a.createdAt.toISOString(),
      }));
      if (o.json) console.log(JSON.stringify(rows));
      else
        printTable(
          ['id', 'plan', 'created', 'name', 'e-mail'],
          rows.map((r) => [r.id, r.plan, r.created_at, r.name, r.emails.join(', ')]),
          'no accounts',
        );
    });

  group
    .command('set-plan')
    .description('move the account of a user to another plan')
    .requiredOption('--email <email>', "e-mail address of one of the account's users")
    .requiredOption('--plan <plan>', 'plan id')
    .option('--json', 'print the result as JSON')
    .action(async (o: { email: string; plan: string; json?: boolean }) => {
      const account = await withKernel((k) => service(k).setPlan(o.email, o.plan));
      if (o.json) console.log(JSON.stringify({ account: { id: account.id, name: account.name, plan: account.plan } }));
      else console.log(`account ${account.id} (${o.email}) is now on plan ${account.plan}`);
    });
}
