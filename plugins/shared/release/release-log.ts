import { appendFile, readFile, rename, rm, stat } from 'node:fs/promises';
import type { ReleaseLogLine } from '../../../core/ports/deployer.js';

/** Bytes of a release's log before it is rotated: the one before it is kept too, so twice this at most. */
export const ROTATE_BYTES = 512 * 1024;
/** Bytes of lines a release may have kept in a second; past them its lines are counted, not kept. */
export const BYTES_PER_SECOND = 64 * 1024;
/** The longest line kept, in characters; a longer one is cut there, with `…`. */
const LINE_MAX = 2000;
/** How long lines wait to be written together. */
const FLUSH_MS = 200;

/**
 * The output of a running release (its stdout and stderr lines), kept in a file (`path`, and `path.1` before it)
 * that any process on this machine can read (readReleaseLog): each line with when it was printed. Writes are
 * batched (every FLUSH_MS) and bounded, so an app that prints without end costs its host a bounded amount: at most
 * BYTES_PER_SECOND a second are kept (what is past them is counted, and said in one line once writing resumes) and at
 * most twice ROTATE_BYTES on disk.
 */
export class ReleaseLog {
  private pending: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing: Promise<void> = Promise.resolve();
  private second = 0;
  private secondBytes = 0;
  private dropped = 0;
  private size: number | undefined;
  private closed = false;

  constructor(
    private readonly path: string,
    private readonly limits = { rotateBytes: ROTATE_BYTES, bytesPerSecond: BYTES_PER_SECOND },
  ) {}

  /** Keeps one line the release printed (without its newline). */
  line(text: string): void {
    if (this.closed) return;
    const now = Date.now();
    if (now - this.second >= 1000) {
      this.second = now;
      this.secondBytes = 0;
    }
    const kept = text.length > LINE_MAX ? `${text.slice(0, LINE_MAX)}…` : text;
    const entry = `${new Date(now).toISOString()} ${kept.replace(/\r/g, '')}\n`;
    if (this.secondBytes + entry.length > this.limits.bytesPerSecond) {
      this.dropped++;
      return;
    }
    if (this.dropped > 0) {
      const note =
        `${this.dropped} lines were not kept: the app printed more than ` +
        `${this.limits.bytesPerSecond / 1024} KiB a second`;
      this.pending.push(`${new Date(now).toISOString()} [hoist] ${note}\n`);
      this.dropped = 0;
    }
    this.secondBytes += entry.length;
    this.pending.push(entry);
    this.timer ??= setTimeout(() => this.flush(), FLUSH_MS);
  }

  /** Writes what waits; resolves once it is written (or could not be: the log is best effort). */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const chunk = this.pending.join('');
    this.pending = [];
    if (chunk) this.writing = this.writing.then(() => this.write(chunk)).catch(() => {});
    return this.writing;
  }

  /** Writes what waits and keeps nothing more; the file stays (readReleaseLog reads it). */
  async close(): Promise<void> {
    this.closed = true;
    await this.flush();
  }

  private async write(chunk: string): Promise<void> {
    const bytes = Buffer.byteLength(chunk);
    this.size ??= (await stat(this.path).catch(() => null))?.size ?? 0;
    if (this.size + bytes > this.limits.rotateBytes && this.size > 0) {
      await rename(this.path, `${this.path}.1`);
      this.size = 0;
    }
    await appendFile(this.path, chunk, { mode: 0o600 });
    this.size += bytes;
  }
}

/** The last `limit` lines kept at `path` (ReleaseLog's), oldest first; null when nothing was ever kept there. */
export async function readReleaseLog(path: string, limit: number): Promise<ReleaseLogLine[] | null> {
  const read = (p: string) => readFile(p, 'utf8').catch(() => null);
  const current = await read(path);
  if (current === null) return null;
  let lines = current.split('\n').slice(0, -1);
  if (lines.length < limit) lines = [...((await read(`${path}.1`))?.split('\n').slice(0, -1) ?? []), ...lines];
  return lines.slice(-limit).map((line) => {
    const space = line.indexOf(' ');
    return { at: line.slice(0, space), text: line.slice(space + 1) };
  });
}

/** Removes what ReleaseLog kept at `path`. */
export async function removeReleaseLog(path: string): Promise<void> {
  await Promise.all([path, `${path}.1`].map((p) => rm(p, { force: true })));
}
