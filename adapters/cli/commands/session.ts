import { Option, type Command } from 'commander';
import { createInterface } from 'node:readline';
import { CliError, usage } from '../remote/cli-error.js';
import { credentialsFile, removeCredentials, saveCredentials } from '../remote/credentials.js';
import { remoteAction, type RemoteOptions } from '../remote/remote-action.js';
import { printableDeep } from '../remote/terminal.js';
import { PASSWORD_IN_ARGV, prompt, readPassword } from './read-password.js';

const API_OPTION = [
  '--api <url>',
  'Hoist API URL (default: HOIST_API_URL, else the one you logged in to, else http://localhost:3000)',
] as const;

/** `hoist login | logout | whoami`: a session with the REST API of a Hoist, kept in a file only you can read. */
export default function session(program: Command): void {
  program
    .command('login')
    .description(
      'log in to a Hoist API; asks for e-mail and password (hidden) on a terminal, else ' +
        'reads them from stdin (e-mail on the first line unless --email)',
    )
    .option('--email <email>', 'your e-mail address')
    .option('--password-file <file>', 'read the password from this file')
    .addOption(new Option('--password [password]').hideHelp())
    .option(...API_OPTION)
    .option('--json', 'print the result as JSON')
    .action(
      remoteAction<RemoteOptions & { email?: string; passwordFile?: string; password?: unknown }, []>(
        async ({ client, apiUrl }, o) => {
          const { email, password } = await credentialsFromUser(o.email, o.passwordFile);
          const result = await client.login(email, password);
          const file = await saveCredentials({
            api_url: apiUrl,
            token: result.token,
            expires_at: result.expires_at,
            email: result.user.email,
          });
          if (o.json)
            console.log(
              JSON.stringify({
                api_url: apiUrl,
                user: result.user,
                expires_at: result.expires_at,
                credentials_file: file,
              }),
            );
          else {
            const { user, expires_at } = printableDeep(result);
            console.log(`Logged in to ${apiUrl} as ${user.email} until ${expires_at}; the token is kept in ${file}`);
          }
        },
        {
          needToken: false,
          anonymous: true,
          check: (o) => {
            if (o.password !== undefined) throw usage(PASSWORD_IN_ARGV);
          },
        },
      ),
    );

  program
    .command('logout')
    .description('end the session on the API and remove the saved token')
    .option(...API_OPTION)
    .option('--json', 'print the result as JSON')
    .action(
      remoteAction<RemoteOptions, []>(
        async ({ client, tokenFrom }, o) => {
          let revoked = false;
          if (tokenFrom !== 'none') {
            // A token the API no longer takes is as good as logged out; anything else is reported.
            await client.logout().then(
              () => (revoked = true),
              (err) => {
                if (err?.status !== 401) throw err;
              },
            );
          }
          const removed = tokenFrom === 'env' ? false : await removeCredentials();
          if (o.json) console.log(JSON.stringify({ revoked, removed_file: removed }));
          else
            console.log(
              revoked || removed
                ? `Logged out${removed ? ` (removed ${credentialsFile()})` : ''}.`
                : 'You were not logged in.',
            );
        },
        { needToken: false },
      ),
    );

  program
    .command('whoami')
    .description('show the user, account and plan of the saved login (or HOIST_TOKEN)')
    .option(...API_OPTION)
    .option('--json', 'print the result as JSON')
    .action(
      remoteAction<RemoteOptions, []>(async ({ client, apiUrl }, o) => {
        const me = await client.me();
        if (o.json) return console.log(JSON.stringify({ api_url: apiUrl, ...me }));
        const { user, account } = printableDeep(me);
        console.log(`${user.email} in account ${account.name} (plan ${account.plan}) at ${apiUrl}`);
      }),
    );
}

// E-mail and password: asked on a terminal (the password hidden), else read from stdin.
async function credentialsFromUser(
  email: string | undefined,
  passwordFile: string | undefined,
): Promise<{ email: string; password: string }> {
  if (process.stdin.isTTY && !passwordFile) {
    if (!email) email = await askVisible('E-mail: ');
    const [password] = await prompt(['Password: ']);
    if (!email || !password) throw usage('An e-mail address and a password are needed');
    return { email, password };
  }
  if (email || passwordFile) {
    if (!email) throw usage('Give --email with --password-file');
    return { email, password: await readPassword(passwordFile) };
  }
  let text = '';
  for await (const chunk of process.stdin) text += chunk;
  const [first, ...rest] = text.split(/\r?\n/);
  const password = rest.join('\n').replace(/\r?\n$/, '');
  if (!first?.trim() || !password)
    throw usage('Pipe the e-mail on the first line of stdin and the password on the second, or use --email');
  return { email: first.trim(), password };
}

async function askVisible(question: string): Promise<string> {
  const rl = createInterface({ input: process.stdin, output: process.stderr, terminal: true });
  try {
    return await new Promise<string>((resolve, reject) => {
      rl.on('SIGINT', () => reject(new CliError('canceled')));
      rl.question(question, (a) => resolve(a.trim()));
    });
  } finally {
    rl.close();
  }
}
