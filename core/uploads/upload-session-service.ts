import type { EntityManager, FilterQuery } from '@mikro-orm/core';
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Readable } from 'node:stream';
import type { HoistConfig } from '../../config/schema.js';
import type { EntitlementService } from '../billing/entitlement-service.js';
import { underOwnerLock } from '../billing/owner-lock.js';
import { Account } from '../entities/account.js';
import { Project } from '../entities/project.js';
import { UploadSession, type UploadPart, type UploadTransport } from '../entities/upload-session.js';
import type { UploadOptions } from '../entities/version.js';
import { HoistError, invalid, notFound } from '../errors.js';
import type { Clock } from '../ports/clock.js';
import { metered, type Storage, type StoredObject, type UploadedPart } from '../ports/storage.js';
import type { ProjectService } from '../projects/project-service.js';
import { rateLimited } from '../auth/rate-limiter.js';
import { token, type Logger } from '../tokens.js';

export const UPLOAD_SESSION_SERVICE = token<UploadSessionService>('hoist.UploadSessionService');

/** Largest ZIP of the resumable transport: the spec's canonical maximum. */
export const RESUMABLE_MAX_BYTES = 100_000_000;

/**
 * Sessions an account may hold open (neither used nor expired) at once: each may hold up to RESUMABLE_MAX_BYTES of
 * pieces in storage until it is finished or expires, so their number bounds what one account keeps there.
 */
export const MAX_OPEN_SESSIONS = 10;
/** Days a session's row stays after it expired (its URL answers gone meanwhile, then not found). */
export const SESSION_ROW_DAYS = 7;

/**
 * Pieces a tus upload may be stored in: each is an object of its own and an entry of the session row, so their number
 * is bounded. The piece that reaches the cap must complete the upload; one that would not is refused (conflict) and
 * nothing of it is kept. Pieces of RESUMABLE_MAX_BYTES / MAX_UPLOAD_PIECES (100 kB) or more never meet it.
 */
export const MAX_UPLOAD_PIECES = 1_000;

/** Size of every part but the last of a resumable upload sent straight to storage (presigned parts). */
export const DIRECT_PART_BYTES = 8 * 1024 * 1024;

/**
 * How a session's ZIP arrives: one multipart POST (`multipart`, proxied_multipart), tus PATCHes
 * through the API (`tus`, direct_storage_resumable on a storage without direct uploads), or parts
 * PUT to presigned storage URLs and completed with their ETags (`parts`, direct_storage_resumable
 * on a storage with direct uploads: S3).
 */
export type UploadMode = 'multipart' | 'tus' | 'parts';

/** The mode of `session`. */
export const modeOf = (session: UploadSession): UploadMode =>
  session.transport === 'proxied_multipart' ? 'multipart' : session.multipartUploadId ? 'parts' : 'tus';

/** The presigned part URLs of a `parts` session: part n holds bytes (n-1)·partSize up to n·partSize - 1 of the ZIP. */
export interface PartPlan {
  partSize: number;
  urls: { number: number; url: string; size: number }[];
}

/** A part as the client names it when completing a `parts` session. */
export interface CompletedPart {
  number: number;
  etag: string;
}

/**
 * What creating an upload session takes: who opens it, `name` (create or select) or `projectId`, and the upload's
 * settings.
 */
export interface NewUploadSession {
  /** The user who opens it: removing that member from the account expires it (expireSessionsOpenedBy). */
  userId: string;
  name?: string;
  projectId?: string;
  visibility?: string;
  filename?: string;
  options?: UploadOptions;
  transport?: UploadTransport;
  /** The ZIP's size in bytes; required for the resumable transport. */
  size?: number;
  /** Refused: named here so that the refusal can say how to supply them instead. */
  environment?: unknown;
  accessPassword?: unknown;
}

/** A created session, its secret token (shown once) and the largest ZIP it takes. */
export interface CreatedSession {
  session: UploadSession;
  token: string;
  project: Project | null;
  maxBytes: number;
  /** The part URLs of a `parts` session. */
  parts?: PartPlan;
}

const SECRETS =
  'An upload session cannot carry environment variables or an access password. Supply them one of two ways: ' +
  'create the project first (POST /api/v1/projects/), set them on it, and create the session with its project_id; ' +
  'or upload with the authenticated POST /api/v1/local-to-live, which takes them.';

const TOKEN = /^[A-Za-z0-9_-]{43}$/;
const sha256 = (token: string) => createHash('sha256').update(token).digest('hex');
// One answer for used and expired alike: it says nothing more about the token.
const gone = () => new HoistError('gone', 'This upload URL has been used or has expired; create a new upload session');
const wrongOffset = (offset: number) =>
  new HoistError('conflict', `Upload-Offset does not match; the upload is at byte ${offset}`, {
    field: 'Upload-Offset',
    offset,
  });
const pastSize = (size: number) =>
  new HoistError('payload_too_large', `This would take the upload past its declared size of ${size} bytes`, {
    limit: size,
  });
const tooManyPieces = (pieces: number, remaining: number) =>
  new HoistError(
    'conflict',
    `This upload holds ${pieces} pieces and takes at most ${MAX_UPLOAD_PIECES}: the next PATCH must carry all ` +
      `${remaining} remaining bytes. Send larger pieces (a few MiB each), or start again with a new upload session`,
    { limit: MAX_UPLOAD_PIECES, remaining },
  );
const how: Record<UploadMode, string> = {
  multipart: 'a multipart/form-data POST',
  tus: 'tus 1.0.0 (HEAD and PATCH)',
  parts: 'PUTs of its parts to their presigned URLs, then a POST of their ETags as JSON to upload_url',
};
const badParts = (message: string, details: Record<string, unknown> = {}) =>
  invalid(message, { field: 'parts', ...details });

/**
 * Upload sessions: short-lived, one-time upload URLs whose token is the credential. Creates them,
 * opens and spends them (compare-and-set), and keeps the accounting of resumable uploads, whose
 * pieces are stored as objects under `uploads/<session id>/` and joined when the last one arrives.
 */
export class UploadSessionService {
  constructor(
    private readonly em: EntityManager,
    private readonly storage: Storage,
    private readonly entitlements: EntitlementService,
    private readonly projects: ProjectService,
    private readonly clock: Clock,
    private readonly config: Pick<HoistConfig, 'uploadSessionTtlSeconds' | 'maxArchiveBytes'>,
    private readonly log: Logger,
  ) {}

  /** The largest ZIP `transport` takes. */
  maxBytes(transport: UploadTransport): number {
    return transport === 'direct_storage_resumable' ? RESUMABLE_MAX_BYTES : this.config.maxArchiveBytes;
  }

  /**
   * Creates a session and returns it with its token. Throws invalid_request (environment or access
   * password given, name and project_id both or neither, filename not .zip, no size for the
   * resumable transport), payload_too_large (size over the transport's maximum), plan_restricted
   * (size over the plan's archive_bytes; a project the plan would not let the upload create),
   * not_found (project_id) or rate_limited (MAX_OPEN_SESSIONS open already, with retry_after: the
   * seconds until the first of them expires), and writes nothing then.
   */
  async create(accountId: string, input: NewUploadSession): Promise<CreatedSession> {
    if (input.environment !== undefined) throw invalid(SECRETS, { field: 'environment' });
    if (input.accessPassword !== undefined) throw invalid(SECRETS, { field: 'access_password' });
    if (input.filename !== undefined && !/^[^/\\]+\.zip$/i.test(input.filename))
      throw invalid('filename must be the name of a ZIP, ending in .zip', { field: 'filename' });
    const transport = input.transport ?? 'proxied_multipart';
    const size = input.size ?? null;
    if (transport === 'direct_storage_resumable' && size === null) {
      throw invalid("size (the ZIP's size in bytes) is required for the direct_storage_resumable transport", {
        field: 'size',
      });
    }
    const max = this.maxBytes(transport);
    if (size !== null && size > max)
      throw new HoistError('payload_too_large', `The ZIP is larger than ${max} bytes, the most ${transport} takes`, {
        limit: max,
      });
    if (size !== null) await this.entitlements.assertWithin(accountId, 'archive_bytes', size, 0);
    const project = await this.target(accountId, input);

    await this.sweep(accountId);
    const token = randomBytes(32).toString('base64url');
    const now = this.clock.now();
    const storageKey = `uploads/${randomUUID()}.zip`;
    const direct = transport === 'direct_storage_resumable' ? this.storage.direct : undefined;
    const session = Object.assign(new UploadSession(), {
      accountId,
      userId: input.userId,
      tokenHash: sha256(token),
      projectId: project?.id ?? null,
      name: project ? null : input.name!.trim(),
      visibility: input.visibility ?? null,
      options: input.options ?? {},
      filename: input.filename ?? null,
      transport,
      declaredSize: size,
      storageKey,
      multipartUploadId: direct ? await direct.createMultipart(storageKey) : null,
      expiresAt: new Date(now.getTime() + this.config.uploadSessionTtlSeconds * 1000),
      createdAt: now,
    });
    try {
      // Under the account's lock: concurrent creates cannot pass the count together.
      await underOwnerLock(this.em, Account, accountId, async (tx) => {
        await this.assertRoom(tx, accountId);
        await tx.insert(session);
      });
    } catch (err) {
      if (direct) await this.abortMultipart(storageKey, session.multipartUploadId!);
      throw err;
    }
    const plan = await this.entitlements.planOf(accountId);
    const parts = direct ? await this.partPlan(session) : undefined;
    return { session, token, project, maxBytes: Math.min(max, plan.limits.archive_bytes), parts };
  }

  /**
   * The session of `token`, if its mode is one of `modes`: not_found for an unknown (or malformed)
   * token, gone for a used or expired one (the pieces an expired one received are deleted), and
   * invalid_request when the session's upload goes another way.
   */
  async open(token: string, ...modes: UploadMode[]): Promise<UploadSession> {
    const session = TOKEN.test(token)
      ? await this.em.findOne(UploadSession, { tokenHash: sha256(token) }, { disableIdentityMap: true })
      : null;
    if (!session) throw notFound('Upload URL');
    if (session.usedAt) throw gone();
    if (session.expiresAt <= this.clock.now()) {
      await this.dropParts(session);
      throw gone();
    }
    const mode = modeOf(session);
    if (!modes.includes(mode)) {
      throw invalid(`This upload URL belongs to a ${session.transport} session: send the ZIP with ${how[mode]}`, {
        field: 'transport',
        transport: session.transport,
      });
    }
    return session;
  }

  /** Spends the session before its one upload; of concurrent uses one wins, the others (and a late one) get gone. */
  async claim(session: UploadSession): Promise<void> {
    const now = this.clock.now();
    if (
      (await this.em.nativeUpdate(
        UploadSession,
        { id: session.id, usedAt: null, expiresAt: { $gt: now } },
        { usedAt: now },
      )) !== 1
    )
      throw gone();
  }

  /** Records the deployment the session's upload started. */
  async finish(session: UploadSession, operationId: string): Promise<void> {
    await this.em.nativeUpdate(UploadSession, { id: session.id }, { operationId });
  }

  /**
   * Stores `body` as the next piece of a resumable upload, which must start at the session's
   * offset (conflict with details.offset otherwise). The piece must not take the upload past its
   * declared size: payload_too_large, before a byte is read when `length` says so. Whatever `body`
   * yields before it ends is kept, so a piece cut short by a dropped connection counts. The piece
   * that completes the upload spends the session (`complete`); `assemble` comes next. An upload is stored in at most
   * MAX_UPLOAD_PIECES pieces: the last of them must complete it, else conflict (details.limit and .remaining, the
   * bytes it must carry), before a byte is read when `length` says so, and nothing of it is kept.
   */
  async append(
    session: UploadSession,
    offset: number,
    body: Readable,
    length?: number,
  ): Promise<{ session: UploadSession; complete: boolean }> {
    const size = session.declaredSize!;
    const room = size - session.offset;
    if (offset !== session.offset || (length !== undefined && length > room)) {
      body.destroy();
      throw offset !== session.offset ? wrongOffset(session.offset) : pastSize(size);
    }
    const number = session.parts.length + 1;
    // The last piece the cap allows must complete the upload.
    const last = number >= MAX_UPLOAD_PIECES;
    if (number > MAX_UPLOAD_PIECES || (last && length !== undefined && length !== room)) {
      body.destroy();
      throw tooManyPieces(session.parts.length, room);
    }
    // A random suffix: a concurrent piece at the same offset must not overwrite this one before the compare-and-set
    // decides.
    const key = `uploads/${session.id}/part-${number}-${randomBytes(6).toString('hex')}`;
    const stored = await this.storage.put(key, body, { maxBytes: room }).catch((err) => {
      throw err instanceof HoistError && err.code === 'payload_too_large' ? pastSize(size) : err;
    });
    if (stored.size === 0 || (last && stored.size !== room)) {
      await this.storage.delete(key);
      if (stored.size === 0) return { session, complete: false };
      throw tooManyPieces(session.parts.length, room);
    }
    const parts: UploadPart[] = [...session.parts, { number, size: stored.size, key }];
    const next = session.offset + stored.size;
    const usedAt = next === size ? this.clock.now() : null;
    const won = await this.em.nativeUpdate(
      UploadSession,
      { id: session.id, offset: session.offset, usedAt: null },
      { offset: next, parts, usedAt },
    );
    if (won !== 1) {
      await this.storage.delete(key);
      const now = await this.em.findOne(UploadSession, { id: session.id }, { disableIdentityMap: true });
      throw !now || now.usedAt ? gone() : wrongOffset(now.offset);
    }
    return { session: Object.assign(session, { offset: next, parts, usedAt }), complete: usedAt !== null };
  }

  /**
   * Joins the pieces of a completed resumable upload into its object at `storageKey`, hashed and
   * counted on the way, and deletes the pieces (also when joining fails).
   */
  async assemble(session: UploadSession): Promise<StoredObject> {
    const { storage } = this;
    async function* bytes() {
      for (const part of session.parts) yield* await storage.get(part.key!);
    }
    try {
      return await storage.put(session.storageKey, Readable.from(bytes()), { maxBytes: session.declaredSize! });
    } finally {
      await this.dropParts(session);
    }
  }

  /**
   * Presigned URLs for every part of a `parts` session, valid until the session expires, each bound to its part's
   * size: a PUT of any other length is refused by storage, so a session never holds more than its declared size.
   */
  async partPlan(session: UploadSession): Promise<PartPlan> {
    const direct = this.storage.direct!;
    const size = session.declaredSize!;
    const partSize = Math.max(DIRECT_PART_BYTES, direct.minPartBytes, Math.ceil(size / 10_000));
    const ttl = Math.max(1, Math.ceil((session.expiresAt.getTime() - this.clock.now().getTime()) / 1000));
    const urls = [];
    for (let number = 1; (number - 1) * partSize < size; number++) {
      const bytes = Math.min(partSize, size - (number - 1) * partSize);
      // Bound to its planned size: storage refuses a PUT of any other length to it.
      urls.push({
        number,
        url: await direct.partUrl(session.storageKey, session.multipartUploadId!, number, bytes, ttl),
        size: bytes,
      });
    }
    return { partSize, urls };
  }

  /**
   * Completes a `parts` session from the parts the client names (by number, with the ETags its
   * PUTs answered): each must have reached storage with that ETag, and together they must hold the
   * declared size (else invalid_request, or payload_too_large past it, and the session stays as it
   * was, to be fixed and completed again). Then spends the session, joins the parts into the
   * object at `storageKey` and reads it once for its size and SHA-256, which must match `sha256`
   * when given (invalid_request, and the object is deleted, otherwise).
   */
  async completeParts(session: UploadSession, parts: CompletedPart[], sha256?: string): Promise<StoredObject> {
    const direct = this.storage.direct!;
    const { storageKey: key, multipartUploadId: uploadId } = session;
    const size = session.declaredSize!;
    if (!parts.length) throw badParts('parts must list the uploaded parts, from part_number 1');
    parts.forEach((p, i) => {
      if (p.number !== i + 1)
        throw badParts(`parts must be numbered 1, 2, 3… in order; entry ${i + 1} has part_number ${p.number}`, {
          part_number: p.number,
        });
    });
    const received = new Map((await direct.listParts(key, uploadId!)).map((p) => [p.number, p]));
    const named: UploadedPart[] = [];
    for (const p of parts) {
      const got = received.get(p.number);
      if (!got)
        throw badParts(`Part ${p.number} has not reached storage: PUT it to its URL`, { part_number: p.number });
      if (got.etag !== p.etag.replace(/"/g, ''))
        throw badParts(`The ETag of part ${p.number} does not match the part storage holds`, { part_number: p.number });
      named.push(got);
    }
    const total = named.reduce((n, p) => n + p.size, 0);
    if (total > size) throw pastSize(size);
    if (total < size)
      throw invalid(`The parts hold ${total} bytes, not the declared size of ${size}`, { field: 'parts', size: total });

    await this.claim(session);
    try {
      await direct.completeMultipart(key, uploadId!, named);
    } catch (err) {
      await this.abortMultipart(key, uploadId!);
      throw err;
    }
    try {
      const stored = await this.measure(key, size);
      if (sha256 !== undefined && stored.sha256 !== sha256.toLowerCase()) {
        throw invalid(`The ZIP's SHA-256 is ${stored.sha256}, not the sha256 given`, { field: 'sha256' });
      }
      await this.em.nativeUpdate(UploadSession, { id: session.id }, { offset: size, parts: named });
      return stored;
    } catch (err) {
      await this.storage.delete(key);
      throw err;
    }
  }

  /** Reads the object at `key` once for its size (at most `limit`) and SHA-256. */
  private async measure(key: string, limit: number): Promise<StoredObject> {
    const input = metered(await this.storage.get(key), limit);
    for await (const _ of input.chunks);
    const { size, sha256 } = input.digest();
    if (size !== limit)
      throw invalid(`The ZIP is ${size} bytes, not the declared size of ${limit}`, { field: 'parts', size });
    return { key, size, sha256 };
  }

  /**
   * Checks name / project_id and, for a project the upload would create, the plan, now rather than after the upload.
   */
  private async target(accountId: string, { name, projectId, visibility }: NewUploadSession): Promise<Project | null> {
    if (projectId !== undefined) {
      if (name !== undefined)
        throw invalid('Give either name (the project to create or select) or project_id, not both', { field: 'name' });
      if (visibility !== undefined)
        throw invalid('visibility applies only to a project the upload creates (a session with name)', {
          field: 'visibility',
        });
      return this.projects.get(accountId, projectId);
    }
    const trimmed = name?.trim();
    if (!trimmed)
      throw invalid('name is required: the project to create or select (or give project_id)', { field: 'name' });
    if (!(await this.em.count(Project, { accountId, name: trimmed, status: 'active' }))) {
      await this.entitlements.assertVisibility(accountId, visibility ?? 'draft');
      await this.entitlements.assertWithin(
        accountId,
        'projects',
        await this.em.count(Project, { accountId, status: 'active' }),
      );
    }
    return null;
  }

  /**
   * Deletes the pieces the session holds (and discards its unfinished storage multipart upload); an unfinished upload
   * starts over.
   */
  private async dropParts(session: UploadSession, em = this.em): Promise<void> {
    if (session.multipartUploadId && !session.usedAt) {
      await this.storage.direct?.abortMultipart(session.storageKey, session.multipartUploadId);
      await em.nativeUpdate(UploadSession, { id: session.id }, { multipartUploadId: null });
    }
    if (!session.parts.length) return;
    // Off the row first, by compare-and-set on what was read: a piece that completed the upload meanwhile (a request
    // begun before it expired) keeps the pieces its join reads. A stop before the deletes leaves them to removeExpired.
    const taken = await em.nativeUpdate(
      UploadSession,
      { id: session.id, offset: session.offset, usedAt: session.usedAt ? { $ne: null } : null },
      { parts: [], ...(session.usedAt ? {} : { offset: 0 }) },
    );
    if (taken) for (const part of session.parts) if (part.key) await this.storage.delete(part.key);
  }

  /** Throws rate_limited when the account holds MAX_OPEN_SESSIONS sessions neither used nor expired. */
  private async assertRoom(em: EntityManager, accountId: string): Promise<void> {
    const now = this.clock.now();
    const open = await em.find(
      UploadSession,
      { accountId, usedAt: null, expiresAt: { $gt: now } },
      { fields: ['expiresAt'], orderBy: { expiresAt: 'asc' }, limit: MAX_OPEN_SESSIONS, disableIdentityMap: true },
    );
    if (open.length < MAX_OPEN_SESSIONS) return;
    const retryAfter = Math.max(1, Math.ceil((open[0].expiresAt.getTime() - now.getTime()) / 1000));
    throw rateLimited(
      `At most ${MAX_OPEN_SESSIONS} upload sessions may be open at once: finish one, or wait for one to expire`,
      retryAfter,
      { limit: MAX_OPEN_SESSIONS },
    );
  }

  /**
   * For every account (one that never comes back too): deletes the pieces of expired, unfinished resumable uploads,
   * and sessions expired more than SESSION_ROW_DAYS ago with whatever is left under their pieces' prefix (a process
   * that stopped before joining or dropping them), `batch` rows read at a time until none is left or `stopped()`. A
   * session whose removal fails (storage refusing one key) is logged and passed over until the next call, so it never
   * holds back the others. The workers run it periodically (any number of them: what one removed, another skips).
   * Returns how many of each it removed, and how many failed.
   */
  async removeExpired(
    batch = 500,
    stopped: () => boolean = () => false,
  ): Promise<{ uploads: number; sessions: number; failed: number }> {
    // Outside any request: an entity manager of its own.
    const em = this.em.fork();
    const now = this.clock.now();
    const uploads = await this.eachOf(em, batch, stopped, stale(now), (session) => this.dropParts(session, em));
    const before = new Date(now.getTime() - SESSION_ROW_DAYS * 86_400_000);
    const sessions = await this.eachOf(em, batch, stopped, { expiresAt: { $lt: before } }, async ({ id }) => {
      for await (const piece of this.storage.list(`uploads/${id}/`)) await this.storage.delete(piece.key);
      await em.nativeDelete(UploadSession, { id });
    });
    return { uploads: uploads.done, sessions: sessions.done, failed: uploads.failed + sessions.failed };
  }

  /**
   * Runs `act` on every session `where` finds, `batch` at a time in id order (each batch after the last id of the one
   * before, so a session that failed is not read again in this call), until none is left or `stopped()`. Counts the
   * sessions done and failed; a failure is logged.
   */
  private async eachOf(
    em: EntityManager,
    batch: number,
    stopped: () => boolean,
    where: FilterQuery<UploadSession>,
    act: (session: UploadSession) => Promise<void>,
  ): Promise<{ done: number; failed: number }> {
    const count = { done: 0, failed: 0 };
    for (let after = NIL_UUID; !stopped();) {
      const rows = await em.find(
        UploadSession,
        { $and: [where, { id: { $gt: after } }] },
        { orderBy: { id: 'asc' }, limit: batch, disableIdentityMap: true },
      );
      for (const session of rows) {
        try {
          await act(session);
          count.done++;
        } catch (err) {
          count.failed++;
          this.log.warn({ err, session: session.id }, 'what an expired upload session left could not be removed');
        }
      }
      if (rows.length < batch) break;
      after = rows[rows.length - 1].id;
    }
    return count;
  }

  /** Deletes the pieces of the account's expired, unfinished resumable uploads; how many. */
  private async sweep(accountId: string): Promise<number> {
    const expired = await this.em.find(
      UploadSession,
      { $and: [{ accountId }, stale(this.clock.now())] },
      {
        disableIdentityMap: true,
      },
    );
    for (const session of expired) await this.dropParts(session);
    return expired.length;
  }

  /** Aborts the multipart upload of a failed step; one left behind holds its parts in storage until removed. */
  private async abortMultipart(key: string, uploadId: string): Promise<void> {
    await this.storage
      .direct!.abortMultipart(key, uploadId)
      .catch((err) => this.log.warn({ err, key }, 'an unfinished multipart upload could not be aborted'));
  }
}

/** Below every session id: where the first batch of a sweep starts. */
const NIL_UUID = '00000000-0000-0000-0000-000000000000';

/** Expired, unfinished resumable uploads that still hold pieces in storage at `now`. */
const stale = (now: Date): FilterQuery<UploadSession> => ({
  usedAt: null,
  expiresAt: { $lte: now },
  $or: [{ offset: { $gt: 0 } }, { multipartUploadId: { $ne: null } }],
});

/**
 * Expires at once, in `em` (the caller's transaction), every session of the account that `userId` opened and that is
 * still open (neither used nor expired): their URLs then answer gone, as an expired one does, and the next sweep
 * removes what they received. Resolves how many it expired.
 */
export function expireSessionsOpenedBy(
  em: EntityManager,
  accountId: string,
  userId: string,
  now: Date,
): Promise<number> {
  return em.nativeUpdate(
    UploadSession,
    { accountId, userId, usedAt: null, expiresAt: { $gt: now } },
    { expiresAt: now },
  );
}
