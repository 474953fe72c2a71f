// legs: db
import { createHash } from 'node:crypto';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Operation } from '../../core/entities/operation.js';
import { GATE_FILE, waitForGate, workspaceGate, type WorkspaceGate } from '../helpers/gated-build.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
let other: { token: string; accountId: string };
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
  other = await h.login('free');
});
test.after(async () => h?.close());

const ISO = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;

/** POST with optional headers (h.post sends none). */
async function post(tok: string, path: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${h.api}${path}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tok}`, ...headers },
  });
  return { status: res.status, headers: res.headers, body: await res.json() };
}

async function project(tok: string, name: string, settings: Record<string, string> = {}) {
  const res = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, settings }),
  });
  const body = await res.json();
  assert.is(res.status, 201, JSON.stringify(body));
  return body as { id: string; url: string };
}

/** Uploads `zip` to the project; returns the 202 answer. */
async function upload(tok: string, projectId: string, zip: Buffer) {
  const res = await h.upload(tok, `/api/v1/projects/${projectId}/local-to-live`, zip);
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  return body;
}

/** The operation count of a project, straight from the database (to prove a refusal wrote nothing). */
const operationCount = (projectId: string) => h.running.kernel.orm.em.fork().count(Operation, { projectId });

// A build script: writes dist/index.html with `marker` and logs a warning. With a `gate` it carries
// the gate's id and (unless `wait` is false) waits for the gate's file in its workspace first.
const gateWait = `const t = setInterval(() => {
  if (fs.existsSync(${JSON.stringify(GATE_FILE)})) { clearInterval(t); finish(); }
}, 50);`;
const buildJs = (marker: string, gate?: WorkspaceGate, wait = !!gate) => `${gate ? `// ${gate.id}` : ''}
const fs = require('fs');
const finish = () => {
  fs.mkdirSync('dist', { recursive: true });
  fs.writeFileSync('dist/index.html', ${JSON.stringify(marker)});
  console.warn('warning: demo');
  console.log('built ${marker}');
};
${wait ? gateWait : 'finish();'}
`;

// Shared through the tests below, which run in order: one project with two versions and several releases.
let p: { id: string; url: string };
const base = () => `/api/v1/projects/${p.id}`;
let v1: { id: string; zip: Buffer; op: any };
let b1: any;
let d1: any;

test('after a real deploy, the version, build, deployment and release records show their fields', async () => {
  p = await project(token, 'records', { build_command: 'node build.js', output_directory: 'dist' });
  const zip = await zipOf({ 'build.js': buildJs('one'), 'src.txt': 'source' });
  const queued = await upload(token, p.id, zip);
  const op = await h.waitFor(token, queued.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  v1 = { id: queued.version.id, zip, op };

  const versions = await h.get(token, `${base()}/versions`);
  assert.is(versions.status, 200, JSON.stringify(versions.body));
  assert.is(versions.body.next_cursor, null);
  assert.is(versions.body.versions.length, 1);
  const v = versions.body.versions[0];
  assert.equal(
    { ...v, created_at: undefined, analysis: undefined },
    {
      id: v1.id,
      project_id: p.id,
      operation_id: op.id,
      filename: 'site.zip',
      size: zip.length,
      sha256: createHash('sha256').update(zip).digest('hex'),
      options: {},
      created_at: undefined,
      analysis: undefined,
      archive_removed_at: null,
    },
  );
  assert.match(v.created_at, ISO);
  assert.is(v.analysis.runtime, 'static');
  assert.is(v.analysis.build_command, 'node build.js');
  assert.is(v.analysis.output_dir, 'dist');
  assert.is(v.analysis.file_count, 2);
  assert.equal(v.analysis, op.stages.analyze.result, 'the same Analyze view as the operation shows');
  assert.equal((await h.get(token, `${base()}/versions/${v1.id}`)).body, v);

  const builds = await h.get(token, `${base()}/builds`);
  assert.is(builds.status, 200);
  assert.is(builds.body.builds.length, 1);
  b1 = builds.body.builds[0];
  assert.is(b1.id, op.build_log.build_id);
  assert.equal(
    [b1.project_id, b1.version_id, b1.operation_id, b1.status, b1.error],
    [p.id, v1.id, op.id, 'succeeded', null],
  );
  assert.match(b1.artifact.key, /^artifacts\/.+\.zip$/);
  assert.match(b1.artifact.sha256, /^[0-9a-f]{64}$/);
  assert.ok(b1.artifact.size > 0);
  assert.ok(b1.log.last_lines.includes('built one'), JSON.stringify(b1.log));
  assert.ok(b1.log.warnings >= 1 && b1.log.errors === 0 && b1.log.bytes > 0, JSON.stringify(b1.log));
  assert.is(b1.log_url, `${base()}/builds/${b1.id}/log`);
  assert.match(b1.created_at, ISO);
  assert.match(b1.finished_at, ISO);
  assert.equal([b1.artifact_removed_at, b1.log_removed_at], [null, null]);
  assert.equal((await h.get(token, `${base()}/builds/${b1.id}`)).body, b1);

  const deployments = await h.get(token, `${base()}/deployments`);
  assert.is(deployments.status, 200);
  assert.is(deployments.body.deployments.length, 1);
  d1 = deployments.body.deployments[0];
  assert.is(d1.id, op.result.deployment_id);
  assert.equal(
    [d1.project_id, d1.status, d1.url, d1.build_id, d1.version_id, d1.operation_id, d1.live, d1.error, d1.ended_at],
    [p.id, 'live', p.url, b1.id, v1.id, op.id, true, null, null],
  );
  assert.match(d1.live_at, ISO);
  assert.equal((await h.get(token, `${base()}/deployments/${d1.id}`)).body, d1);

  const releases = await h.get(token, `${base()}/releases`);
  // The release is its deployment record with its notes: target, provenance and whether it is promotable.
  const notes = {
    target: 'production',
    source: 'upload',
    started_by: releases.body.releases[0].started_by,
    archive_sha256: v.sha256,
    promotable: false,
  };
  assert.equal(releases.body, { releases: [{ ...d1, ...notes }], next_cursor: null });
  assert.match(notes.started_by.email, /@example\.com$/);
  const release = await h.get(token, `${base()}/releases/${d1.id}`);
  assert.is(release.status, 200, JSON.stringify(release.body));
  const r = release.body;
  assert.equal([r.id, r.project_id, r.operation_id], [d1.id, p.id, op.id]);
  assert.equal(
    { ...r.version, analysis: undefined },
    { id: v1.id, filename: 'site.zip', size: v.size, sha256: v.sha256, created_at: v.created_at, analysis: undefined },
  );
  assert.equal(r.version.analysis, {
    runtime: 'static',
    framework: null,
    output_dir: 'dist',
    file_count: 2,
    total_size: v.analysis.total_size,
    warnings: v.analysis.warnings,
  });
  assert.equal(r.build, {
    id: b1.id,
    status: 'succeeded',
    skipped: false,
    artifact: b1.artifact,
    log: b1.log,
    log_url: b1.log_url,
  });
  assert.equal(r.deployment, {
    id: d1.id,
    status: 'live',
    url: p.url,
    live: true,
    live_at: d1.live_at,
    ended_at: null,
  });
  const t = r.timings;
  assert.equal([t.uploaded_at, t.started_at, t.live_at], [v.created_at, op.created_at, d1.live_at]);
  const span = (s: any) => Date.parse(s.finished_at) - Date.parse(s.started_at);
  assert.equal(
    [t.analyze_ms, t.build_ms, t.deploy_ms],
    [span(op.stages.analyze), span(op.stages.build), span(op.stages.deploy)],
  );
  assert.ok(t.build_ms > 0 && t.analyze_ms >= 0 && t.deploy_ms >= 0, JSON.stringify(t));
  assert.is(t.total_ms, Date.parse(d1.live_at) - Date.parse(v.created_at));
  assert.ok(t.total_ms >= t.analyze_ms + t.build_ms + t.deploy_ms, JSON.stringify(t));
});

test('the full build log is served as text/plain', async () => {
  const res = await fetch(`${h.api}${base()}/builds/${b1.id}/log`, { headers: { authorization: `Bearer ${token}` } });
  assert.is(res.status, 200);
  assert.match(String(res.headers.get('content-type')), /^text\/plain/);
  const text = await res.text();
  const lines = text.trimEnd().split('\n');
  assert.is(lines[0], 'Building with builder-static (static)');
  for (const line of [
    '$ node build.js',
    'warning: demo',
    'built one',
    `Artifact ${b1.artifact.key} (${b1.artifact.size} bytes)`,
  ])
    assert.ok(lines.includes(line), `${line} in ${text}`);
  assert.is(Buffer.byteLength(text), b1.log.bytes, 'the whole log, as the summary counted it');
  assert.equal(lines.slice(-b1.log.last_lines.length), b1.log.last_lines);
});

test('a build retry starts a new operation for the same version that builds again and goes live', async () => {
  const res = await post(token, `${base()}/builds/${b1.id}/retry`);
  assert.is(res.status, 202, JSON.stringify(res.body));
  assert.is(res.body.action, 'build_retry_queued');
  assert.equal(res.body.project, { id: p.id, name: 'records', slug: 'records', url: p.url });
  assert.equal([res.body.operation.status, res.body.operation.progress], ['running', 5]);
  assert.match(res.body.next_step, new RegExp(`/api/v1/operations/${res.body.operation.id}`));
  assert.is.not(res.body.operation.id, v1.op.id);

  const op = await h.waitFor(token, res.body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.equal(
    [op.version_id, op.stages.analyze.status, op.stages.build.status, op.stages.deploy.status],
    [v1.id, 'succeeded', 'succeeded', 'succeeded'],
  );
  assert.is(
    (await h.get(token, `/api/v1/operations/${v1.op.id}`)).body.status,
    'succeeded',
    'the first operation is left as it was',
  );

  const builds = (await h.get(token, `${base()}/builds`)).body.builds;
  assert.is(builds.length, 2);
  assert.equal([builds[0].operation_id, builds[0].version_id, builds[0].status], [op.id, v1.id, 'succeeded']);
  assert.is(builds[0].id, op.build_log.build_id);
  assert.equal(builds[1], b1, 'the retried build record is unchanged');
  const deployments = (await h.get(token, `${base()}/deployments`)).body.deployments;
  assert.equal(
    deployments.map((d: any) => [d.status, d.live, d.build_id]),
    [
      ['live', true, builds[0].id],
      ['superseded', false, b1.id],
    ],
  );
  assert.match(deployments[1].ended_at, ISO);
  assert.is((await h.get(token, `${base()}/versions`)).body.versions.length, 1, 'no new version');
  assert.is((await h.site(hostOf(p.url))).body, 'one');
});

test('a deployment retry deploys the same build again without building: an earlier release comes back', async () => {
  const two = await upload(token, p.id, await zipOf({ 'build.js': buildJs('two') }));
  assert.is((await h.waitFor(token, two.operation.id)).status, 'succeeded');
  assert.is((await h.site(hostOf(p.url))).body, 'two');
  const buildsBefore = (await h.get(token, `${base()}/builds`)).body.builds;
  assert.is(buildsBefore.length, 3);

  const res = await post(token, `${base()}/deployments/${d1.id}/retry`);
  assert.is(res.status, 202, JSON.stringify(res.body));
  assert.is(res.body.action, 'deployment_retry_queued');
  assert.equal([res.body.operation.status, res.body.operation.progress], ['running', 70]);
  assert.is(res.body.project.url, p.url);

  const op = await h.waitFor(token, res.body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  // The spec has five statuses: stages a redeploy reuses are succeeded, flagged skipped.
  assert.equal(
    [op.version_id, op.stages.analyze.status, op.stages.build.status, op.stages.deploy.status],
    [v1.id, 'succeeded', 'succeeded', 'succeeded'],
  );
  assert.equal([op.stages.analyze.skipped, op.stages.build.skipped, op.stages.deploy.skipped], [true, true, false]);
  assert.match(op.stages.build.skip_reason, /^reused/);
  assert.equal(
    [op.stages.analyze.started_at, op.stages.build.started_at],
    [null, null],
    'neither Analyze nor Build ran',
  );
  assert.is(op.build_log.build_id, b1.id, 'the operation shows the build it shipped');
  assert.is(op.result.build_id, b1.id);

  assert.equal(
    (await h.get(token, `${base()}/builds`)).body.builds,
    buildsBefore,
    'no build ran: no new build record, none changed',
  );
  const d = (await h.get(token, `${base()}/deployments/${op.result.deployment_id}`)).body;
  assert.equal([d.status, d.live, d.build_id, d.version_id, d.operation_id], ['live', true, b1.id, v1.id, op.id]);
  assert.is((await h.site(hostOf(p.url))).body, 'one');

  const r = (await h.get(token, `${base()}/releases/${d.id}`)).body;
  assert.equal(r.build.artifact, b1.artifact, 'the same artifact');
  assert.equal([r.timings.analyze_ms, r.timings.build_ms], [null, null]);
  assert.type(r.timings.deploy_ms, 'number');
  assert.is(r.version.id, v1.id);
});

test('lists page with cursor and limit until next_cursor is null, newest first', async () => {
  const expected: Record<string, number> = { versions: 2, builds: 3, deployments: 4, releases: 4 };
  for (const [kind, count] of Object.entries(expected)) {
    const all = (await h.get(token, `${base()}/${kind}?limit=100`)).body;
    assert.is(all[kind].length, count, kind);
    assert.is(all.next_cursor, null);
    const created = all[kind].map((x: any) => x.created_at);
    assert.equal(created, [...created].sort().reverse(), `${kind} newest first`);
    for (const limit of [1, 2, 3]) {
      const seen: string[] = [];
      let cursor: string | null = null;
      let pages = 0;
      do {
        const q: string = `?limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
        const page = await h.get(token, `${base()}/${kind}${q}`);
        assert.is(page.status, 200, JSON.stringify(page.body));
        assert.ok(page.body[kind].length <= limit);
        seen.push(...page.body[kind].map((x: any) => x.id));
        cursor = page.body.next_cursor;
        pages++;
      } while (cursor);
      assert.equal(
        seen,
        all[kind].map((x: any) => x.id),
        `${kind}, limit ${limit}`,
      );
      assert.is(pages, Math.ceil(count / limit), `${kind}, limit ${limit}: pages`);
    }
  }
  const releases = (await h.get(token, `${base()}/releases`)).body.releases;
  assert.equal(
    releases.map((r: any) => r.live),
    [true, false, false, false],
  );
  assert.equal(
    releases.map((r: any) => r.status),
    ['live', 'superseded', 'superseded', 'superseded'],
  );
  assert.equal((await h.get(token, `${base()}/versions?limit=1`)).body.versions.length, 1);
});

test('a bad cursor or limit is invalid_request', async () => {
  const cases: [string, string][] = [
    ['cursor=nonsense', 'cursor'],
    [`cursor=${Buffer.from(JSON.stringify(['2030-01-01', 'x'])).toString('base64url')}`, 'cursor'],
    ['cursor=', 'cursor'],
    ['limit=0', 'limit'],
    ['limit=101', 'limit'],
    ['limit=abc', 'limit'],
    ['limit=1.5', 'limit'],
  ];
  for (const kind of ['versions', 'builds', 'deployments', 'releases']) {
    for (const [q, field] of cases) {
      const res = await h.get(token, `${base()}/${kind}?${q}`);
      assert.is(res.status, 400, `${kind}?${q}: ${JSON.stringify(res.body)}`);
      assert.is(res.body.error.code, 'invalid_request');
      assert.is(res.body.error.details.field, field, `${kind}?${q}`);
    }
  }
});

test(
  'retries are refused with 409 deployment_in_progress while another chain of the ' +
    'project runs; nothing is written',
  async () => {
    const gate = workspaceGate(h.dataDir, 'build.js');
    const held = await upload(token, p.id, await zipOf({ 'build.js': buildJs('three', gate) }));
    await h.waitFor(token, held.operation.id, (o) => o.stages.build.status === 'running');
    const running = (await h.get(token, `${base()}/builds`)).body.builds[0];
    assert.equal(
      [running.operation_id, running.status, running.artifact, running.finished_at],
      [held.operation.id, 'running', null, null],
    );
    const noLog = await h.get(token, `${base()}/builds/${running.id}/log`);
    assert.is(noLog.status, 404, 'no log is stored before the build ends');
    assert.is(noLog.body.error.code, 'not_found');

    const ops = await operationCount(p.id);
    for (const path of [`builds/${b1.id}/retry`, `deployments/${d1.id}/retry`, `builds/${running.id}/retry`]) {
      const res = await post(token, `${base()}/${path}`);
      assert.is(res.status, 409, `${path}: ${JSON.stringify(res.body)}`);
      assert.is(res.body.error.code, 'deployment_in_progress');
      assert.is(res.body.error.details.operation_id, held.operation.id);
    }
    assert.is(await operationCount(p.id), ops, 'no operation was written');

    gate.open();
    assert.is((await h.waitFor(token, held.operation.id)).status, 'succeeded');
    gate.close();
    const log = await fetch(`${h.api}${base()}/builds/${running.id}/log`, {
      headers: { authorization: `Bearer ${token}` },
    });
    assert.is(log.status, 200);
    assert.match(await log.text(), /built three/);
  },
);

test('a failed build is retried by a new operation once its cause is fixed', async () => {
  // The fix is the gate's file, which the gate writes into the workspaces of builds started after it opens.
  const fix = workspaceGate(h.dataDir, 'build.js');
  const q = await project(token, 'fix-me', {
    build_command: `${waitForGate()} test -f ${GATE_FILE} && node build.js`,
    output_directory: 'dist',
  });
  const queued = await upload(token, q.id, await zipOf({ 'build.js': buildJs('fixed', fix, false) }));
  const failed = await h.waitFor(token, queued.operation.id);
  assert.is(failed.status, 'failed');
  const [build] = (await h.get(token, `/api/v1/projects/${q.id}/builds`)).body.builds;
  assert.equal([build.status, build.error.code, build.artifact], ['failed', 'build_failed', null]);
  assert.match(build.finished_at, ISO);
  const log = await fetch(`${h.api}${build.log_url}`, { headers: { authorization: `Bearer ${token}` } });
  assert.is(log.status, 200, 'a failed build stores its log too');
  assert.match(await log.text(), /Build failed/);
  assert.equal((await h.get(token, `/api/v1/projects/${q.id}/deployments`)).body, {
    deployments: [],
    next_cursor: null,
  });
  assert.equal((await h.get(token, `/api/v1/projects/${q.id}/releases`)).body, { releases: [], next_cursor: null });

  fix.open();
  const retried = await post(token, `/api/v1/projects/${q.id}/builds/${build.id}/retry`);
  assert.is(retried.status, 202, JSON.stringify(retried.body));
  const op = await h.waitFor(token, retried.body.operation.id);
  fix.close();
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  assert.is(
    (await h.get(token, `/api/v1/operations/${failed.id}`)).body.status,
    'failed',
    'the failed operation stays failed',
  );
  const builds = (await h.get(token, `/api/v1/projects/${q.id}/builds`)).body.builds;
  assert.equal(
    builds.map((b: any) => b.status),
    ['succeeded', 'failed'],
  );
  assert.is((await h.site(hostOf(q.url))).body, 'fixed');
});

test('an Idempotency-Key makes a retry safe to repeat', async () => {
  const key = { 'idempotency-key': `retry-${Date.now()}` };
  const first = await post(token, `${base()}/deployments/${d1.id}/retry`, key);
  assert.is(first.status, 202, JSON.stringify(first.body));
  const ops = await operationCount(p.id);
  const again = await post(token, `${base()}/deployments/${d1.id}/retry`, key);
  assert.is(again.status, 202);
  assert.equal(again.body, first.body);
  assert.is(again.headers.get('idempotent-replayed'), 'true');
  const reused = await post(token, `${base()}/builds/${b1.id}/retry`, key);
  assert.is(reused.status, 422, JSON.stringify(reused.body));
  assert.is(reused.body.error.code, 'idempotency_key_reused');
  assert.is(await operationCount(p.id), ops, 'neither repeat started anything');
  assert.is((await h.waitFor(token, first.body.operation.id)).status, 'succeeded');
});

test("retries count towards the plan's deployments_per_day; beyond it they are refused and write nothing", async () => {
  const mine = await project(other.token, 'quota');
  const queued = await upload(other.token, mine.id, await zipOf({ 'index.html': 'quota' }));
  const op = await h.waitFor(other.token, queued.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  // The free plan allows 50 a day: record 49 more finished ones, as if made earlier today, and one of yesterday,
  // which does not count.
  const em = h.running.kernel.orm.em.fork();
  for (let i = 0; i < 50; i++) {
    const at = new Date(Date.now() - (i === 49 ? 25 * 3600 * 1000 : 0));
    em.persist(
      Object.assign(new Operation(), {
        accountId: other.accountId,
        projectId: mine.id,
        kind: 'deploy',
        status: 'succeeded',
        progress: 100,
        createdAt: at,
        updatedAt: at,
      }),
    );
  }
  await em.flush();
  const ops = await operationCount(mine.id);
  for (const path of [`builds/${op.result.build_id}/retry`, `deployments/${op.result.deployment_id}/retry`]) {
    const res = await post(other.token, `/api/v1/projects/${mine.id}/${path}`);
    assert.is(res.status, 403, `${path}: ${JSON.stringify(res.body)}`);
    assert.is(res.body.error.code, 'plan_restricted');
    assert.equal(
      [res.body.error.feature, res.body.error.plan, res.body.error.limit, res.body.error.usage],
      ['deployments_per_day', 'free', 50, 50],
    );
  }
  assert.is(await operationCount(mine.id), ops);
});

test("every route answers 404 for another account's project or records, and writes nothing", async () => {
  const own = await project(other.token, 'nosy');
  const release = d1.id;
  const records = { version: v1.id, build: b1.id, deployment: d1.id };
  const paths = (projectId: string) =>
    [
      ['get', `/api/v1/projects/${projectId}/versions`],
      ['get', `/api/v1/projects/${projectId}/versions/${records.version}`],
      ['get', `/api/v1/projects/${projectId}/builds`],
      ['get', `/api/v1/projects/${projectId}/builds/${records.build}`],
      ['get', `/api/v1/projects/${projectId}/builds/${records.build}/log`],
      ['post', `/api/v1/projects/${projectId}/builds/${records.build}/retry`],
      ['get', `/api/v1/projects/${projectId}/deployments`],
      ['get', `/api/v1/projects/${projectId}/deployments/${records.deployment}`],
      ['post', `/api/v1/projects/${projectId}/deployments/${records.deployment}/retry`],
      ['get', `/api/v1/projects/${projectId}/releases`],
      ['get', `/api/v1/projects/${projectId}/releases/${release}`],
    ] as const;
  const opsA = await operationCount(p.id);
  const opsB = await operationCount(own.id);
  // Their project with my records; my records under their project (lists of their own project are theirs, so skipped).
  const tries = [
    ...paths(p.id),
    ...paths(own.id).filter(([, path]) => !/(versions|builds|deployments|releases)$/.test(path)),
  ];
  assert.is(tries.length, 11 + 7);
  for (const [method, path] of tries) {
    const res = method === 'get' ? await h.get(other.token, path) : await post(other.token, path);
    assert.is(res.status, 404, `${method} ${path}: ${JSON.stringify(res.body)}`);
    assert.is(res.body.error.code, 'not_found');
  }
  assert.is(await operationCount(p.id), opsA);
  assert.is(await operationCount(own.id), opsB);
  // Without a token, 401.
  const anon = await fetch(`${h.api}${base()}/versions`);
  assert.is(anon.status, 401);
});

test('malformed ids answer 404 exactly like missing ones', async () => {
  const missing = '00000000-0000-4000-8000-000000000000';
  const bad = ['not-a-uuid', '123', b1.id.toUpperCase(), `${b1.id}x`, missing];
  for (const id of bad) {
    for (const path of ['versions', 'builds', 'deployments', 'releases']) {
      const res = await h.get(token, `/api/v1/projects/${encodeURIComponent(id)}/${path}`);
      assert.is(res.status, 404, `${id}/${path}`);
      assert.equal([res.body.error.code, res.body.error.message], ['not_found', 'Project not found']);
    }
  }
  const ops = await operationCount(p.id);
  const routes = [
    ['get', 'versions/ID', 'Version'],
    ['get', 'builds/ID', 'Build'],
    ['get', 'builds/ID/log', 'Build'],
    ['post', 'builds/ID/retry', 'Build'],
    ['get', 'deployments/ID', 'Deployment'],
    ['post', 'deployments/ID/retry', 'Deployment'],
    ['get', 'releases/ID', 'Release'],
  ] as const;
  for (const id of bad) {
    for (const [method, path, what] of routes) {
      const url = `${base()}/${path.replace('ID', encodeURIComponent(id))}`;
      const res = method === 'get' ? await h.get(token, url) : await post(token, url);
      assert.is(res.status, 404, `${method} ${url}`);
      assert.equal(
        [res.body.error.code, res.body.error.message],
        ['not_found', `${what} not found`],
        `${method} ${url}`,
      );
    }
  }
  // A record of another kind is not found either: a build id is no version, and a version id no release.
  assert.is((await h.get(token, `${base()}/versions/${b1.id}`)).status, 404);
  assert.is((await h.get(token, `${base()}/releases/${v1.id}`)).status, 404);
  assert.is(await operationCount(p.id), ops);
});

test.run();
