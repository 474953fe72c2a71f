import { realpathSync } from 'node:fs';
import { token } from '../tokens.js';

export const REDACTION = token<Redaction>('hoist.Redaction');

/** Values shorter than this are not masked: they would blank out ordinary words and numbers. */
export const MIN_SECRET_LENGTH = 4;

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
// Where a path segment ends: anything a file name would not continue with.
const NAME = `[^/\\s'"\`:;,()<>]+`;

/**
 * Rewrites text a user will see (build-log lines, stage errors, release failures): the server's
 * data directory, workspaces and release directories become `<data>`, `<work>`, `<workspace>` (a
 * build's source tree) and `<release>`; then every secret value, longest first, and its common
 * encodings (base64, URL and JSON escaping) become `***`. Paths go first, so a secret that happens
 * to be part of the data directory's path cannot leave the rest of the path readable.
 */
export class Redactor {
  private readonly secrets: RegExp | null;

  constructor(
    private readonly paths: RegExp | null,
    private readonly values: string[] = [],
  ) {
    const variants = new Set<string>();
    for (const value of values) {
      // A multi-line value is printed line by line as often as whole: each line is masked too.
      for (const v of [value, ...value.split(/\r?\n/)]) {
        if (v.length < MIN_SECRET_LENGTH) continue;
        const b64 = Buffer.from(v).toString('base64');
        for (const form of [
          v,
          b64,
          b64.replace(/=+$/, ''),
          Buffer.from(v).toString('base64url'),
          encodeURIComponent(v),
          JSON.stringify(v).slice(1, -1),
        ])
          variants.add(form);
      }
    }
    const sorted = [...variants].filter((v) => v.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length);
    this.secrets = sorted.length ? new RegExp(sorted.map(escape).join('|'), 'g') : null;
  }

  /** The text with server paths named neutrally and secret values masked. */
  text(s: string): string {
    let out = s;
    if (this.paths)
      out = out.replace(this.paths, (_m, work?: string, sub?: string, release?: string) =>
        release ? '<release>' : work ? (sub === 'src' ? '<workspace>' : sub ? '<release>' : '<work>') : '<data>',
      );
    if (this.secrets) out = out.replace(this.secrets, '***');
    return out;
  }

  /** This redactor, also masking `values`. */
  withSecrets(values: string[]): Redactor {
    return new Redactor(this.paths, [...this.values, ...values]);
  }
}

/**
 * The redactors of one Hoist: paths under its data directory (as configured and as resolved
 * through links) and, per operation, the values of the environment it ran with.
 */
export class Redaction {
  /** Server paths only: for text no tenant code with secrets produced. */
  readonly paths: Redactor;
  private readonly pattern: RegExp;

  constructor(
    dataDir: string,
    private readonly environment: { valuesOf(operationId: string, projectId: string): Promise<string[]> },
  ) {
    const dirs = new Set([dataDir.replace(/\/+$/, '')]);
    try {
      dirs.add(realpathSync(dataDir));
    } catch {
      // not created yet: the configured path is the only one
    }
    const roots = [...dirs]
      .sort((a, b) => b.length - a.length)
      .map(escape)
      .join('|');
    // <data>/work/<label>-<random>[/src|/release], <data>/releases/<id>, or <data> itself; not a longer sibling
    // (<data>-old).
    this.pattern = new RegExp(
      `(?:${roots})(?:/work/(${NAME})(?:/(src|release)(?![^/\\s'"\`:;,()<>]))?|/releases/(${NAME}))?(?![\\w.-])`,
      'g',
    );
    this.paths = new Redactor(this.pattern);
  }

  /** Paths, and the values of the operation's environment snapshot (none before it took one). */
  async forOperation(operationId: string, projectId: string | null): Promise<Redactor> {
    const values = projectId ? await this.environment.valuesOf(operationId, projectId).catch(() => []) : [];
    return new Redactor(this.pattern, values);
  }
}
