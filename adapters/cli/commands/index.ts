import type { Command } from 'commander';
import start from './start.js';
import accounts from './accounts.js';
import mail from './mail.js';
import accessRequests from './access-requests.js';
import tokens from './tokens.js';
import keys from './keys.js';
import session from './session.js';
import deploy from './deploy.js';
import projects from './projects.js';
import releases from './releases.js';
import logs from './logs.js';
import env from './env.js';
import operations from './operations.js';
import secrets from './secrets.js';
import webhooks from './webhooks.js';
import deployHooks from './deploy-hooks.js';
import domains from './domains.js';
import members from './members.js';
import usage from './usage.js';

/** Every CLI command group; each adds its commands to the program. */
export const commands: ((program: Command) => void)[] = [
  start,
  accounts,
  mail,
  accessRequests,
  tokens,
  keys,
  session,
  deploy,
  projects,
  releases,
  logs,
  env,
  webhooks,
  deployHooks,
  domains,
  members,
  usage,
  operations,
  secrets,
];
