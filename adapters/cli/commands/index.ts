import type { Command } from 'commander';
import start from './start.js';
import accounts from './accounts.js';
import mail from './mail.js';
import accessRequests from './access-requests.js';
import tokens from './tokens.js';
import keys from './keys.js';

/** Every CLI command group; each adds its commands to the program. */
export const commands: ((program: Command) => void)[] = [start, accounts, mail, accessRequests, tokens, keys];
