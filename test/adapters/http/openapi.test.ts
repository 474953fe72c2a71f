// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { compilePendingSchemas } from '../../../adapters/http/lazy-schemas.js';
import { testApi, type TestApi } from '../../helpers/api.js';

let t: TestApi;
let doc: any;
test.before(async () => {
  t = await testApi();
  const res = await t.app.inject({ method: 'GET', url: '/api/v1/openapi.json' });
  assert.is(res.statusCode, 200);
  doc = res.json();
});
test.after(async () => t?.close());

const expected: [string, string][] = [
  ['post', '/api/v1/auth/login'],
  ['post', '/api/v1/auth/register'],
  ['post', '/api/v1/auth/logout'],
  ['get', '/api/v1/auth/sessions'],
  ['post', '/api/v1/access-requests'],
  ['get', '/api/v1/me'],
  ['get', '/api/v1/billing/entitlements'],
  ['get', '/api/v1/projects/'],
  ['post', '/api/v1/projects/'],
  ['get', '/api/v1/projects/{projectID}/'],
  ['patch', '/api/v1/projects/{projectID}/'],
  ['delete', '/api/v1/projects/{projectID}/'],
  ['post', '/api/v1/local-to-live'],
  ['post', '/api/v1/projects/{projectID}/local-to-live'],
  ['get', '/api/v1/operations/{operationID}'],
  ['post', '/api/v1/operations/{operationID}/cancel'],
  ['post', '/api/v1/operations/{operationID}/retry'],
  ['post', '/api/v1/upload-sessions'],
  ['post', '/api/v1/upload-sessions/{token}/upload'],
  ['patch', '/api/v1/upload-sessions/{token}/upload'],
  ['head', '/api/v1/upload-sessions/{token}/upload'],
];

test('the document is OpenAPI 3.1 and lists the routes of the spec', () => {
  assert.is(doc.openapi, '3.1.0');
  for (const [method, path] of expected)
    assert.ok(doc.paths[path]?.[method], `${method.toUpperCase()} ${path} is documented`);
});

test('every operation has a summary, a tag, a success and its error responses in the error body', () => {
  for (const [path, ops] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(ops)) {
      const where = `${method.toUpperCase()} ${path}`;
      assert.ok(op.summary, `${where} has a summary`);
      assert.ok(op.tags?.length, `${where} has a tag`);
      const codes = Object.keys(op.responses ?? {});
      // Registration is disabled: its only answer is 403.
      if (!path.endsWith('/auth/register'))
        assert.ok(
          codes.some((c) => c.startsWith('2')),
          `${where} documents its success`,
        );
      const errors = codes.filter((c) => /^[45]/.test(c));
      assert.ok(errors.length > 0, `${where} documents its errors`);
      if (op.security?.length) assert.ok(errors.includes('401'), `${where} is protected and documents 401`);
    }
  }
});

test('every route schema compiles (they compile on first use, so a broken one would wait for its request)', () => {
  assert.ok(compilePendingSchemas() > 100);
  assert.is(compilePendingSchemas(), 0);
});

test('the docs page is served', async () => {
  const res = await t.app.inject({ method: 'GET', url: '/docs/' });
  assert.is(res.statusCode, 200);
  assert.match(res.body, /swagger/i);
});

test.run();
