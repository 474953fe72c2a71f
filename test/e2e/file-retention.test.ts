// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FileRetention } from '../../core/deployments/file-retention.js';
import { Operation } from '../../core/entities/operation.js';
import { Version } from '../../core/entities/version.js';
import { STORAGE, type Storage } from '../../core/ports/storage.js';
import { workspaceGate } from '../helpers/gated-build.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

const DAY = 24 * 3600 * 1000;

let h: LiveHoist;
let storage: Storage;
/** The sweep's clock: the deployments happen at the real time, the sweep runs days later. */
const clock = { at: Date.now(), now: () => new Date(clock.at) };
let retention: FileRetention;
test.before(async () => {
  h = await liveHoist();
  storage = h.running.kernel.get(STORAGE);
  retention = new FileRetention(h.running.kernel.orm.em, storage, clock, 7, 30);
});
test.after(async () => h?.close());

const buildJs = (marker: string, gate = '') =>
  `// ${gate}
const fs = require('fs');
const finish = () => {
  fs.mkdirSync('dist', { recursive: true });
  fs.writeFileSync('dist/index.html', ${JSON.stringify(marker)});
  console.log('built ${marker}');
};
${gate ? "const t = setInterval(() => fs.existsSync('.gate-open') && (clearInterval(t), finish()), 50);" : 'finish();'}
`;

/** POST without a body; the status and JSON answer. */
async function post(token: string, path: string) {
  const res = await fetch(`${h.api}${path}`, { method: 'POST', headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: await res.json() };
}

async function project(token: string, name: string) {
  const res = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, settings: { build_command: 'node build.js', output_directory: 'dist' } }),
  });
  assert.is(res.status, 201);
  return (await res.json()) as { id: string; url: string };
}

/** Uploads `files` and waits for the operation's end; returns it and the records it made. */
async function deploy(token: string, projectId: string, files: Record<string, string>, status = 'succeeded') {
  const res = await h.upload(token, `/api/v1/projects/${projectId}/local-to-live`, await zipOf(files));
  const queued = await res.json();
  assert.is(res.status, 202, JSON.stringify(queued));
  const op = await h.waitFor(token, queued.operation.id);
  assert.is(op.status, status, JSON.stringify(op));
  return records(token, projectId, op.id);
}

/** The version, build and deployment records of operation `opId`, read through the API. */
async function records(token: string, projectId: string, opId: string) {
  const list = async (kind: string) =>
    (await h.get(token, `/api/v1/projects/${projectId}/${kind}?limit=100`)).body[kind] as any[];
  const op = (await h.get(token, `/api/v1/operations/${opId}`)).body;
  const version = (await list('versions')).find((v) => v.id === op.version_id);
  const build = (await list('builds')).find((b) => b.operation_id === opId);
  const deployment = (await list('deployments')).find((d) => d.operation_id === opId);
  return { op, version, build, deployment };
}

/** Every key in Storage under `prefix`. */
async function keys(prefix: string): Promise<Set<string>> {
  const found = new Set<string>();
  for await (const o of storage.list(prefix)) found.add(o.key);
  return found;
}

/** The Storage key of the archive of version `id`. */
const archiveOf = async (id: string) =>
  (await h.running.kernel.orm.em.fork().findOneOrFail(Version, { id })).archiveKey;

test('a sweep removes the files of old deployments no retained release uses; the API says so', async () => {
  const { token } = await h.login('free');
  const p = await project(token, 'retention');
  const one = await deploy(token, p.id, { 'build.js': buildJs('one') });
  const two = await deploy(token, p.id, { 'build.js': buildJs('two') });
  const bad = await deploy(token, p.id, { 'build.js': 'process.exit(3)' }, 'failed');
  assert.is((await records(token, p.id, one.op.id)).deployment.status, 'superseded');
  const [a1, a2, a3] = await Promise.all([one, two, bad].map((r) => archiveOf(r.version.id)));
  assert.ok([a1, a2, a3].every((k) => k.startsWith('uploads/')));
  const before = { uploads: await keys('uploads/'), artifacts: await keys('artifacts/'), logs: await keys('logs/') };
  assert.ok([a1, a2, a3].every((k) => before.uploads.has(k)));
  assert.ok(before.artifacts.has(one.build.artifact.key) && before.artifacts.has(two.build.artifact.key));

  // Within the grace period nothing goes.
  clock.at = Date.now() + 6 * DAY;
  assert.equal(await retention.sweep(), { archives: 0, artifacts: 0, logs: 0 });

  clock.at = Date.now() + 8 * DAY;
  // The superseded (pruned: the free plan keeps one release) and the failed deployment lose their archive and
  // artifact; the live one keeps them. Logs stay for 30 days.
  assert.equal(await retention.sweep(), { archives: 2, artifacts: 1, logs: 0 });
  const uploads = await keys('uploads/');
  assert.equal([uploads.has(a1), uploads.has(a2), uploads.has(a3)], [false, true, false], 'only the live archive');
  assert.is(uploads.size, before.uploads.size - 2);
  const artifacts = await keys('artifacts/');
  assert.ok(!artifacts.has(one.build.artifact.key), 'the superseded artifact is gone');
  assert.ok(artifacts.has(two.build.artifact.key), 'the live artifact stays');
  assert.equal(await keys('logs/'), before.logs, 'every log stays');
  assert.equal(await retention.sweep(), { archives: 0, artifacts: 0, logs: 0 }, 'nothing is removed twice');

  const after = await records(token, p.id, one.op.id);
  assert.ok(after.version.archive_removed_at && after.build.artifact_removed_at, JSON.stringify(after));
  assert.is(after.build.log_removed_at, null);
  const live = await records(token, p.id, two.op.id);
  assert.equal(
    [live.version.archive_removed_at, live.build.artifact_removed_at, live.build.log_removed_at],
    [null, null, null],
  );

  // Retries that need what is gone are refused, clearly, and start nothing.
  const count = () => h.running.kernel.orm.em.fork().count(Operation, { projectId: p.id });
  const ops = await count();
  const refused = [
    [`/api/v1/projects/${p.id}/builds/${one.build.id}/retry`, 'archive_removed'],
    [`/api/v1/projects/${p.id}/deployments/${one.deployment.id}/retry`, 'artifact_removed'],
    [`/api/v1/operations/${bad.op.id}/retry`, 'archive_removed'],
  ];
  for (const [path, reason] of refused) {
    const res = await post(token, path);
    assert.is(res.status, 409, `${path}: ${JSON.stringify(res.body)}`);
    assert.equal([res.body.error.code, res.body.error.details.reason], ['not_retryable', reason]);
  }
  assert.is(await count(), ops, 'no operation was written');
  assert.is((await h.site(hostOf(p.url))).body, 'two', 'the live release serves as before');

  // After 30 days the logs of builds no retained release uses go too, and reading one answers 410.
  clock.at = Date.now() + 31 * DAY;
  // (At least two: a build that ran twice, its stage delivered again on a busy machine, counts its rows.)
  const swept = await retention.sweep();
  assert.equal([swept.archives, swept.artifacts], [0, 0]);
  assert.ok(swept.logs >= 2, JSON.stringify(swept));
  const logs = await keys('logs/');
  assert.ok(!logs.has(`logs/${one.op.id}/build-1.log`) && !logs.has(`logs/${bad.op.id}/build-1.log`));
  assert.ok(logs.has(`logs/${two.op.id}/build-1.log`), 'the live build keeps its log');
  const gone = await h.get(token, `/api/v1/projects/${p.id}/builds/${one.build.id}/log`);
  assert.equal([gone.status, gone.body.error.code], [410, 'gone']);
  assert.is((await h.get(token, `/api/v1/projects/${p.id}/builds/${two.build.id}/log`)).status, 200);
  const summary = await h.get(token, `/api/v1/projects/${p.id}/builds/${one.build.id}`);
  assert.ok(summary.body.log.last_lines.includes('built one'), 'the summary on the record stays');

  // What the live release kept still works: its build and its deployment can be retried.
  const rebuilt = await post(token, `/api/v1/projects/${p.id}/builds/${two.build.id}/retry`);
  assert.is(rebuilt.status, 202, JSON.stringify(rebuilt.body));
  assert.is((await h.waitFor(token, rebuilt.body.operation.id)).status, 'succeeded');
  const redeployed = await post(token, `/api/v1/projects/${p.id}/deployments/${two.deployment.id}/retry`);
  assert.is(redeployed.status, 202, JSON.stringify(redeployed.body));
  assert.is((await h.waitFor(token, redeployed.body.operation.id)).status, 'succeeded');
  assert.is((await h.site(hostOf(p.url))).body, 'two');
});

test('what release_retention keeps and an unfinished operation uses stay; a kept release deploys again', async () => {
  const { token } = await h.login('pro');
  const p = await project(token, 'kept');
  const one = await deploy(token, p.id, { 'build.js': buildJs('kept one') });
  const two = await deploy(token, p.id, { 'build.js': buildJs('kept two') });
  const gate = workspaceGate(h.dataDir, 'build.js');
  const res = await h.upload(
    token,
    `/api/v1/projects/${p.id}/local-to-live`,
    await zipOf({ 'build.js': buildJs('kept three', gate.id) }),
  );
  const { operation: held, version: heldVersion } = await res.json();
  await h.waitFor(token, held.id, (o) => o.stages.build.status === 'running');
  const mine = [
    ...(await Promise.all([one.version.id, two.version.id, heldVersion.id].map(archiveOf))),
    ...[one, two].flatMap((r) => [r.build.artifact.key, `logs/${r.op.id}/build-1.log`]),
  ];
  const present = async () => {
    const all = new Set([...(await keys('uploads/')), ...(await keys('artifacts/')), ...(await keys('logs/'))]);
    return mine.filter((k) => all.has(k));
  };
  assert.equal(await present(), mine);

  // Long after: the kept releases and the operation still building keep everything (other projects' files go).
  clock.at = Date.now() + 40 * DAY;
  await retention.sweep();
  assert.equal(await present(), mine);
  for (const r of [one, two]) {
    const now = await records(token, p.id, r.op.id);
    assert.equal(
      [now.version.archive_removed_at, now.build.artifact_removed_at, now.build.log_removed_at],
      [null, null, null],
    );
  }

  gate.open();
  const built = await h.waitFor(token, held.id);
  assert.is(built.status, 'succeeded', JSON.stringify(built));
  gate.close();
  assert.is((await h.site(hostOf(p.url))).body, 'kept three');
  // (A promote of this static release fails on main already, deploy_internal_error: a redeploy ships its artifact.)
  const promoted = await post(token, `/api/v1/projects/${p.id}/deployments/${one.deployment.id}/retry`);
  assert.is(promoted.status, 202, JSON.stringify(promoted.body));
  const back = await h.waitFor(token, promoted.body.operation.id);
  assert.is(back.status, 'succeeded', JSON.stringify(back));
  assert.is((await h.site(hostOf(p.url))).body, 'kept one');
});

test.run();
