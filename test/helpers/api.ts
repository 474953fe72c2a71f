import { RequestContext } from '@mikro-orm/core';
import type { FastifyInstance } from 'fastify';
import type { HoistConfig } from '../../config/schema.js';
import { buildApi } from '../../adapters/http/app.js';
import type { Kernel } from '../../adapters/kernel.js';
import { ACCOUNT_SERVICE, type AccountService } from '../../core/accounts/account-service.js';
import { testKernel } from './kernel.js';

export interface TestApi {
  kernel: Kernel;
  app: FastifyInstance;
  /** Creates an account (plan `free` unless given) and logs in (from `address`, else 127.0.0.1); its token and ids. */
  account(opts?: { email?: string; password?: string; plan?: string; address?: string }): Promise<TestAccount>;
  /** Runs `fn` inside a database request context (for direct service or entity access). */
  inContext<T>(fn: () => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

export interface TestAccount {
  token: string;
  userId: string;
  accountId: string;
  email: string;
  password: string;
  /** `{authorization: 'Bearer <token>'}` for app.inject. */
  auth: { authorization: string };
}

let counter = 0;

/** A kernel plus the REST app (not listening; use app.inject). */
export async function testApi(overrides: Partial<HoistConfig> = {}): Promise<TestApi> {
  const kernel = await testKernel(overrides);
  const app = await buildApi(kernel);
  await app.ready();
  const inContext = <T>(fn: () => Promise<T>) => RequestContext.create(kernel.orm.em.fork(), fn);
  return {
    kernel,
    app,
    inContext,
    async account(opts = {}) {
      const email = opts.email ?? `user${++counter}-${process.pid}@example.com`;
      const password = opts.password ?? 'correct horse battery';
      const { account, user } = await inContext(() =>
        kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password, plan: opts.plan }),
      );
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/auth/login',
        payload: { email, password },
        ...(opts.address && { remoteAddress: opts.address }),
      });
      if (res.statusCode !== 200) throw new Error(`login failed: ${res.body}`);
      const token = res.json().token as string;
      return {
        token,
        userId: user.id,
        accountId: account.id,
        email,
        password,
        auth: { authorization: `Bearer ${token}` },
      };
    },
    async close() {
      await app.close();
      await kernel.stop();
    },
  };
}
