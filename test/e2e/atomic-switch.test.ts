// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
});
test.after(async () => h?.close());

/**
 * A release whose every file starts and ends with its marker; markers have the same length, so files keep their sizes.
 */
const release = (marker: string) =>
  zipOf({
    'index.html': `<!--${marker}--><h1>${'x'.repeat(4000)}</h1><!--${marker}-->`,
    'app.js': `/*${marker}*/${'y'.repeat(4000)}/*${marker}*/`,
    'about/index.html': `<!--${marker}-->about<!--${marker}-->`,
  });

/** Waits for the operation and checks it succeeded. */
async function succeeded(operationId: string) {
  const op = await h.waitFor(token, operationId);
  assert.is(op.status, 'succeeded', JSON.stringify(op));
}

interface Sample {
  path: string;
  status: number;
  release: string;
  markers: string[];
}

/** GETs the pages one after another until `stop` says so, recording what each response came from. */
async function poll(host: string, stop: () => boolean, out: Sample[]) {
  while (!stop())
    for (const path of ['/', '/app.js', '/about/']) {
      const res = await h.site(host, path);
      out.push({
        path,
        status: res.status,
        release: String(res.headers['x-hoist-release']),
        markers: res.body.match(/release-[A-Z]/g) ?? [],
      });
    }
}

/**
 * Checks every sample came whole from one release, and each release id always with the same marker; returns marker by
 * release.
 */
function checkWhole(samples: Sample[]): Map<string, string> {
  const byRelease = new Map<string, string>();
  for (const s of samples) {
    assert.is(s.status, 200, JSON.stringify(s));
    assert.is(s.markers.length, 2, JSON.stringify(s));
    assert.is(s.markers[0], s.markers[1], `a response mixes releases: ${JSON.stringify(s)}`);
    const known = byRelease.get(s.release) ?? s.markers[0];
    assert.is(s.markers[0], known, `release ${s.release} served files of two releases`);
    byRelease.set(s.release, known);
  }
  return byRelease;
}

test(
  'readers during a redeploy see one release or the other, never a mix or an error; ' + 'then only the new one',
  async () => {
    const first = await (
      await h.upload(token, '/api/v1/local-to-live', await release('release-A'), { name: 'atomic' })
    ).json();
    await succeeded(first.operation.id);
    const host = hostOf(first.project.url);
    const a = (await h.site(host)).headers['x-hoist-release'] as string;

    let done = false;
    const samples: Sample[] = [];
    const readers = [
      poll(host, () => done, samples),
      ...Array.from({ length: 3 }, () => poll(host, () => done, samples)),
    ];
    const res = await h.upload(token, `/api/v1/projects/${first.project.id}/local-to-live`, await release('release-B'));
    const body = await res.json();
    assert.is(res.status, 202, JSON.stringify(body));
    await succeeded(body.operation.id);
    await new Promise((r) => setTimeout(r, 200));
    done = true;
    await Promise.all(readers);

    assert.ok(samples.length > 50, `${samples.length} samples`);
    const byRelease = checkWhole(samples);
    assert.is(byRelease.get(a), 'release-A');
    assert.is(byRelease.size, 2, `releases seen: ${[...byRelease.keys()]}`);
    const b = [...byRelease.keys()].find((id) => id !== a)!;
    assert.is(byRelease.get(b), 'release-B');

    const after: Sample[] = [];
    let count = 0;
    await poll(host, () => count++ >= 10, after);
    checkWhole(after);
    assert.ok(
      after.every((s) => s.release === b && s.markers[0] === 'release-B'),
      'only the new release after the deploy',
    );
  },
);

test('a deploy that fails never goes live: the old release keeps serving throughout', async () => {
  const first = await (
    await h.upload(token, '/api/v1/local-to-live', await release('release-C'), { name: 'stays' })
  ).json();
  await succeeded(first.operation.id);
  const host = hostOf(first.project.url);
  const live = (await h.site(host)).headers['x-hoist-release'] as string;

  let done = false;
  const samples: Sample[] = [];
  const readers = Array.from({ length: 2 }, () => poll(host, () => done, samples));
  const broken = await zipOf({ 'readme.txt': 'release-D but no index.html' });
  const body = await (await h.upload(token, `/api/v1/projects/${first.project.id}/local-to-live`, broken)).json();
  const op = await h.waitFor(token, body.operation.id);
  await new Promise((r) => setTimeout(r, 100));
  done = true;
  await Promise.all(readers);

  assert.is(op.status, 'failed');
  assert.is(op.stages.analyze.error.code, 'analyze_no_index_html');
  const byRelease = checkWhole(samples);
  assert.equal([...byRelease.entries()], [[live, 'release-C']]);
  const page = await h.site(host);
  assert.is(page.headers['x-hoist-release'], live);
  assert.match(page.body, /release-C/);
});

test('the edge learns a new release without a restart', async () => {
  const first = await (
    await h.upload(token, '/api/v1/local-to-live', await release('release-E'), { name: 'learns' })
  ).json();
  await succeeded(first.operation.id);
  const host = hostOf(first.project.url);
  assert.match((await h.site(host, '/app.js')).body, /release-E/);
  for (const marker of ['release-F', 'release-G']) {
    const body = await (
      await h.upload(token, `/api/v1/projects/${first.project.id}/local-to-live`, await release(marker))
    ).json();
    await succeeded(body.operation.id);
    assert.match((await h.site(host, '/app.js')).body, new RegExp(marker));
    assert.match((await h.site(host, '/')).body, new RegExp(marker));
  }
});

test.run();
