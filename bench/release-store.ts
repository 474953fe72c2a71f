// Deploy-time work of a static release on deployer-local: each file out of the artifact ZIP, hashed into the
// content-addressed store (plugins/shared/release/blob-store.ts), its file index and its brotli/gzip variants, for a
// 1 MB, 50-file site (30 text files of 20 KB cut from fastify's JavaScript, 20 incompressible ones), at several
// brotli qualities: cold (a new store: every file written) and warm (a redeploy: every blob there; the variants
// copied out of the cold release's pack into the new one, as deployer-local does, nothing compressed again).
// Run: node --import tsx bench/release-store.ts [rounds]   Prints figures; never fails on the clock.
import { randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ZipArchive } from '../plugins/archive-zip/zip-archive.js';
import { BlobStore } from '../plugins/shared/release/blob-store.js';
import { BROTLI_QUALITY, storeReleaseFiles } from '../plugins/shared/release/release-files.js';
import { KnownVariantsMemory } from '../plugins/shared/release/known-variants.js';
import { variantsPack } from '../core/ports/file-index.js';

const ROUNDS = Number(process.argv[2] ?? 5);
const root = mkdtempSync(join(tmpdir(), 'hoist-bench-store-'));
const site = join(root, 'site');
// Real source text (the JavaScript of installed packages), 20 KB a file, each file different.
const corpus = readdirSync('node_modules/fastify/lib')
  .filter((f) => f.endsWith('.js'))
  .map((f) => readFileSync(join('node_modules/fastify/lib', f), 'utf8'))
  .join('\n');
mkdirSync(join(site, 'assets'), { recursive: true });
for (let i = 0; i < 30; i++) {
  const ext = ['js', 'css', 'html'][i % 3];
  const at = (i * 7919) % Math.max(1, corpus.length - 20_000);
  writeFileSync(join(site, 'assets', `file-${i}.${ext}`), `/* ${i} */\n${corpus.slice(at, at + 20_000)}`);
}
for (let i = 0; i < 20; i++) writeFileSync(join(site, 'assets', `image-${i}.png`), randomBytes(20_000));

// The release's artifact, as deployer-local reads it: files come out of the ZIP into the store.
const archive = new ZipArchive();
const zip = join(root, 'site.zip');
await archive.pack(site, zip);
const manifest = await archive.inspect(zip, {});

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
let n = 0;
/**
 * Wall and CPU time (the process's, zlib's pool threads included) of one release's files, copying the variants
 * `memory` knows (and learning the release's, outside the time).
 */
async function once(
  store: BlobStore,
  quality: number,
  precompress = true,
  memory = new KnownVariantsMemory(),
): Promise<[number, number]> {
  const release = join(root, `release-${++n}`);
  const start = performance.now();
  const cpu = process.cpuUsage();
  const files = (fn: Parameters<ZipArchive['each']>[2]) => archive.each(zip, manifest, fn);
  const known = (sha: string) => memory.get(sha);
  const index = await storeReleaseFiles(store, release, files, { precompress, brotliQuality: quality, known });
  const used = process.cpuUsage(cpu);
  const took: [number, number] = [performance.now() - start, (used.user + used.system) / 1000];
  if (precompress) await memory.learn(index, variantsPack(release));
  return took;
}

console.log(
  `release store, 1 MB in 50 files (30 compressible), median of ${ROUNDS}; default quality ${BROTLI_QUALITY}`,
);
console.log(`load average ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} CPUs (wall time suffers from load)`);
console.log('brotli quality | cold wall ms | cold CPU ms | warm wall ms | warm CPU ms');
const cell = (xs: number[], width: number) => median(xs).toFixed(1).padStart(width);
await once(new BlobStore(join(root, 'warm-up')), BROTLI_QUALITY);
// Quality 0 here: no variants at all (what hashing and linking cost alone, as for a Node.js release).
for (const quality of [0, 4, 5, 6, 7, 9, 11]) {
  const runs: [number, number][][] = [[], []];
  for (let r = 0; r < ROUNDS; r++) {
    const store = new BlobStore(join(root, `blobs-${quality}-${r}`));
    const memory = new KnownVariantsMemory();
    runs[0]!.push(await once(store, quality, quality > 0, memory));
    runs[1]!.push(await once(store, quality, quality > 0, memory));
  }
  const [cold, warm] = runs as [[number, number][], [number, number][]];
  console.log(
    `${String(quality).padStart(14)} | ${cell(
      cold.map((x) => x[0]),
      12,
    )} | ${cell(
      cold.map((x) => x[1]),
      11,
    )} | ` +
      `${cell(
        warm.map((x) => x[0]),
        12,
      )} | ${cell(
        warm.map((x) => x[1]),
        11,
      )}`,
  );
}
rmSync(root, { recursive: true, force: true });
