import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { brotliCompressSync, brotliDecompressSync, gunzipSync } from 'node:zlib';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { StageError } from '../../../core/errors.js';
import {
  fileIndexOf,
  fileIndexPath,
  variantsDir,
  variantsPack,
  type FileVariant,
} from '../../../core/deployments/file-index.js';
import { DEPLOYER, type Deployer, type ReleaseSpec } from '../../../core/ports/deployer.js';
import { STORAGE, type Storage } from '../../../core/ports/storage.js';
import { BlobStore } from '../../../plugins/shared/release/blob-store.js';
import type { LocalDeployer } from '../../../plugins/deployer-local/local-deployer.js';
import { saveFileIndex } from '../../../plugins/shared/release/release-files.js';
import type { Kernel } from '../../../adapters/kernel.js';
import { testKernel } from '../../helpers/kernel.js';
import { zipOf } from '../../helpers/live.js';
import { rawZip, unixAttrs } from '../../helpers/raw-zip.js';
import { RecordedReports } from '../../contract/deployer.js';

let kernel: Kernel;
let deployer: Deployer;
let storage: Storage;
let blobs: BlobStore;
const control = () => ({ signal: new AbortController().signal, log: () => {}, report: new RecordedReports() });
const sha = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');
/** A variant's bytes, out of its pack. */
const inPack = (v: FileVariant) => readFileSync(v.path).subarray(v.offset, v.offset! + v.size);

test.before(async () => {
  kernel = await testKernel({ deployer: 'local' });
  deployer = kernel.get(DEPLOYER);
  storage = kernel.get(STORAGE);
  blobs = new BlobStore(join(kernel.config.dataDir, 'blobs'));
});
test.after(() => kernel.stop());

async function spec(zip: Buffer, runtime: 'static' | 'node' = 'static'): Promise<ReleaseSpec> {
  const deploymentId = randomUUID();
  const artifactKey = `artifacts/${deploymentId}.zip`;
  await storage.put(artifactKey, Readable.from([zip]));
  const startCommand = runtime === 'node' ? 'node server.js' : null;
  return {
    deploymentId,
    accountId: randomUUID(),
    projectId: randomUUID(),
    slug: 's',
    runtime,
    artifactKey,
    startCommand,
    env: {},
  };
}

/** Deploys a static release and waits for its variants, which follow its switch. */
async function deploy(files: Record<string, string | Buffer>): Promise<{ id: string; root: string }> {
  const s = await spec(await zipOf(files));
  const target = await deployer.prepare(s, control());
  assert.is(target.kind, 'static');
  await (deployer as LocalDeployer).variantsMade(s.deploymentId);
  return { id: s.deploymentId, root: (target as { root: string }).root };
}

/** Every blob in the store, by name. */
function storeContents(): string[] {
  if (!existsSync(blobs.dir)) return [];
  return readdirSync(blobs.dir)
    .flatMap((shard) => readdirSync(join(blobs.dir, shard)))
    .sort();
}

const js = 'export const answer = 42;\n'.repeat(200);
const css = 'body{margin:0}';
const png = randomBytes(4096);

test('a redeploy copies the variants of unchanged files out of the last pack, and keeps them after it', async () => {
  const a = await deploy({ 'index.html': '<h1>a</h1>', 'app.js': js });
  const was = (await fileIndexOf(a.root))!.files['app.js']!.br!;
  // Packs are never rewritten: this one is, in place (same inode, size and time), only to see where b's came from.
  const pack = variantsPack(a.root);
  const reference = `${pack}.time`;
  execFileSync('touch', ['-r', pack, reference]);
  chmodSync(pack, 0o644);
  const marked = Buffer.alloc(was.size, 'x');
  const fd = openSync(pack, 'r+');
  writeSync(fd, marked, 0, marked.length, was.offset);
  closeSync(fd);
  chmodSync(pack, 0o444);
  execFileSync('touch', ['-r', reference, pack]);
  rmSync(reference);
  const b = await deploy({ 'index.html': '<h1>b</h1>', 'app.js': js });
  const index = (await fileIndexOf(b.root))!;
  assert.is(index.files['app.js']!.br!.path, variantsPack(b.root));
  assert.ok(inPack(index.files['app.js']!.br!).equals(marked), 'copied, not compressed');
  await deployer.remove(a.id);
  assert.ok(inPack(index.files['app.js']!.br!).equals(marked), 'in its own pack');
  assert.ok(gunzipSync(inPack(index.files['app.js']!.gzip!)).equals(Buffer.from(js)));
  await deployer.remove(b.id);
});

test('a file shared by two releases is stored once and survives the removal of one of them', async () => {
  const a = await deploy({ 'index.html': '<h1>a</h1>', 'app.js': js });
  const b = await deploy({ 'index.html': '<h1>b</h1>', 'app.js': js });
  const blob = statSync(blobs.pathOf(sha(js)));
  assert.is(statSync(join(a.root, 'app.js')).ino, blob.ino);
  assert.is(statSync(join(b.root, 'app.js')).ino, blob.ino);
  assert.is(blob.mode & 0o777, 0o444, 'blobs are read-only');
  await deployer.remove(a.id);
  assert.not.ok(existsSync(a.root));
  assert.not.ok(existsSync(fileIndexPath(a.root)));
  assert.not.ok(existsSync(variantsPack(a.root)));
  // a's own page is gone from the store; what b uses is still there, whole.
  assert.not.ok(existsSync(blobs.pathOf(sha('<h1>a</h1>'))));
  assert.ok(existsSync(blobs.pathOf(sha(js))));
  assert.is(readFileSync(join(b.root, 'app.js'), 'utf8'), js);
  assert.ok(existsSync(join(b.root, 'index.html')));
  // Garbage collection never takes a blob a live release uses.
  assert.is(await blobs.collect(0), 0);
  assert.is(readFileSync(join(b.root, 'app.js'), 'utf8'), js);
  await deployer.remove(b.id);
  assert.equal(storeContents(), [], 'the last release gone, the store is empty');
});

test('garbage collection removes blobs no release links to', async () => {
  const a = await deploy({ 'index.html': 'kept page' });
  const b = await deploy({ 'index.html': 'orphaned page', 'app.js': js });
  // As if b's directory went without its blobs being released (a crash during remove, an older version).
  const { rm } = await import('node:fs/promises');
  await rm(b.root, { recursive: true });
  assert.ok(existsSync(blobs.pathOf(sha('orphaned page'))));
  // The deployer's own collection keeps what is still in its grace period.
  assert.is(await deployer.collectGarbage!(), 0);
  assert.is(await blobs.collect(0), 2, 'page and script (their variants are in the pack, not blobs)');
  assert.equal(storeContents(), [sha('kept page')]);
  assert.is(readFileSync(join(a.root, 'index.html'), 'utf8'), 'kept page');
  await deployer.remove(a.id);
  await deployer.remove(b.id);
});

test('the index has sizes, types, strong ETags, and variants only for compressible files of 1 KB or more', async () => {
  const svg = `<svg xmlns="http://www.w3.org/2000/svg">${'<g/>'.repeat(400)}</svg>`;
  const r = await deploy({
    'index.html': '<h1>small</h1>',
    'app.js': js,
    'style.css': css,
    'logo.png': png,
    'docs/logo.svg': svg,
    'data.json': JSON.stringify({ list: Array.from({ length: 300 }, (_, i) => i) }),
    'copy.js': js,
  });
  const index = (await fileIndexOf(r.root))!;
  assert.ok(index);
  assert.equal(Object.keys(index.files).sort(), [
    'app.js',
    'copy.js',
    'data.json',
    'docs/logo.svg',
    'index.html',
    'logo.png',
    'style.css',
  ]);
  const html = index.files['index.html']!;
  assert.is(html.size, 14);
  assert.is(html.type, 'text/html; charset=utf-8');
  assert.is(html.etag, `"${sha('<h1>small</h1>')}"`);
  assert.is(html.mtimeMs, statSync(join(r.root, 'index.html')).mtimeMs);
  assert.is(html.br, undefined, 'under 1 KB: not compressed');
  assert.is(index.files['style.css']!.type, 'text/css; charset=utf-8');
  assert.is(index.files['style.css']!.gzip, undefined);
  assert.is(index.files['logo.png']!.type, 'image/png');
  assert.is(index.files['logo.png']!.br, undefined, 'not compressible');
  assert.is(index.files['docs/logo.svg']!.type, 'image/svg+xml');
  assert.is(index.files['data.json']!.type, 'application/json; charset=utf-8');
  for (const path of ['app.js', 'copy.js', 'docs/logo.svg', 'data.json']) {
    const file = index.files[path]!;
    const original = readFileSync(join(r.root, path));
    assert.is(file.size, original.length, path);
    assert.ok(file.br && file.gzip, `${path} has both variants`);
    assert.is(file.br.path, variantsPack(r.root));
    assert.ok(file.br.size < file.size && file.gzip.size < file.size, path);
    assert.equal(brotliDecompressSync(inPack(file.br)), original, `${path} brotli`);
    assert.equal(gunzipSync(inPack(file.gzip)), original, `${path} gzip`);
  }
  assert.is(index.files['app.js']!.type, 'application/javascript; charset=utf-8');
  assert.equal(index.files['copy.js']!.br, index.files['app.js']!.br, 'same content, same variant');
  // The deploy made the release's 7 files (6 blobs: two share one), its index and one pack.
  const releases = readdirSync(join(kernel.config.dataDir, 'releases')).filter((p) => p.startsWith(r.id));
  assert.equal(releases.sort(), [r.id, `${r.id}.index.json`, `${r.id}.variants.pack`]);
  assert.not.ok(
    storeContents().some((name) => /\.(br|gz)$/.test(name)),
    'no variant blob',
  );
  await deployer.remove(r.id);
  assert.not.ok(existsSync(variantsPack(r.root)));
  assert.not.ok(existsSync(fileIndexPath(r.root)));
});

test('a static release is ready before its variants, which follow into its pack and index', async () => {
  const s = await spec(await zipOf({ 'index.html': '<h1>soon</h1>', 'app.js': js, 'logo.png': png }));
  const target = (await deployer.prepare(s, control())) as { root: string };
  // As prepare left it: every file in place, the index marked as waiting for its variants.
  const ready = JSON.parse(readFileSync(fileIndexPath(target.root), 'utf8'));
  assert.type(ready.variantsPending, 'number');
  assert.is(readFileSync(join(target.root, 'app.js'), 'utf8'), js);
  assert.is(ready.files['app.js'].etag, `"${sha(js)}"`);
  await (deployer as LocalDeployer).variantsMade(s.deploymentId);
  const made = JSON.parse(readFileSync(fileIndexPath(target.root), 'utf8'));
  assert.is(made.variantsPending, undefined);
  assert.equal(Object.keys(made.files), Object.keys(ready.files), 'the same files');
  const app = made.files['app.js'];
  assert.is(app.br.path, `${s.deploymentId}.variants.pack`);
  const { br, gzip } = (await fileIndexOf(target.root))!.files['app.js']!;
  assert.is(brotliDecompressSync(inPack(br!)).toString(), js);
  assert.is(gunzipSync(inPack(gzip!)).toString(), js);
  assert.is(made.files['logo.png'].br, undefined, 'not compressible');
  await deployer.remove(s.deploymentId);
});

test('a release removed while its variants are made, or wait their turn, leaves nothing behind', async () => {
  const before = storeContents();
  // Enough text that the variants are still being made when remove() comes; the second's wait for the first's.
  const site = (name: string) => {
    const many: Record<string, string> = { 'index.html': `<h1>${name}</h1>` };
    for (let i = 0; i < 40; i++) many[`assets/f${i}.js`] = `/* ${name} ${i} */ ${randomBytes(6000).toString('base64')}`;
    return zipOf(many);
  };
  const [first, second] = [await spec(await site('first')), await spec(await site('second'))];
  await deployer.prepare(first, control());
  await deployer.prepare(second, control());
  await deployer.remove(second.deploymentId);
  await deployer.remove(first.deploymentId);
  for (const s of [first, second]) {
    const left = readdirSync(join(kernel.config.dataDir, 'releases')).filter((p) => p.startsWith(s.deploymentId));
    assert.equal(left, [], 'no directory, index or pack');
  }
  // Nothing comes back once the line has run.
  await (deployer as LocalDeployer).variantsMade(second.deploymentId);
  await new Promise((r) => setTimeout(r, 50));
  assert.equal(
    readdirSync(join(kernel.config.dataDir, 'releases')).filter(
      (p) => p.startsWith(first.deploymentId) || p.startsWith(second.deploymentId),
    ),
    [],
  );
  assert.equal(storeContents(), before);
});

test('variants a stop cut off are made when the release is restored', async () => {
  const s = await spec(await zipOf({ 'index.html': '<h1>restored</h1>', 'app.js': js }));
  const { root } = (await deployer.prepare(s, control())) as { root: string };
  await (deployer as LocalDeployer).variantsMade(s.deploymentId);
  // As a stop in the middle leaves it: the index still waiting, part of a pack.
  const index = JSON.parse(readFileSync(fileIndexPath(root), 'utf8'));
  for (const file of Object.values(index.files) as { br?: unknown; gzip?: unknown }[]) {
    delete file.br;
    delete file.gzip;
  }
  rmSync(variantsPack(root));
  writeFileSync(variantsPack(root), 'half a pack');
  await saveFileIndex(root, { ...index, variantsPending: Date.now() - 120_000 });
  await deployer.restore([s], new RecordedReports());
  await (deployer as LocalDeployer).variantsMade(s.deploymentId);
  const made = JSON.parse(readFileSync(fileIndexPath(root), 'utf8'));
  assert.is(made.variantsPending, undefined);
  const br = { ...made.files['app.js'].br, path: variantsPack(root) };
  assert.is(brotliDecompressSync(inPack(br)).toString(), js);
  await deployer.remove(s.deploymentId);
});

test("a Node.js release is links to its project's own store, no variants: no other account's link counts", async () => {
  const server = 'require("http").createServer((q, s) => s.end("ok")).listen(process.env.PORT)';
  const site = await deploy({ 'index.html': '<h1>shared</h1>', 'big.js': js });
  const node = async (projectId?: string) => {
    const s = {
      ...(await spec(await zipOf({ 'server.js': server, 'big.js': js }), 'node')),
      ...(projectId && { projectId }),
    };
    await deployer.prepare(s, control());
    return { s, root: join(kernel.config.dataDir, 'releases', s.deploymentId) };
  };
  const a = await node();
  const own = new BlobStore(join(kernel.config.dataDir, 'project-blobs', a.s.projectId));
  assert.is(statSync(join(a.root, 'big.js')).ino, statSync(own.pathOf(sha(js))).ino);
  // The app sees its own releases' links only: not the static site's, nor another project's.
  assert.is(statSync(join(a.root, 'big.js')).nlink, 2);
  const b = await node();
  assert.is(statSync(join(b.root, 'big.js')).nlink, 2, "another project's release is not counted");
  assert.is.not(statSync(join(b.root, 'big.js')).ino, statSync(join(a.root, 'big.js')).ino);
  const again = await node(a.s.projectId);
  assert.is(statSync(join(again.root, 'big.js')).ino, statSync(join(a.root, 'big.js')).ino, 'shared in its project');
  assert.not.ok(existsSync(variantsPack(a.root)));
  for (const r of [a, b, again]) await deployer.remove(r.s.deploymentId);
  assert.not.ok(existsSync(own.pathOf(sha(js))), "removed with the project's last release");
  assert.ok(existsSync(blobs.pathOf(sha(js))), "the static site's blob stays");
  await deployer.remove(site.id);
});

test('a release stored before packs (each variant a blob) is removed with its blobs', async () => {
  // Written as deployer-local wrote a static release before variant packs.
  const id = randomUUID();
  const root = join(kernel.config.dataDir, 'releases', id);
  const br = brotliCompressSync(js);
  mkdirSync(root);
  mkdirSync(variantsDir(root));
  await blobs.put(sha(js), join(root, 'app.js'), Buffer.from(js));
  await blobs.put(`${sha(js)}.br`, join(variantsDir(root), `${sha(js)}.br`), br);
  const file = { size: js.length, type: 'application/javascript; charset=utf-8', etag: `"${sha(js)}"`, mtimeMs: 1 };
  await saveFileIndex(root, {
    files: { 'app.js': { ...file, br: { path: `${id}.variants/${sha(js)}.br`, size: br.length } } },
  });
  const variant = (await fileIndexOf(root))!.files['app.js']!.br!;
  assert.equal(readFileSync(variant.path), br, 'read as a whole file');
  await deployer.remove(id);
  assert.not.ok(existsSync(variantsDir(root)));
  assert.not.ok(existsSync(blobs.pathOf(`${sha(js)}.br`)), 'its variant blob released');
  assert.equal(storeContents(), []);
  // A variant blob that nothing links to any more is collected too.
  mkdirSync(join(blobs.dir, sha(css).slice(0, 2)), { recursive: true });
  writeFileSync(blobs.pathOf(`${sha(css)}.gz`), 'orphan');
  assert.is(await blobs.collect(0), 1);
  assert.equal(storeContents(), []);
});

const page = { name: 'index.html', data: '<h1>hostile</h1>' };
const hostile: [string, () => Buffer, string][] = [
  ['path traversal', () => rawZip([page, { name: '../evil.html', data: 'x' }]), 'archive_path_traversal'],
  [
    'symbolic link',
    () => rawZip([page, { name: 'p', data: '/etc/passwd', attrs: unixAttrs(0o120777) }]),
    'archive_symlink',
  ],
  ['duplicate names', () => rawZip([page, { name: 'index.html', data: 'other' }]), 'archive_duplicate_entry'],
  ['a later entry whose bytes lie', () => rawZip([page, { name: 'b.js', data: js, crc: 1 }]), 'archive_'],
];
for (const [name, zip, code] of hostile)
  test(`a hostile archive (${name}) fails cleanly with nothing in the store or the releases`, async () => {
    const before = storeContents();
    const releases = readdirSync(join(kernel.config.dataDir, 'releases'));
    const s = await spec(zip());
    const err = await deployer.prepare(s, control()).then(
      () => null,
      (e: unknown) => e,
    );
    assert.instance(err, StageError, String(err));
    assert.ok((err as StageError).code.startsWith(code), (err as StageError).code);
    assert.equal(storeContents(), before);
    assert.equal(readdirSync(join(kernel.config.dataDir, 'releases')), releases);
  });

test.run();
