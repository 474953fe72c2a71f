/**
 * The longest engines.node, .nvmrc, .node-version or packageManager value Hoist reads, in characters: a longer one is
 * an analysis error naming it (a megabyte of range held semver, and so the worker, for most of a second).
 */
export const FIELD_MAX = 256;

/** The most of a project's own text (a script, a field) a reason or a warning quotes, in characters. */
export const QUOTE_MAX = 200;

/** `text` as a reason or a warning quotes it: cut at QUOTE_MAX characters, with `…`. */
export function quoted(text: string): string {
  return text.length > QUOTE_MAX ? `${text.slice(0, QUOTE_MAX)}…` : text;
}
