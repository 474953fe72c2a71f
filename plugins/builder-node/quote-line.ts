/** The longest output line a stage error quotes, in characters. */
export const QUOTED_LINE_MAX = 300;

/**
 * `line` (a line of tenant output) as a stage error quotes it: redacted with `redact` (the operation's redaction)
 * while it is whole, then cut at QUOTED_LINE_MAX characters with `…`. Redacted before the cut: a secret the cut splits
 * would not be recognised by the redaction of the stored message, and its first characters would show.
 */
export function quoteLine(line: string, redact: (text: string) => string = (text) => text): string {
  const out = redact(line);
  return out.length > QUOTED_LINE_MAX ? `${out.slice(0, QUOTED_LINE_MAX)}…` : out;
}
