import { existsSync, readFileSync } from 'node:fs';
import { dirname, isAbsolute, resolve } from 'node:path';
import { settings, type ConfigKey, type HoistConfig, type Setting } from './schema.js';

/** Raised at start-up for a configuration value that cannot be used; the message names the key. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

function coerce(key: string, source: string, s: Setting, raw: unknown): string | number | boolean {
  const where = `${key} (${source})`;
  if (s.type === 'integer') {
    const n = typeof raw === 'number' ? raw : typeof raw === 'string' && /^-?\d+$/.test(raw.trim()) ? Number(raw) : NaN;
    if (!Number.isSafeInteger(n))
      throw new ConfigError(`config: ${where} must be an integer, got ${JSON.stringify(raw)}`);
    if (s.min !== undefined && n < s.min) throw new ConfigError(`config: ${where} must be >= ${s.min}, got ${n}`);
    if (s.max !== undefined && n > s.max) throw new ConfigError(`config: ${where} must be <= ${s.max}, got ${n}`);
    return n;
  }
  if (s.type === 'boolean') {
    if (typeof raw === 'boolean') return raw;
    if (raw === 'true' || raw === '1') return true;
    if (raw === 'false' || raw === '0') return false;
    throw new ConfigError(`config: ${where} must be true or false, got ${JSON.stringify(raw)}`);
  }
  if (typeof raw !== 'string' || raw === '') throw new ConfigError(`config: ${where} must be a non-empty string`);
  if (s.oneOf && !s.oneOf.includes(raw))
    throw new ConfigError(`config: ${where} must be one of ${s.oneOf.join(', ')}, got ${JSON.stringify(raw)}`);
  return raw;
}

// Secrets that are not secret: what example files and guides ship, and docker-compose.yml once did.
const PLACEHOLDER = /^(change[-_ .]?me|changeit|replace[-_ .]?me|placeholder|your[-_ .]|example|secret$|password$)/i;
const KNOWN_PLACEHOLDERS = new Set([
  'change-me-to-32-or-more-random-bytes!!',
  'k1:Y2hhbmdlLW1lLXRvLTMyLXJhbmRvbS1ieXRlcyEhISE=',
]);
const isPlaceholder = (text: string) =>
  PLACEHOLDER.test(text.trim()) || KNOWN_PLACEHOLDERS.has(text.trim()) || /^(.)\1*$/s.test(text);

/**
 * Why a secret cannot be used (a placeholder, too short, a key of the wrong size), or null. The
 * value itself never appears in the answer.
 */
function secretProblem(s: Setting, value: string): string | null {
  if (isPlaceholder(value)) return 'is a placeholder, not a secret';
  if (s.minBytes !== undefined && Buffer.byteLength(value) < s.minBytes)
    return `must be at least ${s.minBytes} bytes, got ${Buffer.byteLength(value)}`;
  if (s.keyBytes !== undefined) {
    for (const [i, entry] of value.split(',').entries()) {
      const at = entry.indexOf(':');
      if (at < 1) return `entry ${i + 1} must be id:base64`;
      const text = entry.slice(at + 1).trim();
      const key = Buffer.from(text, /[-_]/.test(text) ? 'base64url' : 'base64');
      if (key.length !== s.keyBytes)
        return `entry ${i + 1} must be a key of ${s.keyBytes} bytes (base64), got ${key.length}`;
      if (isPlaceholder(key.toString('latin1'))) return `entry ${i + 1} is a placeholder, not a key`;
    }
  }
  return null;
}

/** A plugin list with its relative paths (`./x`, `../x`) made absolute from `base`; package names stay. */
function pluginPaths(list: string, base: string): string {
  return list
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map((p) => (p.startsWith('.') || isAbsolute(p) ? resolve(base, p) : p))
    .join(',');
}

/**
 * Reads the configuration: defaults from `config/schema.ts`, then the JSON file named by
 * `HOIST_CONFIG` (or `./hoist.config.json` when present), then `HOIST_*` environment variables.
 * Throws ConfigError naming the key for an unknown key or a bad value, and for a secret that is a
 * placeholder or shorter than its `minBytes` (or a key not of `keyBytes`), with the command that
 * generates a good one.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, overrides: Partial<HoistConfig> = {}): HoistConfig {
  const out: Record<string, unknown> = {};
  for (const [k, s] of Object.entries(settings) as [ConfigKey, Setting][])
    if (s.default !== undefined) out[k] = s.default;

  const file = env.HOIST_CONFIG ?? (existsSync('hoist.config.json') ? 'hoist.config.json' : undefined);
  if (file) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new ConfigError(`config: cannot read ${file}: ${(err as Error).message}`);
    }
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new ConfigError(`config: ${file} must hold a JSON object`);
    for (const [k, v] of Object.entries(parsed)) {
      const s = (settings as Record<string, Setting>)[k];
      if (!s) throw new ConfigError(`config: unknown key ${JSON.stringify(k)} in ${file}`);
      const value = k === 'plugins' && Array.isArray(v) ? v.join(',') : v;
      out[k] = coerce(k, file, s, value);
      if (k === 'plugins') out[k] = pluginPaths(String(out[k]), dirname(resolve(file)));
    }
  }
  for (const [k, s] of Object.entries(settings) as [ConfigKey, Setting][]) {
    const v = env[s.env];
    if (v !== undefined && v !== '') out[k] = coerce(k, s.env, s, v);
  }
  if (env.HOIST_PLUGINS) out.plugins = pluginPaths(env.HOIST_PLUGINS, process.cwd());
  for (const [k, v] of Object.entries(overrides)) if (v !== undefined) out[k] = v;
  for (const [k, s] of Object.entries(settings) as [ConfigKey, Setting][]) {
    // The secrets Hoist itself can generate (the others, a database URL or an S3 key, come from their servers).
    const ours = s.type === 'secret' && (s.minBytes !== undefined || s.keyBytes !== undefined);
    const problem = ours && typeof out[k] === 'string' ? secretProblem(s, out[k]) : null;
    if (problem)
      throw new ConfigError(
        `config: ${k} (${s.env}) ${problem}; generate one with \`npx hoist secrets --env ${s.env}\``,
      );
  }

  const cfg = out as HoistConfig;
  cfg.dataDir = resolve(cfg.dataDir);
  return cfg;
}
