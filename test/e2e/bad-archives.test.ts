// legs: db
import { existsSync, mkdirSync, readdirSync, realpathSync, rmdirSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { quoteName } from '../../plugins/archive-zip/archive-error.js';
import { Deployment } from '../../core/entities/deployment.js';
import { DEPLOYER } from '../../core/ports/deployer.js';
import type { LocalDeployer } from '../../plugins/deployer-local/local-deployer.js';
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

// Each case: the archive, the code Analyze must fail with, and the entry its message must name (null: the archive as a
// whole).
// archive_too_many_entries is not here: no configuration key lowers the entry limit, and the unit tests cover it.
const cases: [string, () => Buffer | Promise<Buffer>, string, string | null][] = [
  [
    'path traversal',
    () => rawZip([page, { name: '../evil.html', data: 'x' }]),
    'archive_path_traversal',
    '../evil.html',
  ],
  [
    'nested path traversal',
    () => rawZip([page, { name: 'a/../../evil.html', data: 'x' }]),
    'archive_path_traversal',
    'a/../../evil.html',
  ],
  [
    'absolute path',
    () => rawZip([page, { name: '/etc/evil.html', data: 'x' }]),
    'archive_absolute_path',
    '/etc/evil.html',
  ],
  ['backslash', () => rawZip([page, { name: 'dir\\evil.html', data: 'x' }]), 'archive_backslash', 'dir\\evil.html'],
  [
    'symbolic link',
    () => rawZip([page, { name: 'passwd', data: '/etc/passwd', attrs: unixAttrs(0o120777) }]),
    'archive_symlink',
    'passwd',
  ],
  [
    'encrypted entry',
    () => rawZip([page, { name: 'secret.html', data: 'x'.repeat(40), method: 8, flags: 0x801 }]),
    'archive_encrypted',
    'secret.html',
  ],
  [
    'duplicate name',
    () => rawZip([page, { name: 'index.html', data: 'again' }]),
    'archive_duplicate_entry',
    'index.html',
  ],
  [
    'duplicate by Unicode form',
    () => rawZip([page, { name: 'caf\u00e9.html', data: 'a' }, { name: 'cafe\u0301.html', data: 'b' }]),
    'archive_duplicate_entry',
    'cafe\u0301.html',
  ],
  [
    'duplicate by case',
    () => rawZip([page, { name: 'About.html', data: 'a' }, { name: 'about.html', data: 'b' }]),
    'archive_duplicate_entry',
    'about.html',
  ],
  [
    'file named like a folder',
    () => rawZip([page, { name: 'docs', data: 'a' }, { name: 'docs/index.html', data: 'b' }]),
    'archive_duplicate_entry',
    'docs/index.html',
  ],
  [
    'overlapping entries',
    () => rawZip([page, { name: 'copy.html', data: page.data, localAt: 0 }]),
    'archive_overlapping_entries',
    'copy.html',
  ],
  [
    'compression ratio',
    () => rawZip([page, { name: 'zeros.bin', data: zeros, method: 8 }]),
    'archive_compression_ratio',
    'zeros.bin',
  ],
  [
    'unknown compression method',
    () => rawZip([page, { name: 'odd.bin', data: 'x', method: 99 }]),
    'archive_invalid',
    'odd.bin',
  ],
  [
    'entry inflating past its declared size',
    () => rawZip([page, { name: 'liar.bin', data: Buffer.alloc(200_000), method: 8, size: 10 }]),
    'archive_too_large_uncompressed',
    'liar.bin',
  ],
  ['not a ZIP', () => Buffer.from('this is a text file, not an archive\n'.repeat(10)), 'archive_not_zip', null],
  ['truncated ZIP', () => rawZip([page]).subarray(0, 40), 'archive_invalid', null],
  ['empty archive', () => rawZip([]), 'archive_empty', null],
  [
    'only folders and OS metadata',
    () => rawZip([{ name: 'site/' }, { name: '__MACOSX/._x', data: 'junk' }, { name: '.DS_Store', data: 'junk' }]),
    'archive_empty',
    null,
  ],
  [
    'no index.html',
    () => zipOf({ 'readme.txt': 'no html here', 'style.css': 'body{}' }),
    'analyze_no_index_html',
    null,
  ],
  // Names a workspace must not be given: control characters (UTF-8 names, and CP437 bytes without the flag), bad UTF-8,
  // long or deep paths.
  [
    'SOH in a name',
    () => rawZip([page, { name: 'a\u0001b.html', data: 'x' }]),
    'archive_control_character',
    'a\u0001b.html',
  ],
  [
    'BEL in a name',
    () => rawZip([page, { name: 'ring\u0007.html', data: 'x' }]),
    'archive_control_character',
    'ring\u0007.html',
  ],
  [
    'an ESC colour sequence in a name',
    () => rawZip([page, { name: '\u001b[31mred\u001b[0m.html', data: 'x' }]),
    'archive_control_character',
    '\u001b[31mred\u001b[0m.html',
  ],
  [
    'CR/LF in a name',
    () => rawZip([page, { name: 'fake\r\nlog line.html', data: 'x' }]),
    'archive_control_character',
    'fake\r\nlog line.html',
  ],
  [
    'DEL in a name',
    () => rawZip([page, { name: 'del\u007f.html', data: 'x' }]),
    'archive_control_character',
    'del\u007f.html',
  ],
  [
    'a C1 control in a name',
    () => rawZip([page, { name: 'csi\u009b2J.html', data: 'x' }]),
    'archive_control_character',
    'csi\u009b2J.html',
  ],
  [
    'an ESC byte in a name without the UTF-8 flag',
    () => rawZip([page, { name: Buffer.from('\x1b[31m.html', 'latin1'), data: 'x', flags: 0 }]),
    'archive_control_character',
    '\u2190[31m.html',
  ],
  [
    'a LF byte in a name without the UTF-8 flag',
    () => rawZip([page, { name: Buffer.from('a\nb.html', 'latin1'), data: 'x', flags: 0 }]),
    'archive_control_character',
    'a\u25d9b.html',
  ],
  [
    'a name flagged UTF-8 that is not',
    () => rawZip([page, { name: Buffer.from([0x78, 0xc3, 0x28, 0x2e, 0x6a, 0x73]), data: 'x' }]),
    'archive_invalid_utf8',
    'x\ufffd(.js',
  ],
  [
    'a folder entry carrying data',
    () => rawZip([page, { name: 'assets/', data: 'x'.repeat(34), attrs: unixAttrs(0o40755) }]),
    'archive_directory_with_data',
    'assets/',
  ],
  [
    'a 256-byte name',
    () => rawZip([page, { name: `${'a'.repeat(251)}.html`, data: 'x' }]),
    'archive_name_too_long',
    `${'a'.repeat(251)}.html`,
  ],
  [
    'a path of 1,025 bytes',
    () => rawZip([page, { name: `${Array(5).fill('d'.repeat(200)).join('/')}/${'f'.repeat(15)}.html`, data: 'x' }]),
    'archive_path_too_long',
    `${Array(5).fill('d'.repeat(200)).join('/')}/${'f'.repeat(15)}.html`,
  ],
  [
    'a path 65 levels deep',
    () => rawZip([page, { name: `${Array(64).fill('d').join('/')}/deep.html`, data: 'x' }]),
    'archive_path_too_deep',
    `${Array(64).fill('d').join('/')}/deep.html`,
  ],
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
    if (entry) assert.ok(error.message.includes(quoteName(entry)), `message names ${entry}, escaped: ${error.message}`);
    assert.not.match(
      JSON.stringify(op),
      /[\u007f-\u009f]/,
      'no raw DEL or C1 control in the answer (JSON escapes only C0)',
    );
    assert.not.match(error.message, /[\u0000-\u001f\u007f-\u009f]/, 'no raw control character in the message');
    assert.not.ok(JSON.stringify(op).includes(h.running.kernel.config.dataDir), 'no server path in the answer');
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
    const work = join(h.running.kernel.config.dataDir, 'work');
    assert.equal(existsSync(work) ? readdirSync(work) : [], [], 'no workspace is left behind');
  });
}

test('a bad archive uploaded to a live project leaves the live release serving', async () => {
  const first = await (
    await h.upload(token, '/api/v1/local-to-live', await zipOf({ 'index.html': 'still here' }), { name: 'bad-live' })
  ).json();
  assert.is((await h.waitFor(token, first.operation.id)).status, 'succeeded');
  const before = await h.site(hostOf(first.project.url));

  const res = await h.upload(
    token,
    `/api/v1/projects/${first.project.id}/local-to-live`,
    rawZip([page, { name: '../evil.html', data: 'x' }]),
  );
  const body = await res.json();
  assert.is(res.status, 202, JSON.stringify(body));
  const op = await h.waitFor(token, body.operation.id);
  assert.is(op.stages.analyze.error.code, 'archive_path_traversal');

  const after = await h.site(hostOf(first.project.url));
  assert.is(after.status, 200);
  assert.is(after.body, 'still here');
  assert.is(after.headers['x-hoist-release'], before.headers['x-hoist-release']);
});

test(
  'a path the filesystem refuses at Deploy fails at once with no server path, while ' + 'another account deploys',
  async () => {
    // A ten-minute lease: a failed attempt that kept its claim would hold its redelivery (and a worker
    // slot) past this test's time. The data directory's work folder lies deep (a link, as to another
    // disk), so a 1,000-byte path passes Analyze and Build and only Deploy's extraction meets ENAMETOOLONG.
    const deep = await liveHoist({ queueVisibilitySeconds: 600 });
    try {
      if (deep.running.kernel.config.deployer !== 'local') {
        console.log('! skip: the deep work folder is a local deployer case (HOIST_DEPLOYER is set)');
        return;
      }
      const dataDir = deep.running.kernel.config.dataDir;
      let far = join(dataDir, 'far');
      while (far.length < 3150) far = join(far, 'f'.repeat(200));
      mkdirSync(far, { recursive: true });
      // The start may have made an empty work folder already: it gives way to the link (rmdir refuses a non-empty one).
      if (existsSync(join(dataDir, 'work'))) rmdirSync(join(dataDir, 'work'));
      symlinkSync(far, join(dataDir, 'work'));
      const long = `${Array(4).fill('p'.repeat(240)).join('/')}/page.html`;
      assert.ok(Buffer.byteLength(long) <= 1024 && realpathSync(far).length + 60 + long.length > 4096);

      const bad = await deep.login();
      const good = await deep.login();
      const uploads = await Promise.all([
        deep.upload(bad.token, '/api/v1/local-to-live', rawZip([page, { name: long, data: 'deep' }]), {
          name: 'too-deep-1',
        }),
        deep.upload(bad.token, '/api/v1/local-to-live', rawZip([page, { name: long, data: 'deep' }]), {
          name: 'too-deep-2',
        }),
        deep.upload(good.token, '/api/v1/local-to-live', await zipOf({ 'index.html': 'the other account' }), {
          name: 'other-account',
        }),
      ]);
      const bodies = await Promise.all(uploads.map((r) => r.json()));
      for (const [i, r] of uploads.entries()) assert.is(r.status, 202, JSON.stringify(bodies[i]));

      const [first, second, other] = await Promise.all(
        bodies.map((b, i) => deep.waitFor(i < 2 ? bad.token : good.token, b.operation.id)),
      );
      assert.is(other.status, 'succeeded', JSON.stringify(other));
      assert.is((await deep.site(hostOf(bodies[2].project.url))).body, 'the other account');
      for (const op of [first, second]) {
        assert.is(op.status, 'failed', JSON.stringify(op));
        assert.equal(
          [op.stages.analyze.status, op.stages.build.status, op.stages.deploy.status],
          ['succeeded', 'succeeded', 'failed'],
        );
        assert.is(op.stages.deploy.error.code, 'deploy_filesystem_error');
        assert.match(op.stages.deploy.error.message, 'ENAMETOOLONG');
        assert.not.ok(
          JSON.stringify(op).includes(dataDir),
          `no server path: ${op.stages.deploy.error.message.slice(0, 200)}`,
        );
        const deployments = await deep.get(bad.token, `/api/v1/projects/${op.project_id}/deployments`);
        assert.not.ok(JSON.stringify(deployments.body).includes(dataDir));
        assert.ok(
          deployments.body.deployments.every(
            (d: { status: string; live: boolean }) => d.status === 'canceled' && !d.live,
          ),
          JSON.stringify(deployments.body),
        );
        const site = await deep.site(hostOf(bodies[0].project.url));
        assert.is(site.status, 404);
      }
      const em = deep.running.kernel.orm.em.fork();
      const id = other.result.deployment_id;
      // Its variants follow the switch: their pack is there once they are made.
      await (deep.running.kernel.get(DEPLOYER) as LocalDeployer).variantsMade(id);
      const releases = readdirSync(join(dataDir, 'releases'));
      // A static release is its directory, its file index and its pack of precompressed variants, beside it.
      const want = [id, `${id}.index.json`, `${id}.variants.pack`];
      assert.equal(releases, want, "only the other account's release is on disk");
      assert.equal(readdirSync(far), [], 'no workspace is left behind');
      assert.is(await em.count(Deployment, { status: 'live' }), 1);
    } finally {
      await deep.close();
    }
  },
);

test.run();
