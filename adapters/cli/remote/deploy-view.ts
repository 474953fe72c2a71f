import type { Operation } from '../../../client/hoist-client.js';
import { bar, bold, dim, formatBytes, green, interactive, printable, printableDeep, red, yellow } from './terminal.js';

const STAGES = ['analyze', 'build', 'deploy'] as const;
const SPINNER = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];
const LOG_LINES = 6;
/** How many of the last log lines shown are remembered, to show none of them again from a later view's last_lines. */
const KEPT_LINES = 200;

type Stage = NonNullable<NonNullable<Operation['stages']>['analyze']>;

/**
 * What `hoist deploy` shows while it works. On a terminal: an upload bar, then a live block of the
 * three stages with their progress and the last build-log lines, redrawn in place with a spinner.
 * Otherwise: plain lines on stderr as things change (no colours, no spinner). With --json: nothing.
 */
export class DeployView {
  private readonly mode: 'tty' | 'plain' | 'quiet';
  private op: Operation | null = null;
  private drawn = 0;
  private frame = 0;
  private timer: NodeJS.Timeout | null = null;
  private paused = false;
  private printed = new Map<string, string>();
  private logSeen: string[] = [];
  /** The build log comes as streamed lines (log): the operation's last_lines would only repeat them. */
  private streamed = false;
  private lastUpload = 0;
  private uploaded = false;
  /** The size of the upload whose start line was printed (plain mode), so it is printed once. */
  private announced: number | null = null;

  constructor(json: boolean) {
    this.mode = json ? 'quiet' : interactive() ? 'tty' : 'plain';
  }

  /** A line of information (the terminal's stdout, or stderr when stdout is not a terminal); above the live block. */
  info(line: string): void {
    if (this.mode === 'tty') this.above(process.stdout, line);
    else if (this.mode === 'plain') process.stderr.write(`${line}\n`);
  }

  warn(line: string): void {
    if (this.mode !== 'quiet') this.above(process.stderr, `${yellow('warning:')} ${line}`);
  }

  /** Upload progress: a bar redrawn at most every 100 ms on a terminal; a start and an end line otherwise. */
  uploadProgress(sent: number, total: number): void {
    if (this.mode === 'plain' && sent === 0 && this.announced !== total) {
      this.announced = total;
      this.info(`Uploading ${formatBytes(total)}…`);
    }
    if (this.mode !== 'tty' || this.uploaded) return;
    this.uploaded = sent >= total;
    const now = Date.now();
    if (sent < total && now - this.lastUpload < 100) return;
    this.lastUpload = now;
    process.stdout.write(
      `\r\x1b[2KUploading  ${bar(total ? sent / total : 1)}  ${formatBytes(sent)} / ` +
        `${formatBytes(total)}${sent >= total ? '\n' : ''}`,
    );
  }

  /**
   * Build-log lines the event stream sent, each shown once as it comes (above the live block on a terminal); from
   * then on the last_lines of the operation's views are not shown, since they repeat them.
   */
  log(lines: string[]): void {
    this.streamed = true;
    this.logSeen = [...this.logSeen, ...lines].slice(-KEPT_LINES);
    for (const l of lines) this.info(`  │ ${printable(l)}`);
  }

  /**
   * The events stopped and the operation is polled from now on: the last_lines of its views are shown again, but
   * for those the stream showed.
   */
  polling(): void {
    this.streamed = false;
  }

  /** A new view of the operation (kept, not shown, while paused). */
  update(answer: Operation): void {
    // What is drawn of it (statuses, stage errors that quote a build's output...) cannot drive the terminal.
    const op = printableDeep(answer);
    this.op = op;
    if (this.paused) return;
    if (this.mode === 'tty') {
      this.timer ??= setInterval(() => this.render(), 120);
      this.render();
    } else if (this.mode === 'plain') this.printChanges(op);
  }

  /**
   * Draws nothing until `resume` (to ask a question under the block), which draws the latest
   * update at once in place of the block: what was written under it must be erased by then.
   */
  pause(): void {
    this.paused = true;
    this.stop();
  }

  resume(): void {
    this.paused = false;
    if (this.op) this.update(this.op);
  }

  /** Draws the final state and stops the spinner; the block stays as it is. */
  finish(): void {
    if (this.mode === 'tty') this.render();
    this.stop();
    this.drawn = 0;
  }

  private stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  // Writes a line where it stays: on a terminal the live block is erased first and drawn again under the line.
  private above(out: NodeJS.WriteStream, line: string): void {
    if (this.mode === 'tty' && this.drawn) process.stdout.write(`\x1b[${this.drawn}F\x1b[J`);
    this.drawn = 0;
    out.write(`${line}\n`);
    if (this.timer) this.render();
  }

  private render(): void {
    if (!this.op) return;
    this.frame++;
    const width = Math.max(20, (process.stdout.columns || 80) - 1);
    const lines = this.block(this.op).map((l) => truncate(l, width));
    process.stdout.write((this.drawn ? `\x1b[${this.drawn}F\x1b[J` : '') + lines.join('\n') + '\n');
    this.drawn = lines.length;
  }

  private block(op: Operation): string[] {
    const lines = STAGES.map((name) => {
      const s = op.stages?.[name];
      const status = s?.status ?? 'queued';
      const progress =
        status === 'running' ? `  ${bar((s?.progress ?? 0) / 100, 16)} ${String(s?.progress ?? 0).padStart(3)}%` : '';
      // A skipped stage is succeeded with skipped: true (the spec's five statuses); say so.
      if (s?.skipped) return `  ${dim('–')} ${name.padEnd(8)} ${status.padEnd(9)}${dim(' (skipped)')}`;
      return `  ${this.icon(status)} ${name.padEnd(8)} ${status.padEnd(9)}${progress}`;
    });
    if (!this.streamed)
      for (const l of op.build_log?.last_lines?.slice(-LOG_LINES) ?? []) lines.push(dim(`  │ ${printable(l)}`));
    const queue =
      op.queue?.state === 'waiting'
        ? ` · waiting in the queue (${op.queue.jobs_ahead ?? 0} ahead)`
        : op.queue?.state === 'held'
          ? ' · held: your other deployments use your share of the workers; it starts when one ends'
          : '';
    const stuck = op.maybe_stuck ? yellow(' · no sign of life for a while; it may be stuck') : '';
    const hint = op.status === 'running' ? dim('   Ctrl-C to cancel or detach') : '';
    lines.push(`  ${bold(`${op.progress ?? 0}%`)} ${op.status}${queue}${stuck}${hint}`);
    return lines;
  }

  private icon(status: string): string {
    switch (status) {
      case 'succeeded':
        return green('✔');
      case 'failed':
        return red('✖');
      case 'canceled':
        return yellow('⊘');
      case 'running':
        return SPINNER[this.frame % SPINNER.length];
      default:
        return dim('·');
    }
  }

  private printChanges(op: Operation): void {
    for (const name of STAGES) {
      const s: Stage | undefined = op.stages?.[name];
      const status = s?.status ?? 'queued';
      if (this.printed.get(name) !== status && status !== 'queued') {
        const error = s?.error?.message ? ` (${s.error.code}: ${printable(s.error.message)})` : '';
        this.info(`${name}: ${status}${s?.skipped ? ' (skipped)' : ''}${error}`);
      }
      this.printed.set(name, status);
    }
    if (this.streamed) return;
    const log = op.build_log?.last_lines ?? [];
    // Print only the lines after those already printed (the window slides as the build goes on).
    let from = 0;
    for (let k = Math.min(this.logSeen.length, log.length); k > 0; k--) {
      if (this.logSeen.slice(-k).join('\n') === log.slice(0, k).join('\n')) {
        from = k;
        break;
      }
    }
    for (const l of log.slice(from)) this.info(`  │ ${printable(l)}`);
    this.logSeen = [...log];
  }
}

// Cuts a line to `width` visible characters (colour codes do not count).
function truncate(line: string, width: number): string {
  const visible = line.replace(/\x1b\[[0-9;]*m/g, '');
  if (visible.length <= width) return line;
  return visible.slice(0, width - 1) + '…';
}
