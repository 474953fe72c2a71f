import { mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Detection } from '../../core/ports/analyzer.js';
import type { Builder } from '../../core/ports/builder.js';

/** A source tree, the detection its analyzer made, and files the output must hold. */
export interface BuildCase {
  files: Record<string, string>;
  detection: Detection;
  /** Relative paths in the output directory after the build. */
  outputs: string[];
}

/** A builder under test, what it builds and detections it leaves to other builders. */
export interface BuilderUnderTest {
  builder: Builder;
  builds: BuildCase[];
  /** Detections `supports` must refuse. */
  refuses: Detection[];
  cleanup?(): Promise<void>;
}

/** A Detection of `runtime` with nothing to run, changed by `over`. */
export const detection = (over: Partial<Detection> = {}): Detection => ({
  runtime: 'static',
  framework: null,
  outputDir: '.',
  installCommand: null,
  buildCommand: null,
  startCommand: null,
  packageManager: null,
  nodeVersion: null,
  reasons: {},
  warnings: [],
  ...over,
});

/** Every file under `dir`, relative and `/`-separated. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join('/'));
}

/**
 * The Builder contract every builder plugin passes: it supports what it builds and refuses the
 * rest; a build leaves an output directory inside the workspace holding the expected files, and
 * logs through `log`; `outputWithoutBuild`, when present, agrees with `build` on the output.
 */
export function builderContract(name: string, fresh: () => Promise<BuilderUnderTest> | BuilderUnderTest) {
  const t = suite(`builder contract: ${name}`);

  t('supports what it builds, refuses the rest', async () => {
    const b = await fresh();
    try {
      assert.ok(typeof b.builder.id === 'string' && b.builder.id.length > 0);
      for (const c of b.builds) assert.ok(b.builder.supports(c.detection), `supports ${JSON.stringify(c.detection)}`);
      for (const d of b.refuses) assert.not.ok(b.builder.supports(d), `refuses ${JSON.stringify(d)}`);
    } finally {
      await b.cleanup?.();
    }
  });

  t('a build leaves the expected files in an output directory inside the workspace', async () => {
    const b = await fresh();
    const root = await mkdtemp(join(tmpdir(), 'hoist-builder-contract-'));
    try {
      assert.ok(b.builds.length > 0, 'the test names at least one build');
      for (const [i, c] of b.builds.entries()) {
        const workspace = join(root, String(i));
        for (const [path, text] of Object.entries(c.files)) {
          await mkdir(dirname(join(workspace, path)), { recursive: true });
          await writeFile(join(workspace, path), text);
        }
        const lines: string[] = [];
        const { outputDir } = await b.builder.build({
          workspace,
          detection: c.detection,
          env: {},
          signal: new AbortController().signal,
          log: (line) => lines.push(line),
          progress: (f) => assert.ok(f >= 0 && f <= 1, `progress ${f}`),
        });
        assert.ok(outputDir === workspace || outputDir.startsWith(workspace + sep), 'output inside the workspace');
        const out = await filesUnder(outputDir);
        for (const path of c.outputs) assert.ok(out.includes(path), `${path} in the output (${out.join(', ')})`);
        assert.ok(lines.every((l) => typeof l === 'string'));
        const direct = b.builder.outputWithoutBuild?.({
          detection: c.detection,
          files: Object.keys(c.files),
          log() {},
        });
        if (direct) assert.is(join(workspace, direct), outputDir, 'outputWithoutBuild names the same directory');
      }
    } finally {
      await rm(root, { recursive: true, force: true });
      await b.cleanup?.();
    }
  });

  t.run();
}
