/** The longest output line a stage error quotes, in characters. */
export const QUOTED_LINE_MAX = 300;

/** Values shorter than this are not masked (as the operation's redaction does: they would blank out words). */
const MIN_SECRET_LENGTH = 4;

/**
 * `line` (a line of tenant output) as a stage error quotes it: every value of `env` (the build's variables, its
 * secrets among them) that is long enough, and its base64, URL and JSON forms, masked as `***` while the line is
 * whole, then cut at QUOTED_LINE_MAX characters with `…`. Masked before the cut: a secret the cut splits would not be
 * recognised by the redaction of the stored message, and its first characters would show.
 */
export function quoteLine(line: string, env: Record<string, string>): string {
  const forms = new Set<string>();
  for (const value of Object.values(env)) {
    for (const v of [value, ...value.split(/\r?\n/)]) {
      if (v.length < MIN_SECRET_LENGTH) continue;
      const b64 = Buffer.from(v).toString('base64');
      for (const form of [v, b64, b64.replace(/=+$/, ''), Buffer.from(v).toString('base64url'), encodeURIComponent(v)])
        forms.add(form);
      forms.add(JSON.stringify(v).slice(1, -1));
    }
  }
  let out = line;
  for (const form of [...forms].filter((f) => f.length >= MIN_SECRET_LENGTH).sort((a, b) => b.length - a.length))
    out = out.split(form).join('***');
  return out.length > QUOTED_LINE_MAX ? `${out.slice(0, QUOTED_LINE_MAX)}…` : out;
}
