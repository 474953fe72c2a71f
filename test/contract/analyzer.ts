import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { StageError } from '../../core/errors.js';
import type { Analyzer, AnalyzerInput, Detection } from '../../core/ports/analyzer.js';

/** A source tree as an analyzer sees it: file contents by relative path, and the project settings. */
export interface Tree {
  files: Record<string, string>;
  settings?: AnalyzerInput['settings'];
}

/** An analyzer under test, trees it claims and trees it leaves to others. */
export interface AnalyzerUnderTest {
  analyzer: Analyzer;
  /** Trees the analyzer must claim (a Detection). */
  claims: Tree[];
  /** Trees it must not claim: it answers null, or rejects with an `analyze_*` StageError. */
  declines: Tree[];
}

/** The AnalyzerInput of `tree`, counting the files read. */
export function inputOf(tree: Tree): AnalyzerInput & { reads: string[] } {
  const reads: string[] = [];
  return {
    files: Object.keys(tree.files),
    settings: tree.settings ?? {},
    reads,
    readFile: async (path, maxBytes = 1 << 20) => {
      reads.push(path);
      const text = tree.files[path];
      return text === undefined ? null : Buffer.from(text).subarray(0, maxBytes).toString();
    },
  };
}

/** Fails unless `d` is a well-formed Detection whose output directory stays in the tree. */
export function assertDetection(d: Detection): void {
  assert.ok(d.runtime === 'static' || d.runtime === 'node', `runtime ${d.runtime}`);
  assert.type(d.outputDir, 'string');
  assert.ok(!d.outputDir.startsWith('/') && !d.outputDir.split('/').includes('..'), 'outputDir stays in the tree');
  for (const k of ['framework', 'installCommand', 'buildCommand', 'startCommand', 'packageManager', 'nodeVersion'])
    assert.ok(['string', 'object'].includes(typeof d[k as keyof Detection]), `${k} is a string or null`);
  assert.type(d.reasons, 'object');
  for (const why of Object.values(d.reasons)) assert.type(why, 'string');
  assert.ok(Array.isArray(d.warnings), 'warnings is a list');
}

/**
 * The Analyzer contract every analyzer plugin passes: a stable id and a numeric priority; a
 * well-formed Detection for every tree it claims, the same on a second ask; null or an `analyze_*`
 * StageError for a tree it declines; and nothing read but the tree's own files.
 */
export function analyzerContract(name: string, fresh: () => Promise<AnalyzerUnderTest> | AnalyzerUnderTest) {
  const t = suite(`analyzer contract: ${name}`);

  t('an id and a priority', async () => {
    const { analyzer } = await fresh();
    assert.ok(typeof analyzer.id === 'string' && analyzer.id.length > 0);
    assert.ok(Number.isFinite(analyzer.priority));
  });

  t('every tree it claims gets a well-formed detection, the same each time', async () => {
    const { analyzer, claims } = await fresh();
    assert.ok(claims.length > 0, 'the test names at least one tree the analyzer claims');
    for (const tree of claims) {
      const input = inputOf(tree);
      const first = await analyzer.detect(input);
      assert.ok(first, `claims ${Object.keys(tree.files).join(', ')}`);
      assertDetection(first!);
      assert.equal(await analyzer.detect(inputOf(tree)), first);
      for (const path of input.reads) assert.ok(path in tree.files || !path.includes('..'), `reads ${path}`);
    }
  });

  t('a tree it declines gets null or an analyze_* StageError', async () => {
    const { analyzer, declines } = await fresh();
    for (const tree of declines) {
      const answer = await analyzer.detect(inputOf(tree)).catch((err: unknown) => err);
      if (answer === null) continue;
      assert.instance(answer, StageError, `declines ${Object.keys(tree.files).join(', ')}`);
      assert.match((answer as StageError).code, /^analyze_/);
    }
  });

  t.run();
}
