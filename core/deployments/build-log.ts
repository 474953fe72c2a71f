import type { LogSummary } from '../entities/build.js';

const KEEP = 40;
const MAX_BYTES = 5_000_000;

/**
 * Collects a build's output: the whole text (capped at 5 MB, then truncated with a note) for
 * Storage, and a summary (last lines, warning and error counts) for polling.
 */
export class BuildLog {
  private readonly chunks: string[] = [];
  private bytes = 0;
  private truncated = false;
  private fresh: string[] = [];
  readonly summary: LogSummary = { lastLines: [], warnings: 0, errors: 0, bytes: 0 };

  /** Appends one line (without its newline). */
  line(text: string): void {
    const line = text.length > 2000 ? `${text.slice(0, 2000)}…` : text;
    if (/\b(warn|warning)\b/i.test(line)) this.summary.warnings++;
    if (/\b(error|err!|fatal)\b/i.test(line)) this.summary.errors++;
    this.summary.lastLines.push(line);
    if (this.summary.lastLines.length > KEEP) this.summary.lastLines.shift();
    this.summary.bytes += Buffer.byteLength(line) + 1;
    if (this.bytes >= MAX_BYTES) {
      this.truncated = true;
      return;
    }
    this.chunks.push(line);
    this.fresh.push(line);
    this.bytes += Buffer.byteLength(line) + 1;
  }

  /** The lines kept since the last call (none past the 5 MB cap), for writing as they come. */
  drain(): string[] {
    const lines = this.fresh;
    this.fresh = [];
    return lines;
  }

  /** The stored text of the log. */
  text(): string {
    return this.chunks.join('\n') + (this.truncated ? '\n[log truncated at 5 MB]\n' : '\n');
  }
}
