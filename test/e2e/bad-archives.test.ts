// legs: db
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { Deployment } from '../../core/entities/deployment.js';
import { Project } from '../../core/entities/project.js';
import { hostOf, liveHoist, zipOf, type LiveHoist } from '../helpers/live.js';
import { rawZip, unixAttrs } from '../helpers/raw-zip.js';

let h: LiveHoist;
let token: string;
test.before(async () => {
  h = await liveHoist();
  ({ token } = await h.login());
});
test.after(async () => h?.close());

const page = { name: 'index.html', data: '<h1>ok</h1>' };
const zeros = Buffer.alloc(6_000_000);

// Each case: the archive, the code Analyze must fail with, and the entry its message must name (null: the archive as a whole).
// archive_too_many_entries is not here: no configuration key lowers the entry limit, and the unit tests cover it.
const cases: [string, () => Buffer | Promise<Buffer>, string, string | null][] = [
  ['path traversal', () => rawZip([page, { name: '../evil.html', data: 'x' }]), 'archive_path_traversal', '../evil.html'],
  ['nested path traversal', () => rawZip([page, { name: 'a/../../evil.html', data: 'x' }]), 'archive_path_traversal', 'a/../../evil.html'],
  ['absolute path', () => rawZip([page, { name: '/etc/evil.html', data: 'x' }]), 'archive_absolute_path', '/etc/evil.html'],
  ['backslash', () => rawZip([page, { name: 'dir\\evil.html', data: 'x' }]), 'archive_backslash', 'dir\\evil.html'],
  ['symbolic link', () => rawZip([page, { name: 'passwd', data: '/etc/passwd', attrs: unixAttrs(0o120777) }]), 'archive_symlink', 'passwd'],
  ['encrypted entry', () => rawZip([page, { name: 'secret.html', data: 'x'.repeat(40), method: 8, flags: 0x801 }]), 'archive_encrypted', 'secret.html'],
  ['duplicate name', () => rawZip([page, { name: 'index.html', data: 'again' }]), 'archive_duplicate_entry', 'index.html'],
  ['duplicate by Unicode form', () => rawZip([page, { name: 'caf\u00e9.html', data: 'a' }, { name: 'cafe\u0301.html', data: 'b' }]), 'archive_duplicate_entry', 'cafe\u0301.html'],
  ['duplicate by case', () => rawZip([page, { name: 'About.html', data: 'a' }, { name: 'about.html', data: 'b' }]), 'archive_duplicate_entry', 'about.html'],
  ['file named like a folder', () => rawZip([page, { name: 'docs', data: 'a' }, { name: 'docs/index.html', data: 'b' }]), 'archive_duplicate_entry', 'docs/index.html'],
  ['overlapping entries', () => rawZip([page, { name: 'copy.html', data: page.data, localAt: 0 }]), 'archive_overlapping_entries', 'copy.html'],
  ['compression ratio', () => rawZip([page, { name: 'zeros.bin', data: zeros, method: 8 }]), 'archive_compression_ratio', 'zeros.bin'],
  ['unknown compression method', () => rawZip([page, { name: 'odd.bin', data: 'x', method: 99 }]), 'archive_invalid', 'odd.bin'],
  ['entry inflating past its declared size', () => rawZip([page, { name: 'liar.bin', data: Buffer.alloc(200_000), method: 8, size: 10 }]), 'archive_too_large_uncompressed', 'liar.bin'],
  ['not a ZIP', () => Buffer.from('this is a text file, not an archive\n'.repeat(10)), 'archive_not_zip', null],
  ['truncated ZIP', () => rawZip([page]).subarray(0, 40), 'archive_invalid', null],
  ['empty archive', () => rawZip([]), 'archive_empty', null],
  ['only folders and OS metadata', () => rawZip([{ name: 'site/' }, { name: '__MACOSX/._x', data: 'junk' }, { name: '.DS_Store', data: 'junk' }]), 'archive_empty', null],
  ['no index.html', () => zipOf({ 'readme.txt': 'no html here', 'style.css': 'body{}' }), 'analyze_no_index_html', null],
];

let n = 0;
for (const [label, build, code, entry] of cases) {
  test(`${label}: Analyze fails with ${code}, fix_input, nothing live`, async () => {
    const name = `bad-${++n}`;
    const res = await h.upload(token, '/api/v1/local-to-live', await build(), { name });
    const body = await res.json();
    assert.is(res.status, 202, JSON.stringify(body));

    const op = await h.waitFor(token, body.operation.id);
    assert.is(op.status, 'failed', JSON.stringify(op));
    const error = op.stages.analyze.error;
    assert.is(op.stages.analyze.status, 'failed');
    assert.is(error.code, code, JSON.stringify(error));
    assert.type(error.message, 'string');
    if (entry) assert.ok(error.message.includes(`"${entry}"`), `message names ${entry}: ${error.message}`);
    assert.is(op.next_step.action, 'fix_input');
    assert.is(op.stages.build.status, 'canceled');
    assert.is(op.stages.deploy.status, 'canceled');

    const em = h.running.kernel.orm.em.fork();
    const project = await em.findOneOrFail(Project, { id: body.project.id });
    assert.is(project.liveDeploymentId, null);
    assert.is(await em.count(Deployment, { projectId: project.id }), 0);
    const site = await h.site(hostOf(body.project.url));
    assert.is(site.status, 404);
    assert.is(site.headers['x-hoist-release'], undefined);
  });
}

test('a bad archive uploaded to a live project leaves the live release serving', async () => {
  const first = await (await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': 'still here' }), { name: 'bad-live' })).json();
  assert.is((await h.waitFor(token, first.operation.id)).status, 'succeeded');
  const before = await h.site(hostOf(first.project.url));

  const res = await h.upload(token, `/api/v1/projects/${first.project.id}/local-to-live`, rawZip([page, { name: '../evil.html', data: 'x' }]));
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  const op = await h.waitFor(token, body.operation.id);
  assert.is(op.stages.analyze.error.code, 'archive_path_traversal');

  const after = await h.site(hostOf(first.project.url));
  assert.is(after.status, 200);
  assert.is(after.body, 'still here');
  assert.is(after.headers['x-hoist-release'], before.headers['x-hoist-release']);
});

test.run();
