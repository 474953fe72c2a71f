import { realpathSync } from 'node:fs';
import { token } from '../tokens.js';

export const REDACTION = token<Redaction>('hoist.Redaction');

/** Values shorter than this are not masked: they would blank out ordinary words and numbers. */
export const MIN_SECRET_LENGTH = 4;

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
// Where a path segment ends: anything a file name would not continue with.
const NAME = `[^/\\s'"\`:;,()<>]+`;

/** How many characters masking may compare for each character of a text (and 64 more): past it, the text is hidden. */
const COMPARES_PER_CHAR = 64;
/** What stands for a text whose masking would compare more than COMPARES_PER_CHAR characters for each of its own. */
export const UNCHECKED = '*** (not shown: it could not be checked for secret values)';

/**
 * The most lines of multi-line values masked on their own (beside each whole value), all values together: each costs
 * its forms, and values of many short lines (a pro plan's 100 values of 32 KiB hold 650,000 lines of 4 characters) made
 * every redactor encode them all.
 */
export const MAX_LINES = 1000;

/**
 * What `v` (at least MIN_SECRET_LENGTH long) may be printed as: itself, base64 (padded or not), base64url, URL and
 * JSON escaping; each at least as long as `v`. Text that is not well-formed (a lone surrogate) has no URL form.
 */
function formsOf(v: string): string[] {
  const b64 = Buffer.from(v).toString('base64');
  const forms = [v, b64, b64.replace(/=+$/, ''), Buffer.from(v).toString('base64url'), JSON.stringify(v).slice(1, -1)];
  try {
    forms.push(encodeURIComponent(v));
  } catch {
    // URIError: not well-formed
  }
  return forms;
}

/** A number for the two UTF-16 code units of `s` at `i`. */
const pairAt = (s: string, i: number) => ((s.charCodeAt(i) << 16) | s.charCodeAt(i + 1)) >>> 0;

/**
 * Secret values (each at least MIN_SECRET_LENGTH long) found in a text by a lookup of their first two characters at
 * each position, then a comparison of the rest, the longest first: what a RegExp of all of them matched, without one.
 * That RegExp was compiled on the event loop of the process that masked (a worker; the API, for a page of
 * deployments): 2 s for a free plan's 20 values of 4 KiB, 7 s for a page of two such deployments, and past about
 * 1.5 MB of forms (10 values of a pro plan's 32 KiB) V8 refused it ("Regular expression too large"), failing every
 * build. The comparisons are bounded (COMPARES_PER_CHAR): values made to resemble the text cannot make it slow.
 */
class SecretForms {
  private readonly byStart = new Map<number, string[]>();
  /** The lists `add` changed since `mask` last sorted them. */
  private readonly unsorted = new Set<string[]>();
  private readonly known = new Set<string>();

  /** Adds a form (at least MIN_SECRET_LENGTH long) to look for; one known already is ignored. */
  add(form: string): void {
    if (this.known.has(form)) return;
    this.known.add(form);
    const key = pairAt(form, 0);
    let same = this.byStart.get(key);
    if (!same) this.byStart.set(key, (same = []));
    same.push(form);
    this.unsorted.add(same);
  }

  /** `text` with each value found `***`, leftmost first, then longest; UNCHECKED past the comparisons allowed. */
  mask(text: string): string {
    for (const same of this.unsorted) same.sort((a, b) => b.length - a.length);
    this.unsorted.clear();
    let out = '';
    let last = 0;
    let left = COMPARES_PER_CHAR * (text.length + 64);
    for (let i = 0; i <= text.length - MIN_SECRET_LENGTH; i++) {
      const same = this.byStart.get(pairAt(text, i));
      if (!same) continue;
      for (const form of same) {
        let k = 2;
        if (form.length <= text.length - i)
          while (k < form.length && text.charCodeAt(i + k) === form.charCodeAt(k)) k++;
        left -= k;
        if (left < 0) return UNCHECKED;
        if (k === form.length) {
          out += `${text.slice(last, i)}***`;
          last = i + k;
          i = last - 1;
          break;
        }
      }
    }
    return last === 0 ? text : out + text.slice(last);
  }
}

/**
 * Rewrites text a user will see (build-log lines, stage errors, release failures): the server's
 * data directory, workspaces and release directories become `<data>`, `<work>`, `<workspace>` (a
 * build's source tree) and `<release>`; then every secret value, longest first, and its common
 * encodings (base64, URL and JSON escaping) become `***`. Paths go first, so a secret that happens
 * to be part of the data directory's path cannot leave the rest of the path readable.
 */
export class Redactor {
  /** The values, and the lines of multi-line ones (MAX_LINES in all), distinct, shortest first. */
  private readonly items: string[];
  /** How many of `items` have their forms in `secrets`. */
  private formed = 0;
  private readonly secrets = new SecretForms();

  constructor(
    private readonly paths: RegExp | null,
    private readonly values: string[] = [],
  ) {
    const items = new Set<string>();
    let lines = 0;
    for (const value of values) {
      if (value.length >= MIN_SECRET_LENGTH) items.add(value);
      // A multi-line value is printed line by line as often as whole: each line is masked too.
      if (!value.includes('\n')) continue;
      for (const line of value.split(/\r?\n/))
        if (line.length >= MIN_SECRET_LENGTH && lines < MAX_LINES && !items.has(line)) {
          items.add(line);
          lines++;
        }
    }
    this.items = [...items].sort((a, b) => a.length - b.length);
  }

  /** The text with server paths named neutrally and secret values masked. */
  text(s: string): string {
    let out = s;
    if (this.paths)
      out = out.replace(this.paths, (_m, work?: string, sub?: string, release?: string) =>
        release ? '<release>' : work ? (sub === 'src' ? '<workspace>' : sub ? '<release>' : '<work>') : '<data>',
      );
    if (!this.items.length) return out;
    // Every form of a value is at least as long as the value: longer ones cannot be in `out`, and wait for a text
    // long enough (a page of deployments does not encode every value of 32 KiB for each message it masks).
    while (this.formed < this.items.length && this.items[this.formed].length <= out.length)
      for (const form of formsOf(this.items[this.formed++])) this.secrets.add(form);
    return this.secrets.mask(out);
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
