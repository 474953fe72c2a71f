'use strict';
// A dependency-free static file server with the edge's rules (adapters/edge/edge.ts): `/dir/` →
// `dir/index.html` (`/dir` redirects to `/dir/`), `/page` → `page.html`, anything else → the
// site's 404.html (or a plain page) with 404; no dotfiles except under /.well-known/; ETags that
// name the release; Last-Modified; conditional requests; one byte range; gzip or brotli.
const fs = require('node:fs');
const http = require('node:http');
const path = require('node:path');
const zlib = require('node:zlib');

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

function createStaticServer(root, release) {
  async function notFound(res) {
    const page = await fs.promises.readFile(path.join(root, '404.html')).catch(() => null);
    res.writeHead(404, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
    res.end(page || NOT_FOUND);
  }

  async function handle(req, res) {
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' });
      return res.end();
    }
    const pathname = req.url.split('?')[0] || '/';
    let decoded;
    try {
      decoded = decodeURIComponent(pathname);
    } catch {
      decoded = '\0';
    }
    if (decoded.includes('\0')) {
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
      return res.end('Bad path');
    }
    const rel = path.posix.normalize(`/${decoded}`).slice(1);
    if (rel.split('/').some((s, i) => s.startsWith('.') && !(i === 0 && s === '.well-known'))) return notFound(res);
    let file = path.join(root, rel);
    let found = await statOf(file);
    if (found && found.isDirectory()) {
      if (!pathname.endsWith('/')) {
        const location = `/${rel.split('/').map(encodeURIComponent).join('/')}/${req.url.slice(pathname.length)}`;
        res.writeHead(301, { location });
        return res.end();
      }
      file = path.join(file, 'index.html');
      found = await statOf(file);
    } else if (!found && rel && !pathname.endsWith('/') && !path.extname(rel)) {
      file = `${file}.html`;
      found = await statOf(file);
    }
    if (!found || !found.isFile()) return notFound(res);

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
    };
    const inm = req.headers['if-none-match'];
    const ims = req.headers['if-modified-since'];
    if (inm ? etagMatches(inm, etag) : ims && Math.floor(found.mtimeMs / 1000) * 1000 <= Date.parse(ims)) {
      res.writeHead(304, { etag, 'last-modified': lastModified, 'cache-control': headers['cache-control'] });
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
