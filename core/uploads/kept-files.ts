import type { EntityManager } from '@mikro-orm/core';
import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import { underOwnerLock } from '../billing/owner-lock.js';
import { plans, type PlanLimits } from '../billing/plans.js';
import { Account } from '../entities/account.js';
import { KeptFile } from '../entities/kept-file.js';
import type { Clock } from '../ports/clock.js';
import { contentAddressedKey, type Storage } from '../ports/storage.js';
import { token } from '../tokens.js';

/** How long a manifest can be used for an upload: a file it found is never removed for that long after. */
export const MANIFEST_TTL_MS = 60 * 60 * 1000;
/** Past its manifest's life, with a margin for clocks that differ between processes. */
const IN_USE_MS = MANIFEST_TTL_MS + 10 * 60 * 1000;
/** An object under `files/` with no row, older than this, was left by a crash (a row is written before its object). */
const ORPHAN_AFTER_MS = MANIFEST_TTL_MS;
/** Rows read or written per query. */
const BATCH = 500;

/** A file to keep: its hash and size (checked against its bytes), and its bytes on demand. */
export interface FileToKeep {
  sha256: string;
  size: number;
  open(): Readable;
}

/** What a sweep removed. */
export interface KeptFilesSwept {
  /** Files unused for the plan's kept_file_days. */
  expired: number;
  /** Files dropped, least recently used first, to bring an account back within its kept_file_bytes. */
  evicted: number;
  /** Objects no row claimed (a crash between a row's removal and its object's). */
  orphans: number;
}

type Limits = Pick<PlanLimits, 'kept_file_bytes' | 'kept_file_days'>;

/**
 * The files accounts sent through manifest uploads, kept by hash per account (`files/<account>/sha256/<hex>`),
 * within the plan's bounds: a file goes kept_file_days after the last manifest or upload that used it, and an
 * account keeps at most kept_file_bytes (past them the least recently used go first, or the new file is not kept
 * and a later manifest asks for it again; an upload never fails for it). A file a manifest found is not removed
 * while that manifest can be used (MANIFEST_TTL_MS after it was last used).
 *
 * The database row is the account's claim on the object: every change of an account's rows holds the account's
 * lock, so its bytes stay within the cap however many uploads race. Objects are written after their row and
 * removed after it; a removal then takes `stored` back from any row that came back meanwhile, and a writer sets
 * it only if its claim still holds, so a row says `stored` only of an object that is there.
 */
export class KeptFiles {
  constructor(
    private readonly em: EntityManager,
    private readonly storage: Storage,
    private readonly clock: Clock,
    /** The account's limits (its plan's by default), and the least of them any account has. */
    private readonly limits: { of?: (accountId: string) => Promise<Limits>; least: Limits } = {
      least: {
        kept_file_days: Math.min(...Object.values(plans).map((p) => p.limits.kept_file_days)),
        kept_file_bytes: Math.min(...Object.values(plans).map((p) => p.limits.kept_file_bytes)),
      },
    },
  ) {}

  /**
   * Of `hashes`, those the account has kept; each is marked used now, so it stays at least while a manifest
   * that found it can be used.
   */
  async use(accountId: string, hashes: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    if (!hashes.length) return found;
    await underOwnerLock(this.em, Account, accountId, async (tx) => {
      const now = this.clock.now();
      for (const batch of chunks(hashes)) {
        await tx.nativeUpdate(KeptFile, { accountId, sha256: { $in: batch }, stored: true }, { lastUsedAt: now });
        for (const row of await tx.find(KeptFile, { accountId, sha256: { $in: batch }, stored: true }))
          found.add(row.sha256);
      }
    });
    return found;
  }

  /**
   * Keeps `files` for the account, within its kept_file_bytes: the least recently used files no manifest may
   * still need make room, and a file there is no room for is not kept. Never fails for the cap; rejects only
   * when Storage does.
   */
  async keep(accountId: string, files: FileToKeep[]): Promise<void> {
    const unique = [...new Map(files.map((f) => [f.sha256, f])).values()];
    if (!unique.length) return;
    const claim = randomUUID();
    const { write, drop } = await underOwnerLock(this.em, Account, accountId, async (tx) => {
      const now = this.clock.now();
      const { kept_file_bytes: cap } = await this.limitsOf(tx, accountId);
      const rows = new Map<string, KeptFile>();
      for (const batch of chunks(unique.map((f) => f.sha256)))
        for (const row of await tx.find(KeptFile, { accountId, sha256: { $in: batch } })) rows.set(row.sha256, row);
      const wanted = new Set(unique.map((f) => f.sha256));
      const room = new Room(tx, accountId, cap, now, await this.bytesOf(tx, accountId), wanted);
      const write: FileToKeep[] = [];
      for (const f of unique) {
        const row = rows.get(f.sha256);
        if (row) {
          row.lastUsedAt = now;
          if (row.stored) continue;
          row.claim = claim;
          write.push(f);
        } else if (await room.make(f.size)) {
          tx.persist(
            Object.assign(new KeptFile(), { accountId, sha256: f.sha256, size: f.size, lastUsedAt: now, claim }),
          );
          write.push(f);
        }
      }
      await tx.flush();
      return { write, drop: await room.evict() };
    });
    await this.drop(accountId, drop);
    for (const f of write) {
      await this.storage.putContentAddressed(prefixOf(accountId), f.open());
      await this.em.fork().nativeUpdate(KeptFile, { accountId, sha256: f.sha256, claim }, { stored: true });
    }
  }

  /**
   * Removes what the plans no longer allow: files unused for their account's kept_file_days, the least recently
   * used files of an account past its kept_file_bytes (a plan changed), and objects no row claims. Any number of
   * processes may run it at once.
   */
  async sweep(): Promise<KeptFilesSwept> {
    const swept = { expired: 0, evicted: 0, orphans: 0 };
    const now = this.clock.now().getTime();
    const { kept_file_days: shortest, kept_file_bytes: smallest } = this.limits.least;
    const accounts = new Set<string>();
    // Accounts with a file older than the shortest retention, and those past the smallest cap.
    let after = new Date(0);
    for (;;) {
      const rows = await this.em
        .fork()
        .find(
          KeptFile,
          { lastUsedAt: { $gte: after, $lt: new Date(now - shortest * DAY_MS) } },
          { fields: ['accountId', 'lastUsedAt'], orderBy: { lastUsedAt: 'asc' }, limit: BATCH },
        );
      for (const r of rows) accounts.add(r.accountId);
      if (rows.length < BATCH) break;
      const last = rows[rows.length - 1].lastUsedAt;
      after = last.getTime() === after.getTime() ? new Date(last.getTime() + 1) : last;
    }
    const totals: { account_id: string }[] = await this.em
      .fork()
      .getConnection()
      .execute('select account_id from kept_files group by account_id having sum(size) > ?', [smallest]);
    for (const t of totals) accounts.add(t.account_id);
    for (const accountId of accounts) {
      const trimmed = await this.trim(accountId);
      swept.expired += trimmed.expired;
      swept.evicted += trimmed.evicted;
    }
    swept.orphans = await this.removeOrphans();
    return swept;
  }

  /** Removes the account's expired files, then its least recently used ones past the cap. */
  private async trim(accountId: string): Promise<{ expired: number; evicted: number }> {
    const { expired, evicted } = await underOwnerLock(this.em, Account, accountId, async (tx) => {
      const now = this.clock.now();
      const limits = await this.limitsOf(tx, accountId);
      const old = await tx.find(
        KeptFile,
        { accountId, lastUsedAt: { $lt: new Date(now.getTime() - limits.kept_file_days * DAY_MS) } },
        { fields: ['sha256'] },
      );
      for (const batch of chunks(old.map((r) => r.id))) await tx.nativeDelete(KeptFile, { id: { $in: batch } });
      const room = new Room(tx, accountId, limits.kept_file_bytes, now, await this.bytesOf(tx, accountId));
      await room.shrink();
      return { expired: old.map((r) => r.sha256), evicted: await room.evict() };
    });
    await this.drop(accountId, [...expired, ...evicted]);
    return { expired: expired.length, evicted: evicted.length };
  }

  /** Removes the objects under `files/` that no row claims, written more than ORPHAN_AFTER_MS ago. */
  private async removeOrphans(): Promise<number> {
    const cutoff = this.clock.now().getTime() - ORPHAN_AFTER_MS;
    const seen = new Map<string, string[]>();
    for await (const o of this.storage.list('files/')) {
      const m = /^files\/([0-9a-f-]{36})\/sha256\/([0-9a-f]{64})$/.exec(o.key);
      if (m && o.modifiedAt.getTime() < cutoff) seen.set(m[1], [...(seen.get(m[1]) ?? []), m[2]]);
    }
    let removed = 0;
    for (const [accountId, hashes] of seen) {
      const claimed = new Set<string>();
      for (const batch of chunks(hashes))
        for (const r of await this.em
          .fork()
          .find(KeptFile, { accountId, sha256: { $in: batch } }, { fields: ['sha256'] }))
          claimed.add(r.sha256);
      const orphans = hashes.filter((h) => !claimed.has(h));
      await this.drop(accountId, orphans);
      removed += orphans.length;
    }
    return removed;
  }

  /**
   * Removes the objects of `hashes` (whose rows are gone); a row that came back meanwhile (a new upload of the
   * file) loses `stored` and its claim, so it is asked for again rather than believed.
   */
  private async drop(accountId: string, hashes: string[]): Promise<void> {
    for (const sha256 of hashes) {
      await this.storage.delete(contentAddressedKey(prefixOf(accountId), sha256));
      await this.em.fork().nativeUpdate(KeptFile, { accountId, sha256 }, { stored: false, claim: null });
    }
  }

  private async limitsOf(tx: EntityManager, accountId: string): Promise<Limits> {
    if (this.limits.of) return this.limits.of(accountId);
    const account = await tx.findOne(Account, { id: accountId });
    return (plans[account?.plan ?? 'free'] ?? plans.free).limits;
  }

  private async bytesOf(tx: EntityManager, accountId: string): Promise<number> {
    const [row] = await tx
      .getConnection()
      .execute(
        'select coalesce(sum(size), 0) as total from kept_files where account_id = ?',
        [accountId],
        'all',
        tx.getTransactionContext(),
      );
    return Number(row.total);
  }
}

/**
 * The bytes an account keeps, within `cap`, inside its lock: `make` finds room for a file and `shrink` brings the
 * account within the cap, both by marking the least recently used files no manifest may still need (and none of
 * `spare`) to go; `evict` deletes their rows and gives their hashes.
 */
class Room {
  private readonly going: KeptFile[] = [];
  private candidates: KeptFile[] | null = null;
  private freeable = 0;

  constructor(
    private readonly tx: EntityManager,
    private readonly accountId: string,
    private readonly cap: number,
    private readonly now: Date,
    private used: number,
    private readonly spare = new Set<string>(),
  ) {}

  /** True when `size` more bytes fit within the cap, once files are marked to go; false (nothing marked) if not. */
  async make(size: number): Promise<boolean> {
    if (size > this.cap) return false;
    if (this.used + size > this.cap) {
      const candidates = await this.load();
      if (this.used + size - this.freeable > this.cap) return false;
      this.free(candidates, this.cap - size);
    }
    this.used += size;
    return true;
  }

  /** Marks files to go until the account is within the cap, or none may go. */
  async shrink(): Promise<void> {
    if (this.used > this.cap) this.free(await this.load(), this.cap);
  }

  /** Deletes the rows of the files marked to go; their hashes, for their objects to be removed. */
  async evict(): Promise<string[]> {
    for (const batch of chunks(this.going.map((r) => r.id)))
      await this.tx.nativeDelete(KeptFile, { id: { $in: batch } });
    return this.going.map((r) => r.sha256);
  }

  private free(candidates: KeptFile[], target: number): void {
    while (this.used > target && candidates.length) {
      const row = candidates.shift()!;
      this.going.push(row);
      this.used -= row.size;
      this.freeable -= row.size;
    }
  }

  /** The files that may go, least recently used first. */
  private async load(): Promise<KeptFile[]> {
    if (!this.candidates) {
      const rows = await this.tx.find(
        KeptFile,
        { accountId: this.accountId, lastUsedAt: { $lt: new Date(this.now.getTime() - IN_USE_MS) } },
        { orderBy: { lastUsedAt: 'asc', id: 'asc' } },
      );
      this.candidates = rows.filter((r) => !this.spare.has(r.sha256));
      this.freeable = this.candidates.reduce((sum, r) => sum + r.size, 0);
    }
    return this.candidates;
  }
}

export const KEPT_FILES = token<KeptFiles>('hoist.KeptFiles');

const DAY_MS = 24 * 60 * 60 * 1000;

const prefixOf = (accountId: string) => `files/${accountId}`;

function chunks<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += BATCH) out.push(items.slice(i, i + BATCH));
  return out;
}
