// BuildStage alone, on fakes of its ports and repository: the build record it keeps, the artifact it
// stores, and the upload it packs itself when skip_build left the stage out.
import { existsSync, mkdtempSync } from 'node:fs';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { test } from 'uvu';
import type { UploadOptions } from '../../../../core/entities/version.js';
import * as assert from 'uvu/assert';
import { BuildCaches } from '../../../../core/deployments/build-cache.js';
import { Redactor } from '../../../../core/deployments/redaction.js';
import { BuildStage } from '../../../../core/deployments/stages/build.js';
import { StageError } from '../../../../core/errors.js';
import { systemClock } from '../../../../core/ports/clock.js';
import type { Archive, ArchiveManifest } from '../../../../core/ports/archive.js';
import type { Builder } from '../../../../core/ports/builder.js';
import { FakeBuilds, fakeLog, fakeStorage, stageContext } from './fakes.js';

const FILES = ['index.html', 'src/main.js'];

/** An archive of FILES whatever the ZIP holds; packs a folder as the list of its entries. */
const archive: Archive = {
  inspect: async () => ({
    files: FILES.map((path) => ({ path, size: 1 })),
    prefix: '',
    fileCount: FILES.length,
    totalSize: FILES.length,
    warnings: [],
  }),
  extract: async (_zip, manifest: ArchiveManifest, dest) => {
    for (const f of manifest.files) {
      await mkdir(dirname(join(dest, f.path)), { recursive: true });
      await writeFile(join(dest, f.path), f.path);
    }
  },
  each: async () => {},
  read: async () => ({ readFile: async () => null, close: () => {} }),
  pack: async (src, dest) => writeFile(dest, `packed ${(await readdir(src)).sort().join(',')}`),
};

/** A builder that writes `dist/` (or fails with build_failed when `fail` is set). */
function builder(fail = false): Builder {
  return {
    id: 'fake',
    supports: () => true,
    build: async ({ workspace, log }) => {
      log('building');
      if (fail) throw new StageError('build_failed', 'The build command failed');
      await mkdir(join(workspace, 'dist'));
      await writeFile(join(workspace, 'dist', 'app.js'), 'built');
      return { outputDir: join(workspace, 'dist') };
    },
  };
}

function setup(builders: Builder[] = [builder()], caches?: BuildCaches) {
  const builds = new FakeBuilds();
  const storage = fakeStorage(new Map([['uploads/site.zip', Buffer.from('zip')]]));
  const log = fakeLog();
  const stage = new BuildStage(
    builds,
    storage,
    archive,
    builders,
    { forBuild: async () => ({}) },
    mkdtempSync(join(tmpdir(), 'hoist-build-stage-')),
    { forOperation: async () => new Redactor(null) },
    systemClock,
    log,
    undefined,
    caches,
  );
  return { builds, storage, stage, log };
}

const artifactOf = (storage: ReturnType<typeof fakeStorage>, key: string | null | undefined) =>
  storage.objects.get(key!)?.toString();

test('a build runs the builder, stores its output and log; it succeeds only in the success transaction', async () => {
  const { builds, storage, stage } = setup();
  const ctx = stageContext();
  const result = await stage.run(ctx);
  assert.is(builds.rows.length, 1);
  const [build] = builds.rows;
  assert.is(build.status, 'running');
  assert.is(build.artifactKey, undefined, 'the build names its artifact in the success transaction');
  await result.also!(null as never);
  assert.is(build.status, 'succeeded');
  assert.is(artifactOf(storage, build.artifactKey), 'packed app.js');
  assert.ok(
    build.artifactKey!.startsWith(`artifacts/${ctx.operation.accountId}/sha256/`),
    'only its account shares it',
  );
  assert.ok(build.finished);
  // The whole log is stored after the commit, off the chain's path.
  assert.is(artifactOf(storage, build.logKey), undefined);
  await result.after!();
  assert.match(artifactOf(storage, build.logKey)!, /Building with fake[\s\S]*building[\s\S]*Artifact artifacts\//);
});

test('a failed build is recorded failed with its error and log, and the stage throws it', async () => {
  const { builds, stage } = setup([builder(true)]);
  const err = await stage.run(stageContext()).catch((e: unknown) => e);
  assert.instance(err, StageError);
  const [build] = builds.rows;
  assert.is(build.status, 'failed');
  assert.equal(build.error, { code: 'build_failed', message: 'The build command failed' });
  assert.ok(build.log?.lastLines.some((l) => l.startsWith('Build failed: ')));
});

test('a build log storage refuses is logged as a warning; the build goes on with its summary', async () => {
  const { builds, storage, stage, log } = setup();
  storage.put = async () => Promise.reject(new Error('disk full'));
  const result = await stage.run(stageContext());
  await result.also!(null as never);
  await result.after!();
  assert.is(builds.rows[0].status, 'succeeded');
  assert.ok(builds.rows[0].log?.lastLines.some((l) => l.startsWith('Artifact ')));
  assert.equal(log.warnings, ['the build log was not stored; its summary stays on the build']);
});

test('a builder that needs nothing run ships the upload as the artifact, with the folder to serve', async () => {
  const { builds, storage, stage } = setup([{ ...builder(), outputWithoutBuild: () => 'public' }]);
  const before = [...storage.objects.keys()];
  await (
    await stage.run(stageContext())
  ).also!(null as never);
  const [build] = builds.rows;
  assert.equal(
    [build.artifactKey, build.artifactRoot, build.artifactSha256, build.artifactSize],
    ['uploads/site.zip', 'public', 'x', 1],
  );
  assert.equal(
    [...storage.objects.keys()].filter((k) => !k.startsWith('logs/')),
    before,
    'nothing packed, nothing stored',
  );
  assert.ok(build.log?.lastLines.includes('Artifact: the upload uploads/site.zip, folder public (1 bytes), as it is'));
});

test('the folder of an upload shipped as is lies under its root directory; the whole upload has none', async () => {
  const { builds, stage } = setup([{ ...builder(), outputWithoutBuild: () => 'public/' }]);
  await (
    await stage.run(stageContext({ upload: { root_directory: './site/' } }))
  ).also!(null as never);
  assert.is(builds.rows[0].artifactRoot, 'site/public');
  const whole = setup([{ ...builder(), outputWithoutBuild: () => '.' }]);
  await (
    await whole.stage.run(stageContext())
  ).also!(null as never);
  assert.equal([whole.builds.rows[0].artifactKey, whole.builds.rows[0].artifactRoot], ['uploads/site.zip', null]);
});

test('skip_build: when Deploy starts, Build packs the upload as is, once; a redeploy ships its own build', async () => {
  const { builds, storage, stage } = setup();
  const ctx = stageContext({ upload: { skip_build: true } });
  await stage.skipped(ctx);
  assert.is(builds.rows.length, 1);
  const [build] = builds.rows;
  assert.is(build.status, 'skipped');
  assert.ok(build.finished);
  assert.is(artifactOf(storage, build.artifactKey), 'packed index.html,src', 'the source tree, nothing built');
  assert.equal(await builds.shippable(ctx.operation.id), {
    id: build.id,
    artifactKey: build.artifactKey!,
    artifactRoot: null,
  });

  await stage.skipped(ctx);
  assert.is(builds.rows.length, 1, 'a redelivery packs nothing more');
  await stage.skipped(stageContext({ upload: { skip_build: true }, buildId: build.id }));
  assert.is(builds.rows.length, 1, 'a redeploy packs nothing');
});

test('a promote packs nothing: its release was built into an output directory the upload lacks', async () => {
  const { builds, stage } = setup();
  const ctx = stageContext({ analysis: { outputDir: 'dist' } });
  ctx.operation.state = { promote: 'release-1' };
  await stage.skipped(ctx);
  assert.is(builds.rows.length, 0);
});

test('skip_build with an output directory the upload lacks fails build_output_missing; nothing is stored', async () => {
  const { builds, storage, stage } = setup();
  const before = [...storage.objects.keys()];
  const ctx = stageContext({ upload: { skip_build: true }, analysis: { outputDir: 'dist' } });
  const err = await stage.skipped(ctx).then(
    () => null,
    (e) => e,
  );
  assert.instance(err, StageError);
  assert.is(err.code, 'build_output_missing');
  assert.match(err.message, 'output directory "dist"');
  const stored = [...storage.objects.keys()].filter((k) => !k.startsWith('logs/'));
  assert.equal(stored, before, 'no artifact stored (the failed build keeps its log)');
  assert.not.ok(
    builds.rows.some((b) => b.artifactKey),
    'no build names an artifact',
  );
});

test('abandon cancels the running build; a version without an Analyze result is refused', async () => {
  const { builds, stage } = setup();
  const ctx = stageContext();
  await builds.started(ctx);
  await stage.abandon(ctx);
  assert.is(builds.rows[0].status, 'canceled');
  const err = await stage.run(stageContext({ analysis: null })).catch((e: unknown) => e);
  assert.is((err as StageError).code, 'build_no_analysis');
});

test("a builder gets the account's build cache, kept for its next build; one it fills with a link is not", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-build-stage-cache-'));
  const seen: string[] = [];
  /** Records what the cache held, then adds `name` (a file, or a link when `link`). */
  const caching = (name: string, link = false): Builder => ({
    ...builder(),
    build: async (input) => {
      seen.push((await readdir(input.cache!)).sort().join(','));
      if (link) await symlink('/etc', join(input.cache!, name));
      else await writeFile(join(input.cache!, name), 'downloads');
      return builder().build(input);
    },
  });
  const caches = new BuildCaches(dataDir, 1024 * 1024);
  // Builds of one account.
  const ctx = stageContext();
  const lines = async (b: Builder) => {
    const { builds, stage } = setup([b], caches);
    await (
      await stage.run(ctx)
    ).also!(null as never);
    return builds.rows[0].log!.lastLines;
  };
  const first = await lines(caching('a'));
  assert.ok(first.includes('Build cache: kept for the next build (0.0 MiB).'), first.join('\n'));
  assert.not.ok(first.some((l) => l.startsWith('Build cache: restored')));
  const second = await lines(caching('b', true));
  assert.ok(second.includes('Build cache: restored (what earlier builds of this account kept).'), second.join('\n'));
  assert.ok(
    second.includes('Build cache: not kept; it held something other than folders and regular files.'),
    second.join('\n'),
  );
  await lines(caching('c'));
  assert.equal(seen, ['', 'a', ''], 'the cache with a link was dropped');
  assert.ok(existsSync('/etc/passwd'));
});

/** A builder that notes what its build cache held (`seen`), then leaves a file `name` in it. */
const cachingBuilder =
  (seen: string[]) =>
  (name: string): Builder => ({
    ...builder(),
    build: async (input) => {
      seen.push((await readdir(input.cache!)).sort().join(','));
      await writeFile(join(input.cache!, name), 'what this build left');
      return builder().build(input);
    },
  });

test("clear_cache: the account's cache is dropped; the build starts without one, then leaves its own", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-build-stage-cache-'));
  const caches = new BuildCaches(dataDir, 1024 * 1024);
  const seen: string[] = [];
  const caching = cachingBuilder(seen);
  // Builds of one account.
  const ctx = stageContext();
  const run = async (b: Builder, upload: UploadOptions = {}) => {
    const { builds, stage } = setup([b], caches);
    ctx.version.options = upload;
    await (
      await stage.run(ctx)
    ).also!(null as never);
    return builds.rows[0].log!.lastLines;
  };
  await run(caching('old'));
  const cleared = await run(caching('new'), { clear_cache: true });
  assert.ok(cleared.includes('Build cache: cleared (clear_cache): this build starts without one.'), cleared.join('\n'));
  assert.not.ok(cleared.some((l) => l.startsWith('Build cache: restored')));
  await run(caching('next'));
  assert.equal(seen, ['', '', 'new'], 'the cleared build saw none; the next one sees what it left');
});

test("a preview's build has a cache of its own: what it leaves never reaches a production build", async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-build-stage-cache-'));
  const caches = new BuildCaches(dataDir, 1024 * 1024);
  const seen: string[] = [];
  const caching = cachingBuilder(seen);
  // Builds of one account, as previews and for production in turn.
  const ctx = stageContext();
  const run = async (name: string, target?: 'preview') => {
    const { stage } = setup([caching(name)], caches);
    ctx.version.options = target ? { target } : {};
    await (
      await stage.run(ctx)
    ).also!(null as never);
  };
  await run('from-production');
  await run('from-preview', 'preview');
  await run('from-production-2');
  await run('from-preview-2', 'preview');
  assert.equal(seen, ['', '', 'from-production', 'from-preview'], 'each target sees only what its own builds left');
});

test('a failed build gives its cache back too', async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-build-stage-cache-'));
  const caches = new BuildCaches(dataDir, 1024 * 1024);
  const failing: Builder = {
    ...builder(true),
    build: async (input) => {
      await writeFile(join(input.cache!, 'partial'), 'downloads');
      return builder(true).build(input);
    },
  };
  const { stage } = setup([failing], caches);
  const ctx = stageContext();
  assert.instance(await stage.run(ctx).catch((e: unknown) => e), StageError);
  assert.ok(existsSync(join(dataDir, 'build-cache', ctx.operation.accountId, 'partial')));
});

test.run();
