import { execFile } from 'node:child_process';
import { tmpdir } from 'node:os';
import { promisify } from 'node:util';

const FALLBACK = 'https://registry.npmjs.org/';
let cached: Promise<string> | null = null;

/**
 * The registry npm is configured with on this host (`npm config get registry`), read once per
 * process; https://registry.npmjs.org/ when npm cannot tell.
 */
export function defaultNpmRegistry(): Promise<string> {
  cached ??= promisify(execFile)('npm', ['config', 'get', 'registry'], { cwd: tmpdir(), timeout: 15_000 }).then(
    ({ stdout }) => (/^https?:\/\/\S+$/.test(stdout.trim()) ? stdout.trim() : FALLBACK),
    () => FALLBACK,
  );
  return cached;
}
