// legs: db
// The spec's fine print on Local-to-Live and operations, over real sockets with no worker (so a
// started chain stays running): the transport-choice part, "deployment in progress" decided before
// plan quotas and before the ZIP is read, and stages done without running shown with a spec status.
import { RequestContext } from '@mikro-orm/core';
import type { FastifyInstance } from 'fastify';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { buildApi } from '../../../adapters/http/app.js';
import type { Kernel } from '../../../adapters/kernel.js';
import { ACCOUNT_SERVICE, type AccountService } from '../../../core/accounts/account-service.js';
import { DEPLOYMENT_SERVICE, type DeploymentService } from '../../../core/deployments/deployment-service.js';
import { Build } from '../../../core/entities/build.js';
import { Version } from '../../../core/entities/version.js';
import { zipOf } from '../../helpers/live.js';
import { footprint, Form, rawRequest, type RawResponse } from '../../helpers/raw-http.js';
import { testKernel } from '../../helpers/kernel.js';

let kernel: Kernel;
let app: FastifyInstance;
let api: string;
let zip: Buffer;

test.before(async () => {
  kernel = await testKernel();
  app = await buildApi(kernel);
  api = await app.listen({ port: 0, host: '127.0.0.1' });
  zip = await zipOf({ 'index.html': '<h1>fine print</h1>' });
});
test.after(async () => {
  await app?.close();
  await kernel?.stop();
});

let n = 0;
/** A new account on `plan`, logged in: its token and id. */
async function account(plan: string): Promise<{ token: string; accountId: string }> {
  const email = `spec${++n}-${process.pid}@example.com`;
  const { account } = await RequestContext.create(kernel.orm.em.fork(), () =>
    kernel.get<AccountService>(ACCOUNT_SERVICE).create({ email, password: 'correct horse battery', plan }),
  );
  const res = await fetch(`${api}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password: 'correct horse battery' }),
  });
  return { token: (await res.json()).token, accountId: account.id };
}

async function call(token: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${api}/api/v1${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : null };
}

/** A whole multipart upload of `parts` ([name, value, filename?]) to `path`. */
async function upload(
  token: string,
  path: string,
  parts: [string, Buffer | string, string?][],
  headers: Record<string, string> = {},
) {
  const form = new Form();
  const res = await fetch(`${api}/api/v1${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': form.contentType, ...headers },
    body: new Uint8Array(form.body(parts)),
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

/**
 * Sends the head of an upload declaring a 5 MB body and only `start` of it (the parts before the
 * ZIP, the head of the ZIP part and a few bytes of it): the answer must come without the rest.
 */
async function partial(token: string, path: string, start: Buffer, form: Form): Promise<RawResponse> {
  const conn = await rawRequest(api, 'POST', `/api/v1${path}`, {
    authorization: `Bearer ${token}`,
    'content-type': form.contentType,
    'content-length': 5_000_000,
  });
  await conn.write(start);
  const res = await Promise.race([
    conn.response,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error('no answer before the ZIP was sent')), 5000)),
  ]);
  conn.socket.destroy();
  return res;
}

const zipStart = (form: Form) => Buffer.concat([form.head('file', 'site.zip'), zip.subarray(0, 10)]);

async function settled(before: Awaited<ReturnType<typeof footprint>>) {
  await new Promise((r) => setTimeout(r, 150));
  assert.equal(await footprint(kernel), before, 'nothing stored, no version, operation or project');
}

test(
  'the transport part: proxied_multipart is accepted before or after the file, at ' +
    'account and project level; without it is the same request',
  async () => {
    const { token } = await account('team');
    const first = await upload(token, '/local-to-live', [
      ['name', 'carried'],
      ['transport', 'proxied_multipart'],
      ['file', zip, 'site.zip'],
    ]);
    assert.is(first.status, 202, JSON.stringify(first.body));
    await call(token, 'POST', `/operations/${first.body.operation.id}/cancel`);
    const after = await upload(token, `/projects/${first.body.project.id}/local-to-live`, [
      ['file', zip, 'site.zip'],
      ['transport', 'proxied_multipart'],
    ]);
    assert.is(after.status, 202, JSON.stringify(after.body));

    // With an Idempotency-Key, the transport named or left out is the same request: the first answer is replayed.
    const key = `transport-${Date.now()}`;
    const keyed = await upload(
      token,
      '/local-to-live',
      [
        ['name', 'keyed'],
        ['transport', 'proxied_multipart'],
        ['file', zip, 'site.zip'],
      ],
      { 'idempotency-key': key },
    );
    assert.is(keyed.status, 202, JSON.stringify(keyed.body));
    const before = await footprint(kernel);
    const again = await upload(
      token,
      '/local-to-live',
      [
        ['name', 'keyed'],
        ['file', zip, 'site.zip'],
      ],
      { 'idempotency-key': key },
    );
    assert.is(again.status, 202, JSON.stringify(again.body));
    assert.is(again.headers.get('idempotent-replayed'), 'true');
    assert.is(again.body.operation.id, keyed.body.operation.id, "replayed, though that project's chain still runs");
    await settled(before);
  },
);

test(
  'transport direct_storage_resumable → 400 pointing to upload sessions, before the ' +
    'ZIP is read; an unknown transport → 400; nothing kept',
  async () => {
    const { token } = await account('pro');
    const before = await footprint(kernel);
    const form = new Form();
    const res = await partial(
      token,
      '/local-to-live',
      Buffer.concat([
        form.part('name', 'resumable'),
        form.part('transport', 'direct_storage_resumable'),
        zipStart(form),
      ]),
      form,
    );
    assert.is(res.status, 400, JSON.stringify(res));
    assert.is(res.body.error.code, 'invalid_request');
    assert.is(res.body.error.details.field, 'transport');
    assert.match(res.body.error.message, /POST \/api\/v1\/upload-sessions/);
    assert.match(res.body.error.message, /"transport": "direct_storage_resumable"/);
    await settled(before);

    for (const [path, parts] of [
      [
        '/local-to-live',
        [
          ['name', 'pigeon'],
          ['transport', 'carrier-pigeon'],
          ['file', zip, 'site.zip'],
        ],
      ],
      [
        '/local-to-live',
        [
          ['name', 'late'],
          ['file', zip, 'site.zip'],
          ['transport', 'direct_storage_resumable'],
        ],
      ],
    ] as [string, [string, string | Buffer, string?][]][]) {
      const r = await upload(token, path, parts);
      assert.is(r.status, 400, JSON.stringify(r.body));
      assert.is(r.body.error.details.field, 'transport');
    }
    await settled(before);
  },
);

test(
  'Free plan: a second deployment while the first chains → 409 ' +
    'deployment_in_progress (not 403), decided before the ZIP is read',
  async () => {
    const { token } = await account('free');
    const first = await upload(token, '/local-to-live', [
      ['name', 'chained'],
      ['file', zip, 'site.zip'],
    ]);
    assert.is(first.status, 202, JSON.stringify(first.body));
    const running = first.body.operation.id;
    const projectId = first.body.project.id;
    const before = await footprint(kernel);

    const inProgress = (res: { status: number; body: any }) => {
      assert.is(res.status, 409, JSON.stringify(res.body));
      assert.is(res.body.error.code, 'deployment_in_progress');
      assert.is(res.body.error.details.operation_id, running);
      assert.match(res.body.error.message, new RegExp(running));
    };
    // Project level: known from the route, refused with nothing of the body sent but its start.
    let form = new Form();
    inProgress(await partial(token, `/projects/${projectId}/local-to-live`, zipStart(form), form));
    // Account level, the name part first.
    form = new Form();
    inProgress(
      await partial(token, '/local-to-live', Buffer.concat([form.part('name', 'chained'), zipStart(form)]), form),
    );
    // Account level, the name after the file: decided once read, still 409 and not the plan's 403.
    inProgress(
      await upload(token, '/local-to-live', [
        ['file', zip, 'site.zip'],
        ['name', 'chained'],
      ]),
    );
    await settled(before);

    // Another project of the account is held by the plan's concurrent_builds, as before.
    const other = await upload(token, '/local-to-live', [
      ['name', 'second-project'],
      ['file', zip, 'site.zip'],
    ]);
    assert.is(other.status, 403, JSON.stringify(other.body));
    assert.is(other.body.error.code, 'plan_restricted');
    assert.is(other.body.error.feature, 'concurrent_builds');

    // An upload URL of the project is refused before it is spent; it works once the chain ends.
    const session = await call(token, 'POST', '/upload-sessions', { project_id: projectId, filename: 'site.zip' });
    assert.is(session.status, 201, JSON.stringify(session.body));
    const url = session.body.upload_url;
    const sendTo = async () => {
      const f = new Form();
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': f.contentType },
        body: new Uint8Array(f.body([['file', zip, 'site.zip']])),
      });
      return { status: res.status, body: await res.json() };
    };
    inProgress(await sendTo());
    await settled(before);
    assert.is((await call(token, 'POST', `/operations/${running}/cancel`)).status, 202);
    const through = await sendTo();
    assert.is(through.status, 202, JSON.stringify(through.body));

    // A retry of the canceled operation while the new chain runs: 409 too, not the plan's 403.
    const retry = await call(token, 'POST', `/operations/${running}/retry`);
    assert.is(retry.status, 409, JSON.stringify(retry.body));
    assert.is(retry.body.error.code, 'deployment_in_progress');
    assert.is(retry.body.error.details.operation_id, through.body.operation.id);
  },
);

test(
  'stages done without running are succeeded with skipped true and a reason; a ' +
    'skip_build build record is succeeded with skipped true',
  async () => {
    const { token, accountId } = await account('team');
    const res = await upload(token, '/local-to-live', [
      ['name', 'as-is'],
      ['skip_build', 'true'],
      ['file', zip, 'site.zip'],
    ]);
    assert.is(res.status, 202, JSON.stringify(res.body));
    const op = (await call(token, 'GET', `/operations/${res.body.operation.id}`)).body;
    assert.is(op.stages.build.status, 'succeeded');
    assert.is(op.stages.build.skipped, true);
    assert.match(op.stages.build.skip_reason, /^skip_build/);
    assert.is(op.stages.build.progress, 100);
    assert.is(op.stages.analyze.status, 'queued');
    assert.is(op.stages.analyze.skipped, false);
    assert.is(op.stages.analyze.skip_reason, null);
    for (const name of ['analyze', 'build', 'deploy'])
      assert.ok(['queued', 'running', 'succeeded', 'failed', 'canceled'].includes(op.stages[name].status), name);
    assert.is(op.current_stage, 'analyze');
    await call(token, 'POST', `/operations/${res.body.operation.id}/cancel`);

    // A build packed as is (stored `skipped`), and a redeploy of it: Analyze and Build reused.
    const projectId = res.body.project.id;
    const em = kernel.orm.em.fork();
    const version = await em.findOneOrFail(Version, { operationId: res.body.operation.id });
    const build = Object.assign(new Build(), {
      accountId,
      projectId,
      versionId: version.id,
      operationId: res.body.operation.id,
      status: 'skipped',
      artifactKey: 'artifacts/none.zip',
      artifactSha256: 'a'.repeat(64),
      artifactSize: 1,
      finishedAt: new Date(),
      createdAt: new Date(),
    });
    await em.persistAndFlush(build);
    const builds = (await call(token, 'GET', `/projects/${projectId}/builds`)).body;
    assert.ok(builds.builds, JSON.stringify(builds));
    const shown = builds.builds.find((b: { id: string }) => b.id === build.id);
    assert.is(shown.status, 'succeeded', JSON.stringify(shown));
    assert.is(shown.skipped, true);
    assert.is((await call(token, 'GET', `/projects/${projectId}/builds/${build.id}`)).body.status, 'succeeded');

    const redeploy = await RequestContext.create(kernel.orm.em.fork(), () =>
      kernel.get<DeploymentService>(DEPLOYMENT_SERVICE).redeploy(accountId, build.id),
    );
    const view = (await call(token, 'GET', `/operations/${redeploy.id}`)).body;
    for (const name of ['analyze', 'build']) {
      assert.equal(
        [view.stages[name].status, view.stages[name].skipped, view.stages[name].progress],
        ['succeeded', true, 100],
        name,
      );
      assert.match(
        view.stages[name].skip_reason,
        new RegExp(`^reused: this deployment ships the existing build ${build.id}`),
      );
    }
    assert.equal([view.stages.deploy.status, view.stages.deploy.skipped], ['queued', false]);
    assert.is(view.progress, 70);
  },
);

test(
  'the OpenAPI document: transport documented on both Local-to-Live routes, stage ' +
    "statuses are the spec's five, and draft is served (unlisted)",
  async () => {
    const doc = await (await fetch(`${api}/api/v1/openapi.json`)).json();
    for (const path of ['/api/v1/local-to-live', '/api/v1/projects/{projectID}/local-to-live']) {
      assert.match(
        doc.paths[path].post.description,
        /`transport`.*`proxied_multipart`.*`direct_storage_resumable` → 400/s,
        path,
      );
      assert.match(doc.paths[path].post.description, /deployment_in_progress.*before the plan's quotas/s, path);
    }
    const text = JSON.stringify(doc);
    assert.not.match(text, /not served\)/, 'no "draft (default, not served)"');
    assert.match(
      text,
      /draft \(the default: served at its URL, unlisted — every answer carries X-Robots-Tag: noindex\)/,
    );
    const stage = JSON.stringify(doc.paths['/api/v1/operations/{operationID}'].get.responses['200']);
    assert.match(stage, /"enum":\["queued","running","succeeded","failed","canceled"\]/);
    assert.not.match(stage, /"skipped"\]/);
  },
);

test.run();
