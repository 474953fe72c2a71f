// legs: db
// Previews: an upload with target=preview goes up on its own host beside the live release, behind the
// project's gate by default or public (noindex) by the project's setting; the same ZIP again answers the
// preview already up; promote makes it live; expiry takes it down. The live site never changes meanwhile.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { ACCESS_COOKIE } from '../../adapters/edge/access-gate.js';
import { routesChanged } from '../../core/deployments/host-routes.js';
import { PREVIEWS } from '../../core/deployments/previews.js';
import { Deployment } from '../../core/entities/deployment.js';
import { Project } from '../../core/entities/project.js';
import { Version } from '../../core/entities/version.js';
import { CHANGE_FEED } from '../../core/ports/change-feed.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { objectsUnder } from '../helpers/raw-http.js';
import { edgeRequest, setCookie } from '../helpers/site-gate.js';

const PASSWORD = 'previews are private';
let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist({ healthTimeoutSeconds: 4 });
  ({ token } = await h.login('free'));
});
test.after(async () => h?.close());

const site = (marker: string) => zipOf({ 'index.html': `<h1>${marker}</h1>`, 'about.html': `<p>${marker}</p>` });
/** Every archive kept in Storage belongs to a version: a refused or repeated upload left none behind. */
const onlyVersionsKept = async () =>
  assert.is(
    await objectsUnder(h.running.kernel, 'uploads/'),
    await h.running.kernel.orm.em.fork().count(Version, {}),
    'only the archives of versions are kept',
  );
const markerOf = (body: string) => /<h1>(\w+)<\/h1>/.exec(body)?.[1] ?? null;

async function api(method: string, path: string, body?: object) {
  const res = await fetch(`${h.api}/api/v1${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: res.status, body: await res.json() };
}

/** Uploads `zip` to project `projectId` with `fields`; returns the 202 body once the operation succeeded. */
async function upload(projectId: string, zip: Buffer, fields: Record<string, string>) {
  const res = await h.upload(token, `/api/v1/projects/${projectId}/local-to-live`, zip, fields);
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  const op = await h.waitFor(token, body.operation.id, undefined, 90_000);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  return { ...body, op };
}

/** Reads the live host over and over until stopped; resolves with every marker it saw. */
function keepReading(host: string) {
  let done = false;
  const seen: (string | null)[] = [];
  const reading = (async () => {
    while (!done) seen.push(markerOf((await h.site(host)).body));
  })();
  return async () => {
    done = true;
    await reading;
    return seen;
  };
}

let project: { id: string; host: string; slug: string };

test('a preview goes up on its own host behind the gate; the live site never changes', async () => {
  const res = await h.upload(token, '/api/v1/local-to-live', await site('liveA'), { name: 'preview-site' });
  const first = await res.json();
  assert.is(res.status, 202, JSON.stringify(first));
  assert.is((await h.waitFor(token, first.operation.id)).status, 'succeeded');
  assert.is(first.preview, undefined, 'a production upload has no preview');
  project = { id: first.project.id, host: hostOf(first.project.url), slug: first.project.slug };

  const stop = keepReading(project.host);
  const preview = await upload(project.id, await site('previewB'), { target: 'preview' });
  const seen = await stop();
  assert.ok(seen.length > 3, `${seen.length} reads`);
  assert.ok(
    seen.every((m) => m === 'liveA'),
    `the live site changed: ${[...new Set(seen)]}`,
  );

  // Its own host: <slug>--<the operation's first 8 hex digits>; the project's URL stays the live one.
  const short = preview.operation.id.replace(/-/g, '').slice(0, 8);
  assert.is(hostOf(preview.preview.url), `${project.slug}--${short}.localhost:${new URL(first.project.url).port}`);
  assert.is(preview.project.url, first.project.url);
  assert.is(preview.op.result.url, preview.preview.url);
  assert.is(preview.op.result.live, false);
  assert.match(preview.next_step, /preview\.url/);

  // Private by default: the gate answers, never indexed.
  const host = hostOf(preview.preview.url);
  const closed = await h.site(host);
  assert.is(closed.status, 401);
  assert.is(closed.headers['x-robots-tag'], 'noindex');
  assert.is(markerOf(closed.body), null);
  // The project's password opens it (the project itself is a draft: its password waits unused there).
  assert.is((await api('PATCH', `/projects/${project.id}/`, { access_password: PASSWORD })).status, 200);
  const signedIn = await edgeRequest(h.edge, host, 'POST', '/.hoist/access/password', {
    form: { password: PASSWORD, next: '/' },
    headers: { origin: `http://${host}`, 'x-forwarded-for': '10.9.0.1' },
  });
  assert.is(signedIn.status, 303, signedIn.body);
  const cookie = setCookie(signedIn.cookies, ACCESS_COOKIE)!.value;
  const open = await h.site(host, '/', { cookie: `${ACCESS_COOKIE}=${cookie}` });
  assert.is(open.status, 200);
  assert.is(markerOf(open.body), 'previewB');
  assert.is(open.headers['x-robots-tag'], 'noindex');
  assert.is(markerOf((await h.site(project.host)).body), 'liveA');

  // The releases list: the preview is its own target, promotable, with its expiry (free plan: 24 h).
  const previews = (await api('GET', `/projects/${project.id}/releases?target=preview`)).body.releases;
  assert.equal(
    previews.map((r: any) => [r.target, r.status, r.live, r.promotable, r.url]),
    [['preview', 'preview', false, true, preview.preview.url]],
  );
  const hours = (Date.parse(previews[0].expires_at) - Date.parse(previews[0].live_at)) / 3_600_000;
  assert.is(Math.round(hours), 24);
  const production = (await api('GET', `/projects/${project.id}/releases?target=production`)).body.releases;
  assert.equal(
    production.map((r: any) => [r.target, r.live]),
    [['production', true]],
  );
});

test('public previews (the project setting) serve anyone, noindex', async () => {
  const patched = await api('PATCH', `/projects/${project.id}/`, { preview_visibility: 'public' });
  assert.is(patched.status, 200);
  assert.is(patched.body.preview_visibility, 'public');
  const [preview] = (await api('GET', `/projects/${project.id}/releases?target=preview`)).body.releases;
  const res = await h.site(hostOf(preview.url), '/about');
  assert.is(res.status, 200);
  assert.is(res.body, '<p>previewB</p>');
  assert.is(res.headers['x-robots-tag'], 'noindex');
  assert.is((await api('PATCH', `/projects/${project.id}/`, { preview_visibility: 'open' })).status, 400);
});

test('the same ZIP again as a preview answers the preview already up; nothing new is built', async () => {
  const [before] = (await api('GET', `/projects/${project.id}/releases?target=preview`)).body.releases;
  const res = await h.upload(token, `/api/v1/projects/${project.id}/local-to-live`, await site('previewB'), {
    target: 'preview',
  });
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  assert.is(body.operation.id, before.operation_id);
  assert.is(body.operation.status, 'succeeded');
  assert.is(body.preview.url, before.url);
  const after = (await api('GET', `/projects/${project.id}/releases?target=preview`)).body.releases;
  assert.is(after.length, 1);
  const versions = (await api('GET', `/projects/${project.id}/versions`)).body.versions;
  assert.is(versions.length, 2, 'no version for the repeat');
  await onlyVersionsKept();
});

test('a bad target is refused with 400 and writes nothing', async () => {
  const projects = (await api('GET', '/projects/')).body.projects.length;
  const res = await h.upload(token, '/api/v1/local-to-live', await site('x'), {
    name: 'never-made',
    target: 'staging',
  });
  const body = await res.json();
  assert.is(res.status, 400);
  assert.is(body.error.code, 'invalid_request');
  assert.is(body.error.details.field, 'target');
  assert.is((await api('GET', '/projects/')).body.projects.length, projects);
  await onlyVersionsKept();
});

test('promoting a preview makes it live as it runs (on the free plan too); its preview host stops', async () => {
  const [preview] = (await api('GET', `/projects/${project.id}/releases?target=preview`)).body.releases;
  const stop = keepReading(project.host);
  const res = await h.post(token, `/api/v1/projects/${project.id}/releases/${preview.id}/promote`);
  assert.is(res.status, 202, JSON.stringify(res.body));
  const op = await h.waitFor(token, res.body.operation.id);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
  const seen = await stop();
  // Readers see the old release, then the new one, never anything else.
  const firstB = seen.indexOf('previewB');
  assert.ok(
    seen.every((m, i) => m === (firstB >= 0 && i >= firstB ? 'previewB' : 'liveA')),
    `${[...new Set(seen)]}`,
  );
  assert.is(markerOf((await h.site(project.host)).body), 'previewB');
  assert.is((await h.site(hostOf(preview.url))).status, 404);
  const [now] = (await api('GET', `/projects/${project.id}/releases`)).body.releases;
  assert.equal(
    [now.id, now.target, now.status, now.live, now.expires_at],
    [preview.id, 'production', 'live', true, null],
  );
});

test('an expired preview stops serving at its expiry, then the worker takes it down', async () => {
  const up = await upload(project.id, await site('previewC'), { target: 'preview' });
  const host = hostOf(up.preview.url);
  assert.is(markerOf((await h.site(host)).body), 'previewC');
  const { kernel } = h.running;
  const em = kernel.orm.em.fork();
  const d = await em.findOneOrFail(Deployment, { operationId: up.operation.id });
  // Its time is up in a moment; the edges learn the new expiry as from any change.
  await em.nativeUpdate(Deployment, { id: d.id }, { expiresAt: new Date(Date.now() + 300) });
  await routesChanged(kernel.get(CHANGE_FEED), project.id);
  await new Promise((r) => setTimeout(r, 600));
  assert.is((await h.site(host)).status, 404, 'served after its expiry');
  // The local deployer's release directory (the Docker deployer's is a container of its own).
  const local = kernel.config.deployer === 'local';
  const kept = () => existsSync(join(h.dataDir, 'releases', d.id));
  if (local) assert.ok(kept(), 'the release is still there until the sweep');

  assert.ok((await kernel.get(PREVIEWS).expire()) >= 1);
  if (local) assert.not.ok(kept(), 'the release is removed');
  const [expired] = (await api('GET', `/projects/${project.id}/releases?target=preview`)).body.releases;
  assert.equal([expired.id, expired.status, expired.promotable], [d.id, 'expired', false]);
  const refused = await h.post(token, `/api/v1/projects/${project.id}/releases/${d.id}/promote`);
  assert.is(refused.status, 409);
  assert.is(refused.body.error.code, 'not_promotable');
  assert.is(markerOf((await h.site(project.host)).body), 'previewB', 'the live site is untouched');
  const p = await em.findOneOrFail(Project, { id: project.id });
  assert.is(p.previewVisibility, 'public');
});

test("an account serves at most its plan's previews_per_account: one more expires the oldest", async () => {
  const serving = async () =>
    (await api('GET', `/projects/${project.id}/releases?target=preview`)).body.releases.filter(
      (r: { status: string }) => r.status === 'preview',
    );
  assert.is((await serving()).length, 0);
  // The free plan's 3, then one more.
  const ups = [];
  for (const marker of ['previewD', 'previewE', 'previewF', 'previewG'])
    ups.push(await upload(project.id, await site(marker), { target: 'preview' }));
  const [oldest, ...rest] = ups;
  const now = await serving();
  assert.equal(
    now.map((r: { operation_id: string }) => r.operation_id).sort(),
    rest.map((u) => u.operation.id).sort(),
    'the newest three serve',
  );
  // Every edge stops serving it once the change reaches it (at once in one process, soon across processes).
  const gone = async () => (await h.site(hostOf(oldest.preview.url))).status === 404;
  for (let i = 0; i < 50 && !(await gone()); i++) await new Promise((r) => setTimeout(r, 100));
  assert.is((await h.site(hostOf(oldest.preview.url))).status, 404, 'the oldest stopped serving');
  for (const u of rest) assert.is((await h.site(hostOf(u.preview.url))).status, 200);
  const d = await h.running.kernel.orm.em.fork().findOneOrFail(Deployment, { operationId: oldest.operation.id });
  assert.is(d.status, 'expired');
  if (h.running.kernel.config.deployer === 'local')
    assert.not.ok(existsSync(join(h.dataDir, 'releases', d.id)), 'its release is removed');
  assert.is(markerOf((await h.site(project.host)).body), 'previewB', 'the live site is untouched');
});

test.run();
