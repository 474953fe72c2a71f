import send from '@fastify/send';
import { closeSync, createReadStream, openSync, readSync } from 'node:fs';
import { open, readFile, stat, type FileHandle } from 'node:fs/promises';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import { extname, join, posix } from 'node:path';
import { pipeline } from 'node:stream';
import { createBrotliCompress, createGzip } from 'node:zlib';
import {
  fileIndexOf,
  heldFileIndex,
  type FileIndex,
  type FileVariant,
  type IndexedFile,
} from '../../core/deployments/file-index.js';
import {
  HEADERS_FILE,
  locationOf,
  matchHeaders,
  matchRedirect,
  REDIRECTS_FILE,
  type HeaderRule,
  type RedirectRule,
} from '../../core/ports/site-rules.cjs';
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

/**
 * Files of indexed releases kept in memory once read, by the index entry (or variant) they are the bytes of: a hot
 * file is answered with one write, as nginx answers with sendfile. Files up to HELD_FILE_BYTES; past HELD_BUDGET
 * bytes the oldest go first, unless answered since they were last passed over (second chance): one that is asked for
 * again is only marked, as moving it to the end of the map (a delete and a set) shrank and regrew the map's table on
 * every answer (`perf record` of the edge under `wrk`).
 */
const HELD_FILE_BYTES = 1024 * 1024;
const HELD_BUDGET = 64 * 1024 * 1024;
const heldFiles = new Map<IndexedFile | FileVariant, { bytes: Buffer; used: boolean }>();
let heldBytes = 0;

/**
 * Answers a GET or HEAD from one immutable static release directory, on node:http alone:
 * `/dir/` → `dir/index.html` (`/dir` redirects to `/dir/`), `/page` → `page.html` when there is no
 * such folder, anything else → the site's 404.html (or the edge's page) with status 404. Dotfiles are
 * not served, except under `/.well-known/`. With the release's file index (written at deploy) this is
 * a lookup (no stat), a strong ETag from the content, and a precompressed variant by Accept-Encoding;
 * without one, the disk is asked and the ETag names the release and the size. Ranges, If-Range and
 * If-Modified-Since go through @fastify/send. The site's `_headers` rules for the path asked go on every
 * answer about its content (files, redirects, 404s and 410s), not on a 400. Returns nothing when it
 * answered at once (an indexed file held in memory, a 304), else a promise of the answer.
 */
export function serveStatic(req: IncomingMessage, res: ServerResponse, release: StaticRelease): void | Promise<void> {
  const url = req.url ?? '/';
  const q = url.indexOf('?');
  const pathname = q < 0 ? url : url.slice(0, q);
  const rel = relOf(pathname);
  if (rel === BAD) return plain(res, 400, 'Bad path', release.headers);
  const index = heldFileIndex(release.root);
  if (index === undefined)
    return fileIndexOf(release.root)
      .catch(() => null)
      .then((read) => answer(req, res, release, url, pathname, rel, read));
  return answer(req, res, release, url, pathname, rel, index);
}

const PLAIN_UNSAFE = /%|\/\.|\/\/|\0/;
const BAD = Symbol('bad path');

/**
 * The path relative to the release root that `pathname` names, normalized (never above the root); null for a dotfile
 * (not served, except under `/.well-known/`); BAD when it does not decode or holds NUL.
 */
function relOf(pathname: string): string | null | typeof BAD {
  // A plain path (no escapes, dot segments or empty segments) is its own normal form.
  if (pathname.charCodeAt(0) === 47 && !PLAIN_UNSAFE.test(pathname)) return pathname.slice(1);
  let path: string;
  try {
    path = decodeURIComponent(pathname);
  } catch {
    return BAD;
  }
  if (path.includes('\0')) return BAD;
  // Normalizing an absolute path drops every `..` at the top, so rel never climbs out of root.
  const rel = posix.normalize(`/${path}`).slice(1);
  return rel.split('/').some((s, i) => s.startsWith('.') && !(i === 0 && s === '.well-known')) ? null : rel;
}

/** A folder asked for without its trailing slash (lookup): redirected to it. */
const FOLDER = Symbol('folder');

/**
 * The file of `files` that answers `rel` (`pathname` as asked): `dir/index.html` for a folder, the file, or
 * `page.html` for an extensionless `page`; FOLDER for a folder without its slash (unless `slashless`: then its
 * index.html); null for none. The site's `_redirects` and `_headers` are never one.
 */
function lookup(
  files: FileIndex['files'],
  rel: string,
  pathname: string,
  slashless = false,
): string | typeof FOLDER | null {
  const dir = rel === '' || rel.endsWith('/') ? rel : `${rel}/`;
  if (Object.hasOwn(files, `${dir}index.html`))
    return pathname.endsWith('/') || slashless ? `${dir}index.html` : FOLDER;
  if (Object.hasOwn(files, rel)) return rel === REDIRECTS_FILE || rel === HEADERS_FILE ? null : rel;
  const html = rel && !pathname.endsWith('/') && !extname(rel) ? `${rel}.html` : null;
  return html !== null && Object.hasOwn(files, html) ? html : null;
}

function answer(
  req: IncomingMessage,
  res: ServerResponse,
  release: StaticRelease,
  url: string,
  pathname: string,
  rel: string | null,
  index: FileIndex | null,
): void | Promise<void> {
  // Every answer about the site's content carries what its `_headers` set for the path asked.
  const site = index?.headers && siteHeadersOf(index.headers, pathname);
  if (rel === null) return notFound(req, res, release, site);
  if (!index) return fromDisk(req, res, release, url, pathname, rel);
  const found = lookup(index.files, rel, pathname);
  const rule = index.redirects && matchRedirect(index.redirects, pathname, found !== null);
  if (rule) return redirected(req, res, release, url.slice(pathname.length), rule, index, site);
  if (found === null) return notFound(req, res, release, site);
  if (found === FOLDER) return redirectToFolder(res, rel, url.slice(pathname.length), release, site);
  return indexed(req, res, release, found, index.files[found], index.variantsPending !== undefined, site);
}

/**
 * Answers by the site's `_redirects` rule that matched: a redirect to `to` (with the request's `query` unless `to`
 * has its own), or the release file `to` names, with status 200 (a rewrite) or the rule's 404 or 410. Rules do not
 * apply again to `to`. `site`: what the site's `_headers` set for the path asked, on every one of these answers.
 */
function redirected(
  req: IncomingMessage,
  res: ServerResponse,
  release: StaticRelease,
  query: string,
  { rule, to }: { rule: RedirectRule; to: string },
  index: FileIndex,
  site: SiteHeaders,
): void | Promise<void> {
  if (rule.status !== 200 && rule.status !== 404 && rule.status !== 410) {
    try {
      const location = locationOf(rule, to, query);
      res.writeHead(rule.status, contentHeaders(release, NO_HEADERS, site, { location, 'content-length': 0 }));
    } catch {
      // What the request put in `to` is not a valid header value.
      return plain(res, 400, 'Bad path', release.headers);
    }
    return void res.end();
  }
  const path = to.split(/[?#]/, 1)[0];
  const rel = relOf(path);
  const found = typeof rel === 'string' ? lookup(index.files, rel, path, true) : null;
  const name = found === FOLDER ? null : found;
  if (rule.status === 200)
    return name === null
      ? notFound(req, res, release, site)
      : indexed(req, res, release, name, index.files[name], index.variantsPending !== undefined, site);
  // The site's 404.html stands in for a page the release lacks.
  return notFound(
    req,
    res,
    release,
    site,
    name ?? '404.html',
    rule.status,
    name === null ? undefined : index.files[name].type,
  );
}

/** A release without a file index (deployed before indexes existed): the disk is asked. */
async function fromDisk(
  req: IncomingMessage,
  res: ServerResponse,
  release: StaticRelease,
  url: string,
  pathname: string,
  rel: string,
): Promise<void> {
  let file = join(release.root, rel);
  let found = await statOf(file);
  if (found?.isDirectory()) {
    if (!pathname.endsWith('/')) return redirectToFolder(res, rel, url.slice(pathname.length), release, null);
    file = join(file, 'index.html');
    found = await statOf(file);
  } else if (!found && rel && !pathname.endsWith('/') && !extname(rel)) {
    file = `${file}.html`;
    found = await statOf(file);
  }
  if (!found?.isFile()) return notFound(req, res, release, null);
  const etag = `W/"${release.deploymentId}-${found.size.toString(16)}"`;
  const headers = { ...release.headers, etag, 'cache-control': REVALIDATE };
  if (matches(req.headers['if-none-match'], etag)) return end(res, 304, headers);
  return viaSend(req, res, file, headers, found.size);
}

/**
 * A file the release's index names: from memory, a precompressed variant, or the disk. `pending`: the index's
 * variants are still being made (the answer varies by Accept-Encoding all the same when the file will have some).
 */
function indexed(
  req: IncomingMessage,
  res: ServerResponse,
  release: StaticRelease,
  name: string,
  file: IndexedFile,
  pending: boolean,
  /** What the site's `_headers` rules add for the path asked (siteHeadersOf), if anything. */
  site?: SiteHeaders,
): void | Promise<void> {
  const asked = req.headers;
  if (matches(asked['if-none-match'], file.etag))
    return end(res, 304, headersFor(release, file, VALIDATORS, pending, site));
  if (asked.range || asked['if-modified-since'])
    return viaSend(req, res, join(release.root, name), headersFor(release, file, VALIDATORS, pending, site), file.size);
  const encoding = chosenEncoding(asked['accept-encoding'], !!file.br, !!file.gzip);
  const variant = encoding === 'br' ? file.br : encoding === 'gzip' ? file.gzip : undefined;
  res.writeHead(200, headersFor(release, file, encoding, pending, site));
  if (req.method === 'HEAD') return void res.end();
  const source = variant ?? file;
  const held = heldFiles.get(source);
  if (held) {
    held.used = true;
    return void res.end(held.bytes);
  }
  const from = variant?.path ?? join(release.root, name);
  if (source.size <= HELD_FILE_BYTES) return holdAndSend(res, source, from);
  pipeline(createReadStream(from, rangeOf(source)), res, () => {});
}

/** Where a variant is in its release's pack (a stream's start and end, inclusive); nothing for a whole file. */
function rangeOf(source: IndexedFile | FileVariant): { start: number; end: number } | undefined {
  const { offset } = source as FileVariant;
  return offset === undefined ? undefined : { start: offset, end: offset + source.size - 1 };
}

/**
 * Files and variants up to this size are read synchronously the first time they are asked for (then held): one
 * call, from the page cache after a deploy, as nginx reads them. Through the libuv pool a read took four trips, and
 * the first answer of a new release waited behind the compression of its variants there (bench/upload-to-live.ts:
 * 8 ms from the deploy's success to the new page, 2 ms read synchronously).
 */
const READ_NOW_BYTES = 64 * 1024;

/** The bytes of a file, or of a variant in its release's pack; null when they cannot all be read. */
async function bytesOf(source: IndexedFile | FileVariant, from: string): Promise<Buffer | null> {
  const range = rangeOf(source);
  if (source.size <= READ_NOW_BYTES) return readNow(from, range?.start ?? 0, source.size);
  if (!range) return readFile(from).catch(() => null);
  const handle = await open(from).catch(() => null);
  if (!handle) return null;
  try {
    const bytes = Buffer.allocUnsafe(source.size);
    const { bytesRead } = await handle.read(bytes, 0, source.size, range.start);
    return bytesRead === source.size ? bytes : null;
  } catch {
    return null;
  } finally {
    await handle.close();
  }
}

/** `size` bytes of the file at `from` from `start`, read synchronously; null when they cannot all be read. */
function readNow(from: string, start: number, size: number): Buffer | null {
  let fd: number | undefined;
  try {
    fd = openSync(from, 'r');
    const bytes = Buffer.allocUnsafe(size);
    let read = 0;
    while (read < size) {
      const n = readSync(fd, bytes, read, size - read, start + read);
      if (n === 0) return null;
      read += n;
    }
    return bytes;
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Reads a file into memory, keeps it, and sends it (a file that cannot be read is streamed: the stream reports). */
async function holdAndSend(res: ServerResponse, source: IndexedFile | FileVariant, from: string): Promise<void> {
  const bytes = await bytesOf(source, from);
  if (!bytes) return void pipeline(createReadStream(from, rangeOf(source)), res, () => {});
  if (!heldFiles.has(source)) {
    heldFiles.set(source, { bytes, used: false });
    heldBytes += bytes.length;
    for (const [key, old] of heldFiles) {
      if (heldBytes <= HELD_BUDGET) break;
      heldFiles.delete(key);
      // Answered since it was last passed over: it goes to the end instead, once.
      if (old.used) heldFiles.set(key, { bytes: old.bytes, used: false });
      else heldBytes -= old.bytes.length;
    }
  }
  res.end(bytes);
}

/** Vary when the file has a variant, or will have one (its index's variants are pending). */
const vary = (file: IndexedFile, pending: boolean): OutgoingHttpHeaders =>
  file.br || file.gzip || (pending && file.size >= COMPRESS_MIN_BYTES && COMPRESSIBLE.test(file.type))
    ? { vary: 'accept-encoding' }
    : {};

/** The headers of a 304, which @fastify/send completes for ranges and If-Modified-Since. */
const VALIDATORS = 'validators';
type Answer = 'br' | 'gzip' | null | typeof VALIDATORS;

/** What a site's `_headers` set for the path asked (siteHeadersOf); nothing when the site has no `_headers`. */
type SiteHeaders = OutgoingHttpHeaders | null | undefined;

/** What the `_headers` rules of a release add for a path, by rules and path: bounded, cleared when full. */
const siteHeadersBy = new WeakMap<readonly HeaderRule[], Map<string, OutgoingHttpHeaders | null>>();
const SITE_PATHS_KEPT = 1024;

/** The headers the site's `_headers` `rules` set for `pathname` (frozen, the same object each time), or null. */
function siteHeadersOf(rules: readonly HeaderRule[], pathname: string): OutgoingHttpHeaders | null {
  let byPath = siteHeadersBy.get(rules);
  if (!byPath) siteHeadersBy.set(rules, (byPath = new Map()));
  let found = byPath.get(pathname);
  if (found === undefined) {
    const matched = matchHeaders(rules, pathname);
    found = matched && Object.freeze({ ...matched });
    if (byPath.size >= SITE_PATHS_KEPT) byPath.clear();
    byPath.set(pathname, found);
  }
  return found;
}

/**
 * headersOf, with what the site's `_headers` set for the path asked (`site`) over them, and the release's own headers
 * over both: built once and kept.
 */
const merged = new WeakMap<OutgoingHttpHeaders, WeakMap<OutgoingHttpHeaders, OutgoingHttpHeaders>>();
function headersFor(
  release: StaticRelease,
  file: IndexedFile,
  answer: Answer,
  pending: boolean,
  site: SiteHeaders,
): OutgoingHttpHeaders {
  const base = headersOf(release, file, answer, pending);
  if (!site) return base;
  let bySite = merged.get(base);
  if (!bySite) merged.set(base, (bySite = new WeakMap()));
  let headers = bySite.get(site);
  if (!headers) bySite.set(site, (headers = Object.freeze({ ...base, ...site, ...release.headers })));
  return headers;
}

/** The headers of `file` in `release` for `answer` (a 200 as an encoding, null: identity), built once and kept. */
const built = new WeakMap<IndexedFile, WeakMap<OutgoingHttpHeaders, Map<Answer, OutgoingHttpHeaders>>>();
function headersOf(release: StaticRelease, file: IndexedFile, answer: Answer, pending: boolean): OutgoingHttpHeaders {
  let byRelease = built.get(file);
  if (!byRelease) built.set(file, (byRelease = new WeakMap()));
  let byAnswer = byRelease.get(release.headers);
  if (!byAnswer) byRelease.set(release.headers, (byAnswer = new Map()));
  const hit = byAnswer.get(answer);
  if (hit) return hit;
  const validators = { ...release.headers, etag: file.etag, 'cache-control': REVALIDATE, ...vary(file, pending) };
  let headers: OutgoingHttpHeaders = validators;
  if (answer !== VALIDATORS) {
    const variant = answer === 'br' ? file.br : answer === 'gzip' ? file.gzip : undefined;
    headers = {
      ...validators,
      'content-type': file.type,
      'last-modified': new Date(file.mtimeMs).toUTCString(),
      'accept-ranges': 'bytes',
      'content-length': variant ? variant.size : file.size,
      ...(variant ? { 'content-encoding': answer! } : {}),
    };
  }
  // viaSend adds its own headers to a copy; writeHead only reads them.
  byAnswer.set(answer, Object.freeze(headers));
  return headers;
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
  if (!header || (!br && !gzip)) return null;
  const ok = acceptedOf(String(header));
  if (br && ok & BR) return 'br';
  if (gzip && ok & GZIP) return 'gzip';
  return null;
}

const BR = 1;
const GZIP = 2;
/** Accept-Encoding values seen (browsers send a few), parsed once: bounded, cleared when full. */
const acceptedBy = new Map<string, number>();

function acceptedOf(header: string): number {
  const known = acceptedBy.get(header);
  if (known !== undefined) return known;
  const accepted = new Set<string>();
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (!q || Number(q.slice(2)) > 0) accepted.add(name.trim());
  }
  const any = accepted.has('*');
  const ok = (any || accepted.has('br') ? BR : 0) | (any || accepted.has('gzip') ? GZIP : 0);
  if (acceptedBy.size >= 256) acceptedBy.clear();
  acceptedBy.set(header, ok);
  return ok;
}

const NO_HEADERS: OutgoingHttpHeaders = Object.freeze({});

/**
 * The headers of an answer about the site's content that is no file (a redirect, a 404 or 410): the edge's `own`
 * (Content-Type, Cache-Control), what the site's `_headers` set for the path asked (`site`) over them, the release's
 * headers over both, and `framing` (Location, Content-Length) over all.
 */
function contentHeaders(
  release: StaticRelease,
  own: OutgoingHttpHeaders,
  site: SiteHeaders,
  framing: OutgoingHttpHeaders,
): OutgoingHttpHeaders {
  return site ? { ...own, ...site, ...release.headers, ...framing } : { ...release.headers, ...own, ...framing };
}

/** A 301 to the folder `rel` names, with its slash (and the request's `query`). */
function redirectToFolder(
  res: ServerResponse,
  rel: string,
  query: string,
  release: StaticRelease,
  site: SiteHeaders,
): void {
  const location = `/${rel.split('/').map(encodeURIComponent).join('/')}/${query}`;
  end(res, 301, contentHeaders(release, NO_HEADERS, site, { location }));
}

/**
 * A 404 with the site's own 404.html when the release has one, else the edge's page; never conditional. A
 * `_redirects` rule's 404 or 410 names its own `page` (of `type`), and `status`. `site`: what the site's `_headers`
 * set for the path asked (not for `page`).
 */
async function notFound(
  req: IncomingMessage,
  res: ServerResponse,
  release: StaticRelease,
  site: SiteHeaders,
  page = '404.html',
  status = 404,
  type = 'text/html; charset=utf-8',
): Promise<void> {
  const own = await pageOf(join(release.root, page));
  const body = own ? own.bytes : Buffer.from(notFoundPage());
  const edge = { 'content-type': own ? type : 'text/html; charset=utf-8', 'cache-control': 'no-store' };
  res.writeHead(status, contentHeaders(release, edge, site, { 'content-length': own?.size ?? body!.length }));
  if (own?.handle && req.method !== 'HEAD') return void pipeline(own.handle.createReadStream(), res, () => {});
  await own?.handle?.close();
  res.end(req.method === 'HEAD' ? undefined : body);
}

/**
 * A page of the release (its 404.html, or the page of a `_redirects` 404 or 410) as notFound sends it: its size, its
 * bytes when at most HELD_FILE_BYTES, else its open file to stream (a 300 MB 404.html, read whole for each answer,
 * took 2.3 GB of the edge's memory for 8 requests). Null when it is no file.
 */
async function pageOf(file: string): Promise<{ size: number; bytes?: Buffer; handle?: FileHandle } | null> {
  const handle = await open(file).catch(() => null);
  if (!handle) return null;
  try {
    const found = await handle.stat();
    if (!found.isFile()) throw new Error('not a file');
    if (found.size > HELD_FILE_BYTES) return { size: found.size, handle };
    const bytes = await handle.readFile();
    await handle.close();
    return { size: bytes.length, bytes };
  } catch {
    await handle.close().catch(() => {});
    return null;
  }
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
  if (header === etag) return true;
  const bare = etag.replace(/^W\//, '');
  return header.split(',').some((t) => {
    const tag = t.trim();
    return tag === '*' || tag.replace(/^W\//, '') === bare;
  });
}

const statOf = (path: string) => stat(path).catch(() => null);
