/** One rule of a `_redirects` file (site-rules.cjs says what each part means). */
export interface RedirectRule {
  /** A path: literal segments, `:name` placeholders and a final `*`. */
  from: string;
  /** A path or an http(s) URL, with `:name` and `:splat` replaced by what they matched. */
  to: string;
  /** 301, 302, 303, 307 or 308 redirect; 200 rewrites; 404 and 410 answer with `to` and that status. */
  status: 200 | 301 | 302 | 303 | 307 | 308 | 404 | 410;
  /** Applies even where a file answers the path (`!` after the status). */
  force: boolean;
}

/** A line of a `_redirects` or `_headers` file that was refused (line 0: the file as a whole), and why. */
export interface RedirectError {
  line: number;
  message: string;
}

/** Parses the text of a `_redirects` file: its rules in order, and what was refused. */
export function parseRedirects(text: string): { rules: RedirectRule[]; errors: RedirectError[] };

/**
 * The first of `rules` that applies to `pathname` (as sent, without its query), with its `to` filled in; only forced
 * rules when `fileFound`. Null when none applies.
 */
export function matchRedirect(
  rules: readonly RedirectRule[],
  pathname: string,
  fileFound: boolean,
): { rule: RedirectRule; to: string } | null;

/**
 * The Location of a redirect by `rule` to `to` for a request whose query is `query` ('' or `?...`): the query goes
 * along unless `to` has its own; a path the request made start with `//` or `/\` starts with one `/`.
 */
export function locationOf(rule: RedirectRule, to: string, query: string): string;

/** One rule of a `_headers` file: a path (as `from` of a redirect) and the headers it sets, names in lower case. */
export interface HeaderRule {
  path: string;
  headers: [name: string, value: string][];
}

/** Parses the text of a `_headers` file: its rules in order, and what was refused. */
export function parseHeaders(text: string): { rules: HeaderRule[]; errors: RedirectError[] };

/**
 * The headers `rules` give the answer for `pathname` (as sent, without its query), by lower-case name, the values of
 * several rules joined with `, `; null when no rule matches.
 */
export function matchHeaders(rules: readonly HeaderRule[], pathname: string): Record<string, string> | null;

/**
 * Whether header `name` (lower case) instructs a proxy in front of Hoist (X-Accel-*, X-Sendfile): no tenant's answer
 * may carry one.
 */
export function isProxyInstruction(name: string): boolean;
/** Whether a `Clear-Site-Data` value names "cookies" (or "*"): the cookies of every host of the registrable domain. */
export function clearsCookies(value: string): boolean;

/** The most paths a `_headers` file may hold. */
export const MAX_HEADER_RULES: number;
/** The headers file's name, at the root of the site. */
export const HEADERS_FILE: '_headers';

/** The largest `_redirects` or `_headers` file read, in bytes. */
export const MAX_BYTES: number;
/** The most rules a `_redirects` file may hold. */
export const MAX_RULES: number;
/** The most of them with placeholders or a splat. */
export const MAX_DYNAMIC_RULES: number;
/** The file's name, at the root of the site. */
export const REDIRECTS_FILE: '_redirects';
