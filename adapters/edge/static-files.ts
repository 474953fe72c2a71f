import send from '@fastify/send';
import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { extname, join, posix } from 'node:path';
import { pipeline } from 'node:stream';
import { createBrotliCompress, createGzip } from 'node:zlib';
import { fileIndexOf, heldFileIndex, type IndexedFile } from '../../core/deployments/file-index.js';
import { notFoundPage } from './pages.js';

/** The static release a request is answered from, and the headers every answer of it carries. */
export interface StaticRelease {
  deploymentId: string;
  root: string;
  /** The same object for every request of one live release (releaseHeaders): a file's headers are kept by it. */
  headers: OutgoingHttpHeaders;
}

/** Files at least this large are compressed when the client accepts it (when no precompressed variant exists). */
const COMPRESS_MIN_BYTES = 1024;
const COMPRESSIBLE = /^text\/(?!event-stream)|javascript|(?:\+|\/)(?:json|text|xml)(?:;|$)/;
const REVALIDATE = 'public, max-age=0, must-revalidate';

/** Small files kept in memory (path → bytes), the least recently used dropped past the byte budget. */
const SMALL_FILE_BYTES = 64 * 1024;
const CACHE_BUDGET = 32 * 1024 * 1024;
const small = new Map<string, Buffer>();
let cachedBytes = 0;

/**
 * Answers a GET or HEAD from one immutable static release directory, on node:http alone:
 * `/dir/` → `dir/index.html` (`/dir` redirects to `/dir/`), `/page` → `page.html` when there is no
 * such folder, anything else → the site's 404.html (or the edge's page) with status 404. Dotfiles are
 * not served, except under `/.well-known/`. With the release's file index (written at deploy) this is
 * a lookup (no stat), a strong ETag from the content, and a precompressed variant by Accept-Encoding;
 * without one, the disk is asked and the ETag names the release and the size. Ranges, If-Range and
 * If-Modified-Since go through @fastify/send.
 */
export async function serveStatic(req: IncomingMessage, res: ServerResponse, release: StaticRelease): Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const pathname = q < 0 ? url : url.slice(0, q);
  let path: string;
  try {
    path = decodeURIComponent(pathname);
  } catch {
    return plain(res, 400, 'Bad path', release.headers);
  }
  if (path.includes('\0')) return plain(res, 400, 'Bad path', release.headers);
  // Normalizing an absolute path drops every `..` at the top, so rel never climbs out of root.
  const rel = posix.normalize(`/${path}`).slice(1);
  if (rel.split('/').some((s, i) => s.startsWith('.') && !(i === 0 && s === '.well-known')))
    return notFound(req, res, release);

  const held = heldFileIndex(release.root);
  const index = held !== undefined ? held : await fileIndexOf(release.root).catch(() => null);
  if (index) {
    const dir = rel === '' || rel.endsWith('/') ? rel : `${rel}/`;
    const isDir = Object.hasOwn(index.files, `${dir}index.html`);
    if (isDir && !pathname.endsWith('/')) return redirectToFolder(res, rel, url.slice(pathname.length), release);
    let name: string | null = isDir ? `${dir}index.html` : rel;
    if (!isDir && !Object.hasOwn(index.files, rel))
      name = rel && !pathname.endsWith('/') && !extname(rel) ? `${rel}.html` : null;
    const file = name !== null && Object.hasOwn(index.files, name) ? index.files[name] : null;
    if (!file) return notFound(req, res, release);
    return indexed(req, res, release, name!, file);
  }

  let file = join(release.root, rel);
  let found = await statOf(file);
  if (found?.isDirectory()) {
    if (!pathname.endsWith('/')) return redirectToFolder(res, rel, url.slice(pathname.length), release);
    file = join(file, 'index.html');
    found = await statOf(file);
  } else if (!found && rel && !pathname.endsWith('/') && !extname(rel)) {
    file = `${file}.html`;
    found = await statOf(file);
  }
  if (!found?.isFile()) return notFound(req, res, release);
  const etag = `W/"${release.deploymentId}-${found.size.toString(16)}"`;
  const headers = { ...release.headers, etag, 'cache-control': REVALIDATE };
  if (matches(req.headers['if-none-match'], etag)) return end(res, 304, headers);
  return viaSend(req, res, file, headers, found.size);
}

/** A file the release's index names: from memory, a precompressed variant, or the disk. */
async function indexed(
  req: IncomingMessage,
  res: ServerResponse,
  release: StaticRelease,
  name: string,
  file: IndexedFile,
): Promise<void> {
  if (matches(req.headers['if-none-match'], file.etag))
    return end(res, 304, { ...release.headers, etag: file.etag, 'cache-control': REVALIDATE, ...vary(file) });
  const path = join(release.root, name);
  if (req.headers.range || req.headers['if-modified-since'])
    return viaSend(
      req,
      res,
      path,
      { ...release.headers, etag: file.etag, 'cache-control': REVALIDATE, ...vary(file) },
      file.size,
    );
  const encoding = chosenEncoding(req.headers['accept-encoding'], !!file.br, !!file.gzip);
  const variant = encoding === 'br' ? file.br : encoding === 'gzip' ? file.gzip : undefined;
  res.writeHead(200, headersOf(release, file, encoding));
  if (req.method === 'HEAD') return void res.end();
  const from = variant?.path ?? path;
  const size = variant?.size ?? file.size;
  if (size <= SMALL_FILE_BYTES) {
    // Held in memory: answered in this very tick.
    const bytes = small.get(from) ?? (await smallFile(from).catch(() => null));
    if (bytes) return void res.end(bytes);
  }
  pipeline(createReadStream(from), res, () => {});
}

const vary = (file: IndexedFile): OutgoingHttpHeaders => (file.br || file.gzip ? { vary: 'accept-encoding' } : {});

/** The 200 headers of `file` in `release` as `encoding` (null: identity), built once and kept with the file. */
const built = new WeakMap<IndexedFile, WeakMap<OutgoingHttpHeaders, Map<string | null, OutgoingHttpHeaders>>>();
function headersOf(release: StaticRelease, file: IndexedFile, encoding: 'br' | 'gzip' | null): OutgoingHttpHeaders {
  let byRelease = built.get(file);
  if (!byRelease) built.set(file, (byRelease = new WeakMap()));
  let byEncoding = byRelease.get(release.headers);
  if (!byEncoding) byRelease.set(release.headers, (byEncoding = new Map()));
  const hit = byEncoding.get(encoding);
  if (hit) return hit;
  const variant = encoding === 'br' ? file.br : encoding === 'gzip' ? file.gzip : undefined;
  const headers: OutgoingHttpHeaders = {
    ...release.headers,
    etag: file.etag,
    'cache-control': REVALIDATE,
    ...vary(file),
    'content-type': file.type,
    'last-modified': new Date(file.mtimeMs).toUTCString(),
    'accept-ranges': 'bytes',
    'content-length': variant ? variant.size : file.size,
    ...(variant ? { 'content-encoding': encoding! } : {}),
  };
  byEncoding.set(encoding, headers);
  return headers;
}

async function smallFile(path: string): Promise<Buffer> {
  const hit = small.get(path);
  if (hit) {
    small.delete(path);
    small.set(path, hit);
    return hit;
  }
  const bytes = await readFile(path);
  small.set(path, bytes);
  cachedBytes += bytes.length;
  for (const [key, old] of small) {
    if (cachedBytes <= CACHE_BUDGET) break;
    small.delete(key);
    cachedBytes -= old.length;
  }
  return bytes;
}

/** Serves `file` with @fastify/send (Last-Modified, If-Modified-Since, ranges), compressed when it pays. */
async function viaSend(
  req: IncomingMessage,
  res: ServerResponse,
  file: string,
  headers: OutgoingHttpHeaders,
  size: number,
): Promise<void> {
  const sent = await send(req, encodeURIComponent(file.slice(file.lastIndexOf('/') + 1)), {
    root: file.slice(0, file.lastIndexOf('/')) || '/',
    etag: false,
    lastModified: true,
    cacheControl: false,
    dotfiles: 'allow',
  });
  const all: OutgoingHttpHeaders = { ...sent.headers, ...headers };
  const type = String(all['content-type'] ?? sent.headers['Content-Type'] ?? '');
  const whole = sent.statusCode === 200 && !req.headers.range;
  const encoding =
    whole && size >= COMPRESS_MIN_BYTES && COMPRESSIBLE.test(type)
      ? chosenEncoding(req.headers['accept-encoding'], true, true)
      : null;
  if (whole && COMPRESSIBLE.test(type) && size >= COMPRESS_MIN_BYTES) all.vary = 'accept-encoding';
  if (encoding) {
    delete all['Content-Length'];
    all['content-encoding'] = encoding;
  }
  res.writeHead(sent.statusCode, all);
  if (req.method === 'HEAD' || !sent.stream) {
    sent.stream?.destroy();
    return void res.end();
  }
  if (encoding) pipeline(sent.stream, encoding === 'br' ? createBrotliCompress() : createGzip(), res, () => {});
  else pipeline(sent.stream, res, () => {});
}

/** br before gzip when both are accepted (q > 0) and available; null for identity. */
function chosenEncoding(header: string | string[] | undefined, br: boolean, gzip: boolean): 'br' | 'gzip' | null {
  if (!header) return null;
  const accepted = new Set<string>();
  for (const part of String(header).split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (!q || Number(q.slice(2)) > 0) accepted.add(name.trim());
  }
  if (br && (accepted.has('br') || accepted.has('*'))) return 'br';
  if (gzip && (accepted.has('gzip') || accepted.has('*'))) return 'gzip';
  return null;
}

function redirectToFolder(res: ServerResponse, rel: string, query: string, release: StaticRelease): void {
  const location = `/${rel.split('/').map(encodeURIComponent).join('/')}/${query}`;
  end(res, 301, { ...release.headers, location });
}

/** A 404 with the site's own 404.html when the release has one, else the edge's page; never conditional. */
async function notFound(req: IncomingMessage, res: ServerResponse, release: StaticRelease): Promise<void> {
  const page = (await readFile(join(release.root, '404.html')).catch(() => null)) ?? Buffer.from(notFoundPage());
  res.writeHead(404, {
    ...release.headers,
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': page.length,
  });
  res.end(req.method === 'HEAD' ? undefined : page);
}

/** The edge's 404 for a host that names no live project. */
export function noProject(req: IncomingMessage, res: ServerResponse): void {
  const page = Buffer.from(notFoundPage());
  res.writeHead(404, {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': page.length,
  });
  res.end(req.method === 'HEAD' ? undefined : page);
}

function plain(res: ServerResponse, status: number, text: string, headers: OutgoingHttpHeaders): void {
  res.writeHead(status, {
    ...headers,
    'content-type': 'text/plain; charset=utf-8',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
}

function end(res: ServerResponse, status: number, headers: OutgoingHttpHeaders): void {
  res.writeHead(status, headers);
  res.end();
}

/** Whether an If-None-Match header names this ETag (weak comparison) or is `*`. */
function matches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag.replace(/^W\//, '') === bare;
  });
}

const statOf = (path: string) => stat(path).catch(() => null);
