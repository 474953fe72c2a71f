'use strict';
// A dependency-free static file server with the edge's rules (adapters/edge/edge.ts): `/dir/` →
// `dir/index.html` (`/dir` redirects to `/dir/`), `/page` → `page.html`, anything else → the
// site's 404.html (or a plain page) with 404; no dotfiles except under /.well-known/; the site's _redirects and
// _headers rules (the latter on every answer about the site's content: files, redirects, 404s and 410s); ETags that
// name the release; Last-Modified; conditional requests; one byte range; gzip or brotli.
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const zlib = require('node:zlib');
const { HEADERS_FILE, locationOf, matchHeaders, matchRedirect, REDIRECTS_FILE } = require('./site-rules.cjs');

const TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.htm': 'text/html; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.js': 'application/javascript; charset=utf-8',
  '.mjs': 'application/javascript; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.csv': 'text/csv; charset=utf-8',
  '.xml': 'application/xml; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.avif': 'image/avif',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.otf': 'font/otf',
  '.wasm': 'application/wasm',
  '.pdf': 'application/pdf',
  '.mp4': 'video/mp4',
  '.webm': 'video/webm',
  '.mp3': 'audio/mpeg',
  '.wav': 'audio/wav',
  '.zip': 'application/zip',
};
const COMPRESSIBLE = /^(text\/|application\/(javascript|json|manifest\+json|xml|wasm)|image\/svg\+xml)/;
const NOT_FOUND = '<!doctype html><title>404 Not Found</title><h1>404 Not Found</h1>';

const statOf = (p) => fs.promises.stat(p).catch(() => null);

function etagMatches(header, etag) {
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((t) => t.trim() === '*' || t.trim().replace(/^W\//, '') === bare);
}

/** The one satisfiable range of `header` as [start, end], 'unsatisfiable', or null (serve it all). */
function rangeOf(header, size) {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start, end;
  if (m[1] === '') [start, end] = [Math.max(0, size - Number(m[2])), size - 1];
  else [start, end] = [Number(m[1]), m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1)];
  return start > end || start >= size ? 'unsatisfiable' : [start, end];
}

const FOLDER = 'folder';

/**
 * The path below the root that `pathname` names, normalized (never above it); null for a dotfile (not served, but
 * under /.well-known/); undefined when it does not decode or holds NUL.
 */
function relOf(pathname) {
  let decoded;
  try {
    decoded = decodeURIComponent(pathname);
  } catch {
    return undefined;
  }
  if (decoded.includes('\0')) return undefined;
  const rel = path.posix.normalize(`/${decoded}`).slice(1);
  return rel.split('/').some((s, i) => s.startsWith('.') && !(i === 0 && s === '.well-known')) ? null : rel;
}

/**
 * A static server of the release at `root`. `rules`: those of its `_redirects` and `_headers` (site-rules.cjs),
 * which Hoist checked and wrote to site-rules.json beside this file.
 */
function createStaticServer(root, release, { redirects = [], headers: siteHeaders = [] } = {}) {
  /** What the site's _headers set for `pathname` (the path asked), or null. */
  const siteOf = (pathname) => (siteHeaders.length ? matchHeaders(siteHeaders, pathname) : null);

  /**
   * A 404 for `pathname` (whose _headers rules apply) with the site's 404.html, else a plain page; a _redirects
   * rule's 404 or 410 names its own `page`, and `status`.
   */
  async function notFound(res, pathname, page = '404.html', status = 404) {
    const own = page && (await fs.promises.readFile(path.join(root, page)).catch(() => null));
    const type = own ? TYPES[path.extname(page).toLowerCase()] || 'application/octet-stream' : TYPES['.html'];
    res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...siteOf(pathname) });
    res.end(own || NOT_FOUND);
  }

  /** A redirect of `pathname` (whose _headers rules apply), with `status` and `framing` (Location...) over them. */
  function redirect(res, pathname, status, framing) {
    res.writeHead(status, { ...siteOf(pathname), ...framing });
    res.end();
  }

  /**
   * The file that answers `rel` (`pathname` as asked) and its stat, as the edge finds it: `dir/index.html` (FOLDER
   * for a folder holding one, asked without its slash, unless `slashless`), the file, or `page.html`; null for none.
   */
  async function find(rel, pathname, slashless = false) {
    if (rel === REDIRECTS_FILE || rel === HEADERS_FILE) return null;
    const file = path.join(root, rel);
    const found = await statOf(file);
    if (found && found.isDirectory()) {
      const index = path.join(file, 'index.html');
      const indexFound = await statOf(index);
      if (indexFound && indexFound.isFile())
        return pathname.endsWith('/') || slashless ? { file: index, found: indexFound } : FOLDER;
    } else if (found && found.isFile()) return { file, found };
    if (!rel || pathname.endsWith('/') || path.extname(rel)) return null;
    const html = await statOf(`${file}.html`);
    return html && html.isFile() ? { file: `${file}.html`, found: html } : null;
  }

  /** Answers by the `_redirects` rule that matched (as the edge does: adapters/edge/static-files.ts). */
  async function redirected(req, res, { rule, to }, pathname, query) {
    if (rule.status !== 200 && rule.status !== 404 && rule.status !== 410) {
      try {
        return redirect(res, pathname, rule.status, { location: locationOf(rule, to, query), 'content-length': 0 });
      } catch {
        // What the request put in `to` is not a valid header value.
        res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
        return res.end('Bad path');
      }
    }
    const target = to.split(/[?#]/, 1)[0];
    const rel = relOf(target);
    const found = typeof rel === 'string' ? await find(rel, target, true) : null;
    if (rule.status === 200)
      return found ? serve(req, res, found.file, found.found, pathname) : notFound(res, pathname);
    // The site's 404.html stands in for a page the release lacks.
    return notFound(res, pathname, found ? path.relative(root, found.file) : '404.html', rule.status);
  }

  async function handle(req, res) {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' });
      return res.end();
    }
    const pathname = req.url.split('?')[0] || '/';
    const rel = relOf(pathname);
    if (rel === undefined) {
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
      return res.end('Bad path');
    }
    if (rel === null) return notFound(res, pathname);
    const found = await find(rel, pathname);
    const hit = redirects.length ? matchRedirect(redirects, pathname, found !== null) : null;
    if (hit) return redirected(req, res, hit, pathname, req.url.slice(pathname.length));
    if (found === FOLDER) {
      const location = `/${rel.split('/').map(encodeURIComponent).join('/')}/${req.url.slice(pathname.length)}`;
      return redirect(res, pathname, 301, { location });
    }
    if (!found) return notFound(res, pathname);
    return serve(req, res, found.file, found.found, pathname);
  }

  /**
   * Answers with `file` (`found`: its stat) for `pathname` (whose _headers rules apply): conditional requests, one
   * range, compression.
   */
  async function serve(req, res, file, found, pathname) {
    const size = found.size;
    const etag = `W/"${release}-${size.toString(16)}"`;
    const lastModified = found.mtime.toUTCString();
    const type = TYPES[path.extname(file).toLowerCase()] || 'application/octet-stream';
    const headers = {
      etag,
      'last-modified': lastModified,
      'cache-control': 'public, max-age=0, must-revalidate',
      'accept-ranges': 'bytes',
      'content-type': type,
      ...siteOf(pathname),
    };
    const inm = req.headers['if-none-match'];
    const ims = req.headers['if-modified-since'];
    if (inm ? etagMatches(inm, etag) : ims && Math.floor(found.mtimeMs / 1000) * 1000 <= Date.parse(ims)) {
      const { 'content-type': _, 'accept-ranges': __, ...validators } = headers;
      res.writeHead(304, validators);
      return res.end();
    }
    const ifRange = req.headers['if-range'];
    const range =
      req.headers.range && (!ifRange || ifRange === etag || ifRange === lastModified)
        ? rangeOf(req.headers.range, size)
        : null;
    if (range === 'unsatisfiable') {
      res.writeHead(416, { 'content-range': `bytes */${size}` });
      return res.end();
    }
    if (range) {
      res.writeHead(206, {
        ...headers,
        'content-range': `bytes ${range[0]}-${range[1]}/${size}`,
        'content-length': range[1] - range[0] + 1,
      });
      return req.method === 'HEAD'
        ? res.end()
        : fs.createReadStream(file, { start: range[0], end: range[1] }).pipe(res);
    }
    const accepted = String(req.headers['accept-encoding'] || '');
    const encoding =
      size >= 1024 && COMPRESSIBLE.test(type)
        ? /\bbr\b/.test(accepted)
          ? 'br'
          : /\bgzip\b/.test(accepted)
            ? 'gzip'
            : null
        : null;
    if (COMPRESSIBLE.test(type)) headers.vary = 'accept-encoding';
    if (!encoding) {
      res.writeHead(200, { ...headers, 'content-length': size });
      return req.method === 'HEAD' ? res.end() : fs.createReadStream(file).pipe(res);
    }
    res.writeHead(200, { ...headers, 'content-encoding': encoding });
    if (req.method === 'HEAD') return res.end();
    fs.createReadStream(file)
      .pipe(encoding === 'br' ? zlib.createBrotliCompress() : zlib.createGzip())
      .pipe(res);
  }

  return http.createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
}

module.exports = { createStaticServer };
