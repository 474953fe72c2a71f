'use strict';
// A static site's `_redirects` and `_headers` files (Netlify's and Cloudflare Pages' formats). Plain JavaScript
// without dependencies: the edge uses it, and so does the static server of release containers
// (plugins/shared/docker/runtime/static-server.cjs), which gets this file beside it.
//
// Paths (`from` of a redirect, the path of a header rule): literal segments, `:name` placeholders (one segment
// each) and a final `*` (the rest, the empty rest too: `/blog/*` matches `/blog`). A trailing slash does not matter.
//
// `_redirects`: one rule a line, `from to [status][!]`.
// - `to` is a path or an http(s) URL; `:name` and `:splat` are replaced by what they matched (each used once).
// - The status is 301 when absent; 302, 303, 307 and 308 redirect too; 200 answers with the file `to` names (a
//   rewrite: the address stays); 404 and 410 answer with it and that status.
// - Rules are tried in order, the first that matches wins. A rule applies only where no file answers the path,
//   unless it ends with `!` (forced): `/* /index.html 200` is a single-page app's fallback.
// - Refused with a reason and the line: proxying to another site (200, 404 or 410 to a URL), matching on a domain,
//   query parameters or conditions (Country=, Role=...), a `*` that does not end `from`, a placeholder or :splat used
//   twice in `to`, more than MAX_RULES, and more than MAX_DYNAMIC_RULES with placeholders or a splat (those of plain
//   paths are looked up, the others tried).
//
// `_headers`: a path on a line of its own, then its headers (`Name: value`), indented, on the lines after it.
// Every rule whose path matches applies, in order; a header several of them set gets their values joined with `, `.
// Refused: headers that frame the answer or that Hoist sets (OWNED_HEADERS, `x-hoist-*`), `Set-Cookie`,
// `Clear-Site-Data` naming "cookies" (browsers clear those of the whole registrable domain: every project host of an
// apps domain that is not on the Public Suffix List), removing a header (`! Name`), and more than MAX_HEADER_RULES
// rules.

/** The file's name, at the root of the site. */
const REDIRECTS_FILE = '_redirects';
/** The headers file's name, at the root of the site. */
const HEADERS_FILE = '_headers';
const MAX_RULES = 2000;
/** Rules with placeholders or a splat, which every request they may answer tries in turn (Cloudflare's bound). */
const MAX_DYNAMIC_RULES = 100;
const MAX_LINE = 2048;
/** The largest `_redirects` or `_headers` file read, in bytes. */
const MAX_BYTES = 256 * 1024;
const STATUSES = [200, 301, 302, 303, 307, 308, 404, 410];
const NAME = /^:[A-Za-z_][A-Za-z0-9_]*$/;
const SUBSTITUTE = /:([A-Za-z_][A-Za-z0-9_]*)/g;
const URL_START = /^https?:\/\//i;
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;

/** Why the path pattern `path` (starting with /) is refused, or null. */
function pathProblem(path) {
  const parts = path.split('/').slice(1);
  for (const [i, part] of parts.entries()) {
    if (part.includes('*') && (part !== '*' || i !== parts.length - 1))
      return `${path}: a * may only end the path, as in /blog/*`;
    if (part.startsWith(':') && !NAME.test(part))
      return `${path}: a placeholder is a letter or _ then letters, digits or _, as in /:year`;
  }
  return null;
}

/**
 * The first of the names `from` fills in (its placeholders, and `splat` when it ends with `*`) that `to` uses more
 * than once, or null. Used once each, what a request fills in is at most as long as its path: a `to` that repeated
 * `:splat` made every answer's Location hundreds of times the request's size (a 12 KB request, a 4 MB answer).
 */
function repeated(from, to) {
  const names = new Set(partsOf(from).map((p) => (p === '*' ? 'splat' : p.startsWith(':') ? p.slice(1) : '')));
  const used = new Set();
  for (const [, name] of to.matchAll(SUBSTITUTE)) {
    if (!names.has(name)) continue;
    if (used.has(name)) return name;
    used.add(name);
  }
  return null;
}

/** The rule on one line, or why it is refused. */
function ruleOf(line) {
  if (line.length > MAX_LINE) return `a rule is at most ${MAX_LINE} characters`;
  if (CONTROL.test(line)) return 'a rule holds no control characters';
  const comment = line.search(/\s#/);
  const fields = (comment < 0 ? line : line.slice(0, comment)).trim().split(/\s+/);
  if (fields.length < 2) return 'a rule is "from to [status]": the target is missing';
  const [from, to, status, ...rest] = fields;
  if (URL_START.test(from))
    return `${from}: matching on a domain is not supported; "from" is a path that starts with /`;
  if (!from.startsWith('/')) return `${from}: "from" is a path that starts with /`;
  if (to.includes('=') && !to.startsWith('/') && !URL_START.test(to))
    return `${to}: matching on query parameters is not supported`;
  if (!to.startsWith('/') && !URL_START.test(to)) return `${to}: "to" is a path that starts with / or an http(s) URL`;
  if (URL_START.test(to) && !URL.canParse(to)) return `${to}: not a valid URL`;
  if (/[^\x21-\x7e]/.test(to)) return `${to}: write characters other than ASCII percent-encoded (%C3%A9 for é)`;
  const wrong = pathProblem(from);
  if (wrong) return wrong;
  const m = status === undefined ? null : /^(\d{3})(!?)$/.exec(status);
  if (status !== undefined && !m)
    return status.includes('=')
      ? `${status}: conditions (Country=, Language=, Role=, Cookie=) are not supported`
      : `${status}: the status is one of ${STATUSES.join(', ')}, with ! after it to force the rule`;
  if (rest.length)
    return rest.some((f) => f.includes('='))
      ? `${rest.join(' ')}: conditions (Country=, Language=, Role=, Cookie=) are not supported`
      : `${rest.join(' ')}: a rule is "from to [status]", nothing after the status`;
  const code = m ? Number(m[1]) : 301;
  if (!STATUSES.includes(code)) return `${code}: the status is one of ${STATUSES.join(', ')}`;
  if (URL_START.test(to) && (code === 200 || code === 404 || code === 410))
    return (
      `${to}: answering with another site's content (proxying) is not supported; ` +
      'redirect to it with 301, 302, 307 or 308'
    );
  const again = repeated(from, to);
  if (again) return `${to}: :${again} is used more than once; each placeholder, and :splat, may be used once`;
  return { from, to, status: code, force: !!m && m[2] === '!' };
}

/**
 * Parses the text of a `_redirects` file: its rules in order, and what was refused (each with its line number; line
 * 0 for the file as a whole). A file with refusals must not be deployed.
 */
function parseRedirects(text) {
  const rules = [];
  const errors = [];
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) return;
    const rule = ruleOf(line);
    if (typeof rule === 'string') errors.push({ line: i + 1, message: rule });
    else rules.push(rule);
  });
  if (rules.length > MAX_RULES)
    errors.push({ line: 0, message: `${rules.length} rules: at most ${MAX_RULES} are supported` });
  const dynamic = rules.filter((r) => isDynamic(partsOf(r.from))).length;
  if (dynamic > MAX_DYNAMIC_RULES)
    errors.push({
      line: 0,
      message: `${dynamic} rules with placeholders or a splat: at most ${MAX_DYNAMIC_RULES} are supported`,
    });
  return { rules, errors };
}

const compiled = new WeakMap();

/** The segments of a path pattern, as matchParts takes them. */
const partsOf = (path) => trimmed(path).split('/').slice(1);
const isDynamic = (parts) => parts.some((p) => p === '*' || p.startsWith(':'));

/**
 * Rules as matchRedirect goes through them: those of a plain path by it (the first of each: a lookup, however many
 * there are), and those with placeholders or a splat in order (at most MAX_DYNAMIC_RULES: each is tried in turn).
 */
function lookupOf(rules) {
  const literal = new Map();
  const dynamic = [];
  rules.forEach((rule, index) => {
    const parts = partsOf(rule.from);
    if (isDynamic(parts)) dynamic.push({ rule, parts, index });
    else if (!literal.has(trimmed(rule.from))) literal.set(trimmed(rule.from), { rule, index });
  });
  return { literal, dynamic };
}

/** The lookups of all `rules` and of their forced ones, worked out once per rules array. */
function compile(rules) {
  let found = compiled.get(rules);
  if (!found) {
    const forced = rules.filter((r) => r.force);
    found = { all: lookupOf(rules), forced: forced.length ? lookupOf(forced) : null };
    compiled.set(rules, found);
  }
  return found;
}

const trimmed = (path) => (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path);

function decoded(segment) {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** The segments of `pathname` (`path`, as sent) decoded, each once for all rules; `path` itself without escapes. */
const plainOf = (path, pathname) => (pathname.includes('%') ? path.map(decoded) : path);

/**
 * What `parts` (a rule's) matched of `path` (its segments as sent; `plain`: the same decoded, plainOf): placeholder
 * values and the splat, or null.
 */
function matchParts(parts, path, plain) {
  const values = Object.create(null);
  for (let i = 0; i < parts.length; i++) {
    const part = parts[i];
    if (part === '*') {
      values.splat = path.slice(i).join('/');
      return values;
    }
    if (i >= path.length) return null;
    if (part.startsWith(':')) {
      if (path[i] === '') return null;
      values[part.slice(1)] = path[i];
    } else if (part !== path[i] && part !== plain[i]) return null;
  }
  return parts.length === path.length ? values : null;
}

/**
 * The first of `rules` (parseRedirects') that applies to `pathname` (as the request sent it, without its query):
 * the rule, and its `to` with the placeholders replaced by what they matched (as sent: still percent-encoded).
 * `fileFound`: a file answers the path, so only forced rules apply. Null when none applies.
 */
function matchRedirect(rules, pathname, fileFound) {
  const all = compile(rules);
  const lookup = fileFound ? all.forced : all.all;
  if (!lookup) return null;
  const path = trimmed(pathname).split('/').slice(1);
  const plainPath = plainOf(path, pathname);
  // A path with escapes is looked up as sent, then decoded (a rule names its path as it reads).
  const plain =
    lookup.literal.get(trimmed(pathname)) ??
    (plainPath !== path ? lookup.literal.get(`/${plainPath.join('/')}`) : undefined);
  // A rule with placeholders or a splat wins only when it comes before the plain path's.
  for (const { rule, parts, index } of lookup.dynamic) {
    if (plain && index > plain.index) break;
    const values = matchParts(parts, path, plainPath);
    if (!values) continue;
    // Each name is filled in once (parseRedirects refuses more), also in rules stored before it did.
    const to = rule.to.replace(SUBSTITUTE, (whole, name) => {
      if (!Object.hasOwn(values, name)) return whole;
      const value = values[name];
      delete values[name];
      return value;
    });
    return { rule, to };
  }
  return plain ? { rule: plain.rule, to: plain.rule.to } : null;
}

/**
 * The Location of a redirect by `rule` to `to` (matchRedirect's) for a request whose query is `query` ('' or `?...`):
 * the query goes along unless `to` has its own, before any #fragment. A path that what the request filled in made
 * start with `//` or `/\\` (which a browser takes for another host) starts with one `/` instead.
 */
function locationOf(rule, to, query) {
  let location = to;
  if (/^\/[/\\]/.test(location) && !/^\/[/\\]/.test(rule.to)) location = `/${location.replace(/^[/\\]+/, '')}`;
  if (!query || location.includes('?')) return location;
  const hash = location.indexOf('#');
  return hash < 0 ? `${location}${query}` : `${location.slice(0, hash)}${query}${location.slice(hash)}`;
}

const MAX_HEADER_RULES = 100;
const MAX_HEADERS = 500;
/** Headers that frame the answer, or that Hoist sets itself: a `_headers` rule may not set them. */
const OWNED_HEADERS = [
  'accept-ranges',
  'connection',
  'content-encoding',
  'content-length',
  'content-range',
  'date',
  'etag',
  'host',
  'keep-alive',
  'last-modified',
  'location',
  'proxy-connection',
  'set-cookie',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'vary',
];
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// What node:http takes as a header value: visible Latin-1 characters, spaces and tabs.
const VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Whether header `name` (lower case) instructs a proxy in front of Hoist (nginx's X-Accel-Redirect and X-Accel-*,
 * Apache's and lighttpd's X-Sendfile): a tenant's answer must not carry one, or it could have that proxy serve its
 * internal locations or files. The edge drops them from releases' answers; `_headers` may not set them.
 */
const isProxyInstruction = (name) => /^(?:x-accel-|x-sendfile$|x-lighttpd-send-(?:temp)?file$)/.test(name);

/**
 * Whether a `Clear-Site-Data` value names "cookies" (or "*"): browsers then clear the cookies of the whole registrable
 * domain, every project host of an apps domain not on the Public Suffix List, other projects' private-site sign-ins
 * too. `_headers` may not set one; the edge drops one from a release's answer.
 */
const clearsCookies = (value) => /cookies|\*/i.test(value);

/** Why header `name` (lower case) may not be set by a `_headers` rule, or null. */
function headerProblem(name) {
  if (name.startsWith('x-hoist-')) return `${name}: Hoist sets X-Hoist-* headers itself`;
  if (isProxyInstruction(name))
    return `${name}: an instruction to a proxy in front of Hoist, which a site may not give`;
  if (name === 'set-cookie') return 'set-cookie: a static answer sets no cookie';
  if (OWNED_HEADERS.includes(name)) return `${name}: Hoist sets this header itself, from the file`;
  return null;
}

/**
 * Parses the text of a `_headers` file: its rules in order (`{path, headers: [[name in lower case, value]]}`), and
 * what was refused (each with its line number; line 0 for the file as a whole). A file with refusals must not be
 * deployed.
 */
function parseHeaders(text) {
  const rules = [];
  const errors = [];
  let current = null;
  let count = 0;
  text.split(/\r?\n/).forEach((raw, i) => {
    const line = raw.trim();
    const refuse = (message) => errors.push({ line: i + 1, message });
    if (line === '' || line.startsWith('#')) return;
    if (line.length > MAX_LINE) return refuse(`a line is at most ${MAX_LINE} characters`);
    if (URL_START.test(line)) return refuse(`${line}: matching on a domain is not supported; a path starts with /`);
    if (line.startsWith('/')) {
      if (/\s/.test(line)) return refuse(`${line}: a path holds no spaces; its headers go on the lines after it`);
      const wrong = pathProblem(line);
      if (wrong) return refuse(wrong);
      current = { path: line, headers: [], line: i + 1, given: 0 };
      return rules.push(current);
    }
    if (line.startsWith('!')) return refuse(`${line}: removing a header (! Name) is not supported`);
    if (!current) return refuse(`${line}: a header comes after the path it is for (a line starting with /)`);
    current.given++;
    const colon = line.indexOf(':');
    if (colon < 0) return refuse(`${line}: a header is "Name: value"`);
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (!TOKEN.test(name)) return refuse(`${line.slice(0, colon)}: not a header name`);
    const owned = headerProblem(name);
    if (owned) return refuse(owned);
    if (value === '') return refuse(`${name}: the header has no value`);
    if (!VALUE.test(value)) return refuse(`${name}: the value holds characters a header may not`);
    if (name === 'clear-site-data' && clearsCookies(value))
      return refuse(
        `${name}: "cookies" (and "*") clear the cookies of every site of the registrable domain, other projects' ` +
          'sign-ins to their private sites too; "cache" and "storage" are this site\'s own',
      );
    count++;
    current.headers.push([name, value]);
  });
  for (const rule of rules) {
    // A path whose headers were all refused is said once, by them.
    if (rule.given === 0) errors.push({ line: rule.line, message: `${rule.path}: the path has no headers` });
    delete rule.line;
    delete rule.given;
  }
  errors.sort((a, b) => a.line - b.line);
  if (rules.length > MAX_HEADER_RULES)
    errors.push({ line: 0, message: `${rules.length} paths: at most ${MAX_HEADER_RULES} are supported` });
  if (count > MAX_HEADERS) errors.push({ line: 0, message: `${count} headers: at most ${MAX_HEADERS} are supported` });
  return { rules, errors };
}

const compiledHeaders = new WeakMap();

/**
 * The headers `rules` (parseHeaders') give the answer for `pathname` (as sent, without its query): an object of
 * lower-case names, values of several rules joined with `, `; null when no rule matches.
 */
function matchHeaders(rules, pathname) {
  let all = compiledHeaders.get(rules);
  if (!all) compiledHeaders.set(rules, (all = rules.map((r) => ({ rule: r, parts: partsOf(r.path) }))));
  const path = trimmed(pathname).split('/').slice(1);
  const plain = plainOf(path, pathname);
  let found = null;
  for (const { rule, parts } of all) {
    if (!matchParts(parts, path, plain)) continue;
    found ??= Object.create(null);
    for (const [name, value] of rule.headers)
      found[name] = found[name] === undefined ? value : `${found[name]}, ${value}`;
  }
  return found;
}

module.exports = {
  parseRedirects,
  matchRedirect,
  locationOf,
  parseHeaders,
  matchHeaders,
  isProxyInstruction,
  clearsCookies,
  MAX_BYTES,
  MAX_RULES,
  MAX_DYNAMIC_RULES,
  MAX_HEADER_RULES,
  REDIRECTS_FILE,
  HEADERS_FILE,
};
