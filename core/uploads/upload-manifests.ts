import { createHash, randomUUID } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { link, mkdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { rateLimited, type RateLimiter } from '../auth/rate-limiter.js';
import { assertPlanAllows, type EntitlementService } from '../billing/entitlement-service.js';
import type { Plan } from '../billing/plans.js';
import type { UploadedArchive } from '../deployments/deployment-service.js';
import { HoistError, invalid, StageError } from '../errors.js';
import type { Archive } from '../ports/archive.js';
import type { Clock } from '../ports/clock.js';
import { contentAddressedKey, type Storage } from '../ports/storage.js';
import type { Workspaces } from '../ports/workspaces.js';
import { atMost } from '../at-most.js';
import { token } from '../tokens.js';
import { MANIFEST_TTL_MS, type KeptFiles } from './kept-files.js';

/** One file of a manifest: where it goes in the site, and its bytes' SHA-256 (hex) and size. */
export interface ManifestFile {
  path: string;
  sha256: string;
  size: number;
}

/** A manifest as answered: its id, when it stops being usable, and the hashes the client must send. */
export interface CreatedManifest {
  id: string;
  expiresAt: Date;
  missing: string[];
  fileCount: number;
  totalSize: number;
}

interface StoredManifest {
  files: ManifestFile[];
  expiresAt: string;
}

/** The answer of the upload that spent a manifest, kept so that a repeat of that request can be replayed. */
interface StoredAnswer {
  /** SHA-256 (hex) of the request's Idempotency-Key. */
  idempotencyKey: string;
  /** The assembled archive's SHA-256 and size, as the first request deployed it. */
  sha256: string;
  size: number;
}

const SHA256 = /^[0-9a-f]{64}$/;
const ID = /^[0-9a-f-]{36}$/;
/** Storage lookups (and downloads) at once while checking or assembling a manifest. */
const PARALLEL = 16;
/** How many missing hashes an error lists. */
const LISTED = 100;
/** How long a spent manifest is remembered as spent: as long as it could be used, and a margin for clocks. */
const SPENT_SECONDS = (MANIFEST_TTL_MS + 10 * 60 * 1000) / 1000;
/** The Retry-After of an upload refused while another of the account is being assembled. */
const BUSY_RETRY_SECONDS = 5;

/**
 * Uploads that send only what is new. A client first sends a manifest (path → SHA-256 and size);
 * Hoist answers with the hashes it lacks among the files this account sent before. The client then
 * uploads a small ZIP of those files only, with the manifest's id, through the Local-to-Live routes;
 * Hoist checks every byte against the manifest, keeps each file by hash (per account, so no account
 * learns what another one stores, within the plan's bounds: see KeptFiles), assembles the whole site as a ZIP and
 * deploys it like any upload, every archive check included.
 *
 * What one manifest may cost is bounded: its files add up to no more than the largest ZIP the account could upload
 * (the server's maxArchiveBytes, or the plan's archive_bytes when lower); it serves one upload (spent by the first,
 * whatever then happens to it); packing stops once the ZIP passes maxArchiveBytes; and an account assembles one
 * site at a time on each process.
 */
export class UploadManifests {
  /** The accounts with a site being assembled on this process. */
  private readonly assembling = new Set<string>();

  constructor(
    private readonly storage: Storage,
    private readonly kept: KeptFiles,
    private readonly archive: Archive,
    private readonly workspaces: Workspaces,
    private readonly clock: Clock,
    /** The largest upload: the assembled ZIP is held to it like any other. */
    private readonly maxArchiveBytes: number,
    /** Counts the manifests each account sends, within its plan's upload_manifests_per_hour. */
    private readonly limits: { limiter: RateLimiter; entitlements: Pick<EntitlementService, 'planOf'> },
  ) {}

  /**
   * Checks `files` (a site's whole tree), keeps the manifest for an hour and answers which hashes
   * the account has not sent before. Every manifest sent counts against the plan's
   * upload_manifests_per_hour, in a sliding hour, before it is read: past it this throws rate_limited
   * (with `retry_after` and `limit`). Throws invalid_request naming the first bad entry, or, when the files add up
   * to more than the largest ZIP the account could upload, payload_too_large (past the server's maxArchiveBytes) or
   * plan_restricted (past the plan's archive_bytes), each with `limit`. Writes nothing when it throws.
   */
  async create(accountId: string, files: unknown): Promise<CreatedManifest> {
    const plan = await this.limits.entitlements.planOf(accountId);
    await this.assertRate(accountId, plan);
    const checked = checkFiles(files);
    const totalSize = sizeOf(checked);
    this.assertWithinUpload(plan, totalSize);
    const id = uuidV7(this.clock.now());
    const expiresAt = new Date(this.clock.now().getTime() + MANIFEST_TTL_MS);
    const hashes = [...new Set(checked.map((f) => f.sha256))];
    const known = await this.kept.use(accountId, hashes);
    const stored: StoredManifest = { files: checked, expiresAt: expiresAt.toISOString() };
    await this.storage.put(this.manifestKey(accountId, id), bufferStream(JSON.stringify(stored)));
    return {
      id,
      expiresAt,
      missing: hashes.filter((h) => !known.has(h)),
      fileCount: checked.length,
      totalSize,
    };
  }

  /**
   * The whole site of manifest `id` as an upload in Storage: the files of `partial` (the ZIP of new
   * files the client sent, or null when nothing was new) checked against the manifest and kept, the
   * others taken from what the account sent before. The assembled ZIP passes every archive check
   * before this answers. Deletes `partial`. Throws not_found (no such manifest for the account),
   * gone (expired, or used already: see `spend`), rate_limited (with `retry_after`, the manifest unspent) while
   * another site of the account is being assembled on this process, payload_too_large or plan_restricted (the
   * manifest's files, or the ZIP, larger than an upload may be) or invalid_request (a file that does not match, a
   * hash still missing, a path the archive checks refuse).
   */
  async assemble(accountId: string, id: string, partial: UploadedArchive | null): Promise<UploadedArchive> {
    try {
      const manifest = await this.load(accountId, id);
      // Held again to what an upload may be now: a manifest sent before the plan changed.
      this.assertWithinUpload(await this.limits.entitlements.planOf(accountId), sizeOf(manifest.files));
      if (this.assembling.has(accountId))
        throw rateLimited(
          'Another upload of this account is being assembled from a manifest; try again once it is done',
          BUSY_RETRY_SECONDS,
          { limit: 1 },
        );
      this.assembling.add(accountId);
      try {
        await this.spend(accountId, id);
        return await this.build(accountId, manifest, partial);
      } finally {
        this.assembling.delete(accountId);
      }
    } finally {
      if (partial) await this.storage.delete(partial.key).catch(() => undefined); // swept with stale uploads
    }
  }

  /**
   * Keeps the answer of the upload that spent manifest `id` with `idempotencyKey` (its archive's hash and size), so
   * that a repeat of that request (`repeatOf`) is answered as the first was. Call it once the deployment started.
   */
  async answered(
    accountId: string,
    id: string,
    idempotencyKey: string,
    upload: Pick<UploadedArchive, 'sha256' | 'size'>,
  ): Promise<void> {
    const answer: StoredAnswer = { idempotencyKey: hashOf(idempotencyKey), sha256: upload.sha256, size: upload.size };
    await this.storage.put(this.answerKey(accountId, id), bufferStream(JSON.stringify(answer)));
  }

  /**
   * For a request that repeats (same `idempotencyKey`) the upload that spent manifest `id` and started a deployment:
   * the archive to give the deployment use case, which then replays that deployment's answer (the key names no
   * stored object: nothing is assembled again). Null for any other request. Deletes `partial` when it answers one.
   * Throws not_found or gone as `assemble` does for an unknown or expired manifest.
   */
  async repeatOf(
    accountId: string,
    id: string,
    idempotencyKey: string,
    partial: UploadedArchive | null,
  ): Promise<UploadedArchive | null> {
    await this.load(accountId, id);
    const body = await this.storage.get(this.answerKey(accountId, id)).catch((err) => {
      if (err instanceof HoistError && err.code === 'not_found') return null;
      throw err;
    });
    if (!body) return null;
    const answer = JSON.parse((await bytesOf(body)).toString()) as StoredAnswer;
    if (answer.idempotencyKey !== hashOf(idempotencyKey)) return null;
    if (partial) await this.storage.delete(partial.key).catch(() => undefined);
    return { key: `uploads/${randomUUID()}.zip`, sha256: answer.sha256, size: answer.size, filename: null };
  }

  /** Assembles the site of `manifest` (see assemble) in a workspace and stores it as an upload. */
  private async build(accountId: string, manifest: StoredManifest, partial: UploadedArchive | null) {
    return this.workspaces.run('manifest', async (dir): Promise<UploadedArchive> => {
      const site = join(dir, 'site');
      const sent = partial ? await this.takeSent(accountId, manifest, partial.key, dir, site) : new Set<string>();
      // The other files, each content fetched once (held to the manifest's size) and linked at every path holding it.
      const paths = new Map<string, string[]>();
      const sizes = new Map<string, number>();
      for (const f of manifest.files)
        if (!sent.has(f.path)) {
          paths.set(f.sha256, [...(paths.get(f.sha256) ?? []), join(site, f.path)]);
          sizes.set(f.sha256, f.size);
        }
      const hashes = [...paths.keys()];
      await this.kept.use(accountId, hashes);
      const found = await atMost(PARALLEL, hashes, (sha256) =>
        this.fetchBlob(accountId, sha256, sizes.get(sha256)!, paths.get(sha256)!),
      );
      const missing = hashes.filter((_, i) => !found[i]);
      if (missing.length)
        throw invalid(`${missing.length} file(s) of the manifest were neither sent nor sent before; send them`, {
          field: 'file',
          missing: missing.slice(0, LISTED),
        });
      const zip = join(dir, 'site.zip');
      // Stopped as soon as the ZIP passes the largest upload; checked again for an Archive that does not stop.
      await this.archive.pack(site, zip, { maxBytes: this.maxArchiveBytes }).catch((err) => {
        throw err instanceof HoistError && err.code === 'payload_too_large'
          ? assembledTooLarge(this.maxArchiveBytes)
          : err;
      });
      const { size } = await stat(zip);
      if (size > this.maxArchiveBytes) throw assembledTooLarge(this.maxArchiveBytes);
      await this.archive.inspect(zip, {}).catch((err) => {
        throw asInvalid(err);
      });
      const stored = await this.storage.put(`uploads/${randomUUID()}.zip`, createReadStream(zip));
      return { ...stored, filename: null };
    });
  }

  /**
   * Removes the stored manifests that can no longer be used (an hour after they were sent, with a margin for
   * clocks that differ between processes); returns how many.
   */
  async removeExpired(): Promise<number> {
    const cutoff = this.clock.now().getTime() - MANIFEST_TTL_MS - 10 * 60 * 1000;
    let removed = 0;
    for await (const o of this.storage.list('upload-manifests/')) {
      if (o.modifiedAt.getTime() >= cutoff) continue;
      await this.storage.delete(o.key);
      removed++;
    }
    return removed;
  }

  /** Counts one manifest of the account; throws rate_limited past its plan's upload_manifests_per_hour. */
  private async assertRate(accountId: string, plan: Plan): Promise<void> {
    const limit = plan.limits.upload_manifests_per_hour;
    const { allowed, retryAfter } = await this.limits.limiter.hit(`manifests:${accountId}`, limit, 3600);
    if (allowed) return;
    throw rateLimited(`At most ${limit} upload manifests an hour on this plan; try again later`, retryAfter, { limit });
  }

  /**
   * Throws unless a site of `totalSize` bytes could be uploaded as a ZIP: payload_too_large past the server's
   * maxArchiveBytes, plan_restricted past the plan's archive_bytes (the refusals of a ZIP that large), each with
   * `limit`. A manifest declares the bytes its upload packs: they are held to what an upload may send.
   */
  private assertWithinUpload(plan: Plan, totalSize: number): void {
    const what = `The manifest's files add up to ${totalSize} bytes`;
    if (totalSize > this.maxArchiveBytes)
      throw new HoistError('payload_too_large', `${what}; an upload holds at most ${this.maxArchiveBytes}`, {
        limit: this.maxArchiveBytes,
      });
    try {
      assertPlanAllows(plan, 'archive_bytes', totalSize, 0);
    } catch (err) {
      if (!(err instanceof HoistError)) throw err;
      const limit = plan.limits.archive_bytes;
      throw new HoistError(err.code, `${what}; the ${plan.name} plan's uploads hold at most ${limit}`, err.details);
    }
  }

  /**
   * Spends manifest `id`: the first use passes, any later one throws gone. A compare-and-set in rate_hits (a limit of
   * one use in the manifest's lifetime), shared by every process: of two uses at once, never both pass.
   */
  private async spend(accountId: string, id: string): Promise<void> {
    const { allowed } = await this.limits.limiter.hit(`manifest-used:${accountId}:${id}`, 1, SPENT_SECONDS);
    if (!allowed)
      throw new HoistError(
        'gone',
        'This upload manifest was used already: each serves one upload; send a new manifest for this one',
      );
  }

  /** The manifest `id` of the account, unexpired. */
  private async load(accountId: string, id: string): Promise<StoredManifest> {
    if (!ID.test(id))
      throw invalid('manifest_id must be the id POST /api/v1/upload-manifests answered', { field: 'manifest_id' });
    // The key names the account: another account's manifest is not found.
    const body = await this.storage.get(this.manifestKey(accountId, id)).catch((err) => {
      if (!(err instanceof HoistError && err.code === 'not_found')) throw err;
      // A manifest removed once expired is still told apart from one that never was: its id holds its time.
      const sent = timeOfV7(id);
      throw sent !== null && sent + MANIFEST_TTL_MS <= this.clock.now().getTime()
        ? new HoistError('gone', 'This upload manifest has expired; send the manifest again')
        : new HoistError('not_found', 'Upload manifest not found');
    });
    const m = JSON.parse((await bytesOf(body)).toString()) as StoredManifest;
    if (new Date(m.expiresAt) <= this.clock.now())
      throw new HoistError('gone', 'This upload manifest has expired; send the manifest again');
    return m;
  }

  /**
   * Checks the ZIP the client sent (every archive rule) and each of its files against the manifest:
   * a path it lists, with the bytes its hash names. Keeps each file by hash and lays it out under
   * `site`. Returns the paths it provided.
   */
  private async takeSent(
    accountId: string,
    manifest: StoredManifest,
    key: string,
    dir: string,
    site: string,
  ): Promise<Set<string>> {
    const zip = join(dir, 'sent.zip');
    await pipeline(await this.storage.get(key), createWriteStream(zip));
    const inspected = await this.archive.inspect(zip, {}).catch((err) => {
      throw asInvalid(err);
    });
    const sent = join(dir, 'sent');
    await this.archive.extract(zip, inspected, sent).catch((err) => {
      throw asInvalid(err);
    });
    const byPath = new Map(manifest.files.map((f) => [f.path, f]));
    const paths = new Set<string>();
    for (const file of inspected.files) {
      const path = inspected.prefix + file.path;
      const want = byPath.get(path);
      if (!want) throw invalid(`The ZIP holds ${JSON.stringify(path)}, which the manifest does not list`, { path });
      const sha256 = await sha256Of(join(sent, file.path));
      if (sha256 !== want.sha256 || file.size !== want.size)
        throw invalid(`The bytes of ${JSON.stringify(path)} do not match the manifest's SHA-256 and size`, {
          path,
          sha256,
          size: file.size,
        });
      paths.add(path);
    }
    // Kept only once every file matched: a refused upload leaves nothing behind.
    await this.kept.keep(
      accountId,
      inspected.files.map((file) => {
        const { sha256, size } = byPath.get(inspected.prefix + file.path)!;
        return { sha256, size, open: () => createReadStream(join(sent, file.path)) };
      }),
    );
    for (const file of inspected.files) await place(join(sent, file.path), join(site, inspected.prefix + file.path));
    return paths;
  }

  /**
   * Writes the account's kept file with hash `sha256` at every path of `dests`; false when there is none. Throws
   * invalid_request, having written no more than `size` bytes, when the file is not the `size` the manifest says: the
   * manifest's sizes bound what an upload lays out and packs.
   */
  private async fetchBlob(accountId: string, sha256: string, size: number, dests: string[]): Promise<boolean> {
    const body = await this.storage.get(this.blobKey(accountId, sha256)).catch((err) => {
      if (err instanceof HoistError && err.code === 'not_found') return null;
      throw err;
    });
    if (!body) return false;
    const [first, ...others] = dests;
    await mkdir(dirname(first), { recursive: true });
    let bytes = 0;
    const wrongSize = () =>
      invalid(`The file with sha256 ${sha256} is not ${size} bytes, as the manifest says`, { field: 'files' });
    const held = new Transform({
      transform(chunk: Buffer, _enc, done) {
        bytes += chunk.length;
        done(bytes > size ? wrongSize() : null, chunk);
      },
    });
    await pipeline(body, held, createWriteStream(first, { flags: 'wx' }));
    if (bytes !== size) throw wrongSize();
    for (const dest of others) await place(first, dest);
    return true;
  }

  private blobKey(accountId: string, sha256: string): string {
    return contentAddressedKey(`files/${accountId}`, sha256);
  }

  private manifestKey(accountId: string, id: string): string {
    return `upload-manifests/${accountId}/${id}.json`;
  }

  private answerKey(accountId: string, id: string): string {
    return `upload-manifests/${accountId}/${id}.answer.json`;
  }
}

export const UPLOAD_MANIFESTS = token<UploadManifests>('hoist.UploadManifests');

/** Most files a manifest may list: the archive checks' own bound. */
export const MANIFEST_MAX_FILES = 20_000;
const MAX_NAME_BYTES = 255;
const MAX_PATH_BYTES = 1024;

/**
 * The manifest's files, checked: 1 to MANIFEST_MAX_FILES entries of a relative path (no `..`, no
 * absolute or drive path, no backslash, no control character, no empty segment), a SHA-256 in hex
 * and a size; no path twice.
 */
function checkFiles(files: unknown): ManifestFile[] {
  if (!Array.isArray(files) || files.length === 0 || files.length > MANIFEST_MAX_FILES)
    throw invalid(`files must be a list of 1 to ${MANIFEST_MAX_FILES} entries`, { field: 'files' });
  const seen = new Set<string>();
  const sizeOf = new Map<string, number>();
  const checked = files.map((f: Partial<ManifestFile>, i) => {
    const field = `files[${i}]`;
    if (typeof f?.path !== 'string' || typeof f.sha256 !== 'string' || !Number.isSafeInteger(f.size))
      throw invalid(`${field} must be {"path": string, "sha256": hex, "size": integer}`, { field });
    const path = f.path;
    const segments = path.split('/');
    if (
      path.startsWith('/') ||
      /^[a-zA-Z]:/.test(path) ||
      path.includes('\\') ||
      /[\u0000-\u001f\u007f-\u009f]/.test(path) ||
      segments.some((s) => s === '' || s === '.' || s === '..')
    )
      throw invalid(`${field}.path ${JSON.stringify(path)} must be a relative path inside the site`, {
        field: `${field}.path`,
        code: 'archive_path_traversal',
      });
    // The archive checks' own bounds, before any name reaches the disk (past them, the file system refuses).
    if (Buffer.byteLength(path) > MAX_PATH_BYTES || segments.some((s) => Buffer.byteLength(s) > MAX_NAME_BYTES))
      throw invalid(
        `${field}.path is too long: at most ${MAX_NAME_BYTES} bytes a name and ${MAX_PATH_BYTES} bytes in all`,
        { field: `${field}.path`, code: 'archive_path_too_long' },
      );
    if (!SHA256.test(f.sha256)) throw invalid(`${field}.sha256 must be 64 lowercase hex digits`, { field });
    if (f.size! < 0) throw invalid(`${field}.size must be 0 or more`, { field });
    const folded = path.normalize('NFC').toLowerCase();
    if (seen.has(folded)) throw invalid(`${field}.path ${JSON.stringify(path)} is listed twice`, { field });
    seen.add(folded);
    // One content has one size: the size of a file taken from what was sent before is held to it.
    if ((sizeOf.get(f.sha256) ?? f.size) !== f.size)
      throw invalid(`${field}.size differs from another entry with the same sha256`, { field: `${field}.size` });
    sizeOf.set(f.sha256, f.size!);
    return { path, sha256: f.sha256, size: f.size! };
  });
  // A file named like another file's folder could not be laid out.
  for (const f of checked) {
    const segments = f.path.normalize('NFC').toLowerCase().split('/');
    for (let n = 1; n < segments.length; n++)
      if (seen.has(segments.slice(0, n).join('/')))
        throw invalid(`${JSON.stringify(f.path)} is inside ${JSON.stringify(segments.slice(0, n).join('/'))}, a file`, {
          field: 'files',
        });
  }
  return checked;
}

/** The bytes a manifest's files add up to. */
const sizeOf = (files: ManifestFile[]) => files.reduce((sum, f) => sum + f.size, 0);

/** The refusal of an assembled ZIP larger than the largest upload (archive-zip's pack stops with it too). */
const assembledTooLarge = (limit: number) =>
  new HoistError('payload_too_large', `The assembled ZIP is larger than ${limit} bytes`, { limit });

/** SHA-256 (hex) of a text. */
const hashOf = (text: string) => createHash('sha256').update(text).digest('hex');

/** A stream's bytes. */
async function bytesOf(body: AsyncIterable<unknown>): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of body) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** An archive check's failure as the 400 of the request that brought the archive. */
function asInvalid(err: unknown): unknown {
  if (!(err instanceof StageError)) return err;
  return invalid(err.message, { field: 'file', code: err.code });
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/** Moves (links) an extracted file to its place in the site. */
async function place(from: string, to: string): Promise<void> {
  await mkdir(dirname(to), { recursive: true });
  await link(from, to);
}

/** A UUID version 7: the milliseconds of `at`, then random bits. */
function uuidV7(at: Date): string {
  const hex = randomUUID().replace(/-/g, '').split('');
  hex.splice(0, 12, ...at.getTime().toString(16).padStart(12, '0').slice(-12));
  hex[12] = '7';
  const h = hex.join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The milliseconds a UUID version 7 holds; null for another version. */
function timeOfV7(id: string): number | null {
  return id[14] === '7' ? parseInt(id.slice(0, 8) + id.slice(9, 13), 16) : null;
}

const bufferStream = (data: string | Buffer) => Readable.from([Buffer.from(data)]);
