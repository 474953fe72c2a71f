import { RequestContext } from '@mikro-orm/core';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ACCOUNT_SERVICE, type AccountService } from '../../core/accounts/account-service.js';
import { finished, hoistBin, root, type CliResult } from './cli.js';
import type { LiveHoist } from './live.js';

/** The `hoist` client commands of one user, talking to a live Hoist over its REST API only. */
export interface RemoteCli {
  /** Environment of every run: no HOIST_* of this process, a config folder of its own, the API URL. */
  env: NodeJS.ProcessEnv;
  configHome: string;
  /** Runs `hoist ...args` with `input` on stdin; `env` adds to the environment. */
  run(args: string[], input?: string, env?: NodeJS.ProcessEnv): Promise<CliResult>;
  /** Starts `hoist ...args` and leaves it running (stdin, stdout and stderr are pipes). */
  spawn(args: string[], env?: NodeJS.ProcessEnv): ChildProcess;
}

let n = 0;

/** A CLI user of `h` with its own config folder (so its own saved login). */
export function remoteCli(h: LiveHoist): RemoteCli {
  const configHome = mkdtempSync(join(tmpdir(), 'hoist-cli-config-'));
  const env: NodeJS.ProcessEnv = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !k.startsWith('HOIST_') && k !== 'NO_COLOR'),
  );
  Object.assign(env, { XDG_CONFIG_HOME: configHome, HOIST_API_URL: h.api });
  const start = (args: string[], extra: NodeJS.ProcessEnv = {}) =>
    spawn(process.execPath, [hoistBin, ...args], {
      cwd: root,
      env: { ...env, ...extra },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
  return {
    env,
    configHome,
    spawn: start,
    run: (args, input, extra) => finished(start(args, extra), input),
  };
}

/** Creates an account on `plan` with a password; returns its e-mail and password. */
export async function accountWithPassword(h: LiveHoist, plan = 'pro'): Promise<{ email: string; password: string }> {
  const kernel = h.running.kernel;
  const email = `cli${++n}-${process.pid}@example.com`;
  const password = 'correct horse battery staple';
  await RequestContext.create(kernel.orm.em.fork(), () =>
    kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password, plan }),
  );
  return { email, password };
}
