// Loaded by scripts/test.js (--import) into every test file's process. uvu 0.5 runs a suite's `before` hooks inside a
// try whose `finally` returns: a hook that throws fails every test of the suite and its error is printed nowhere. This
// load hook has uvu print it (to stderr) before it is lost; nothing else of uvu changes.
import { readFile } from 'node:fs/promises';
import { register } from 'node:module';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';

const BEFORE = 'for (hook of before) await hook(state);';
const LOUD =
  'for (hook of before) try { await hook(state); } catch (err) { ' +
  "console.error('\\n  FAIL  a before hook of ' + JSON.stringify(name || 'the file') + ' threw:', err); throw err; }";

if (isMainThread) register(import.meta.url);

/** Node's load hook: uvu's ESM build with BEFORE made LOUD. */
export async function load(url, context, nextLoad) {
  const loaded = await nextLoad(url, context);
  if (!/\/node_modules\/uvu\/dist\/index\.mjs$/.test(url)) return loaded;
  const source = String(loaded.source ?? (await readFile(fileURLToPath(url))));
  return source.includes(BEFORE) ? { ...loaded, source: source.replace(BEFORE, LOUD) } : loaded;
}
