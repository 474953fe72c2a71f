// legs: db
import { RequestContext } from '@mikro-orm/core';
import pino from 'pino';
import { Writable } from 'node:stream';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildApi } from '../../../adapters/http/app.js';
import { redactUrl } from '../../../adapters/http/request-log.js';
import { ACCOUNT_SERVICE, type AccountService } from '../../../core/accounts/account-service.js';
import { testKernel } from '../../helpers/kernel.js';

test('redactUrl replaces the token of an upload URL or a deploy hook, under /api/v1 and /api alike', () => {
  assert.is(redactUrl('/api/v1/upload-sessions/abc_DEF-123/upload'), '/api/v1/upload-sessions/[redacted]/upload');
  assert.is(redactUrl('/api/upload-sessions/abc/upload?x=1'), '/api/upload-sessions/[redacted]/upload?x=1');
  assert.is(redactUrl('/api/v1/upload-sessions'), '/api/v1/upload-sessions');
  assert.is(redactUrl('/api/v1/projects/'), '/api/v1/projects/');
  assert.is(redactUrl('/api/v1/deploy-hooks/dh_secret-TOKEN'), '/api/v1/deploy-hooks/[redacted]');
  assert.is(redactUrl('/api/deploy-hooks/dh_secret?x=1'), '/api/deploy-hooks/[redacted]?x=1');
  assert.is(
    redactUrl('/api/v1/projects/p1/deploy-hooks/h1'),
    '/api/v1/projects/p1/deploy-hooks/h1',
    'ids are no secret',
  );
});

test("the request log shows neither an upload URL's token nor an Authorization header sent to it", async () => {
  const lines: string[] = [];
  const kernel = await testKernel();
  kernel.log = pino(
    { level: 'info' },
    new Writable({ write: (chunk, _enc, done) => (lines.push(String(chunk)), done()) }),
  );
  const app = await buildApi(kernel);
  try {
    const email = `log-${process.pid}@example.com`;
    await RequestContext.create(kernel.orm.em.fork(), () =>
      kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password: 'correct horse battery', plan: 'pro' }),
    );
    const login = await app.inject({
      method: 'POST',
      url: '/api/v1/auth/login',
      payload: { email, password: 'correct horse battery' },
    });
    const bearer = login.json().token as string;
    const created = await app.inject({
      method: 'POST',
      url: '/api/v1/upload-sessions',
      headers: { authorization: `Bearer ${bearer}` },
      payload: { name: 'logged' },
    });
    assert.is(created.statusCode, 201, created.body);
    const url = new URL(created.json().upload_url);
    const secret = url.pathname.split('/')[4];
    for (const path of [url.pathname, url.pathname.replace('/api/v1/', '/api/')]) {
      const res = await app.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'application/json', authorization: `Bearer ${bearer}` },
        payload: '{}',
      });
      assert.is(res.statusCode, 400, res.body);
    }
    const log = lines.join('');
    // The alias is logged as the path it runs as.
    assert.is(log.match(/"url":"\/api\/v1\/upload-sessions\/\[redacted\]\/upload"/g)?.length, 2, log);
    assert.not.ok(log.includes(secret), 'the token is not logged');
    assert.not.ok(log.includes(bearer), 'the bearer token is not logged');
  } finally {
    await app.close();
    await kernel.stop();
  }
});

test.run();
