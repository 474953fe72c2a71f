'use strict';
// A static site's `_redirects` file (Netlify's and Cloudflare Pages' format): one rule a line, `from to [status][!]`.
// Plain JavaScript without dependencies: the edge uses it, and so does the static server of release containers
// (plugins/shared/docker/runtime/static-server.cjs), which gets this file beside it.
//
// - `from` is a path: literal segments, `:name` placeholders (one segment each) and a final `*` (the rest, the
//   empty rest too: `/blog/*` matches `/blog`). A trailing slash does not matter.
// - `to` is a path or an http(s) URL; `:name` and `:splat` are replaced by what they matched.
// - The status is 301 when absent; 302, 303, 307 and 308 redirect too; 200 answers with the file `to` names (a
//   rewrite: the address stays); 404 and 410 answer with it and that status.
// - Rules are tried in order, the first that matches wins. A rule applies only where no file answers the path,
//   unless it ends with `!` (forced): `/* /index.html 200` is a single-page app's fallback.
// - Refused with a reason and the line: proxying to another site (200, 404 or 410 to a URL), matching on a domain,
//   query parameters or conditions (Country=, Role=...), a `*` that does not end `from`, and more than MAX_RULES.

/** The file's name, at the root of the site. */
const REDIRECTS_FILE = '_redirects';
const MAX_RULES = 2000;
const MAX_LINE = 2048;
/** The largest `_redirects` read, in bytes. */
const MAX_BYTES = 256 * 1024;
const STATUSES = [200, 301, 302, 303, 307, 308, 404, 410];
const NAME = /^:[A-Za-z_][A-Za-z0-9_]*$/;
const SUBSTITUTE = /:([A-Za-z_][A-Za-z0-9_]*)/g;
const URL_START = /^https?:\/\//i;
const CONTROL = /[\u0000-\u0008\u000a-\u001f\u007f]/;

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
  const parts = from.split('/').slice(1);
  for (const [i, part] of parts.entries()) {
    if (part.includes('*') && (part !== '*' || i !== parts.length - 1))
      return `${from}: a * may only end the path, as in /blog/*`;
    if (part.startsWith(':') && !NAME.test(part))
      return `${from}: a placeholder is a letter or _ then letters, digits or _, as in /:year`;
  }
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
  return { rules, errors };
}

const compiled = new WeakMap();

/** The segments of `from` of each rule, worked out once per rules array. */
function compile(rules) {
  let found = compiled.get(rules);
  if (!found) {
    found = {
      anyForced: rules.some((r) => r.force),
      rules: rules.map((r) => ({ rule: r, parts: trimmed(r.from).split('/').slice(1) })),
    };
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

/** What `parts` (a rule's) matched of `path` (its segments as sent): placeholder values and the splat, or null. */
function matchParts(parts, path) {
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
    } else if (part !== path[i] && part !== decoded(path[i])) return null;
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
  if (fileFound && !all.anyForced) return null;
  const path = trimmed(pathname).split('/').slice(1);
  for (const { rule, parts } of all.rules) {
    if (fileFound && !rule.force) continue;
    const values = matchParts(parts, path);
    if (!values) continue;
    const to = rule.to.replace(SUBSTITUTE, (whole, name) => (Object.hasOwn(values, name) ? values[name] : whole));
    return { rule, to };
  }
  return null;
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

module.exports = { parseRedirects, matchRedirect, locationOf, MAX_BYTES, MAX_RULES, REDIRECTS_FILE };
