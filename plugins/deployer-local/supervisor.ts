import type { ReleaseTarget } from '../../core/ports/deployer.js';
import type { Sandbox, SandboxServe, SandboxService } from '../../core/ports/sandbox.js';
import { answers, nextPollMs } from '../shared/release/answers.js';

/** What the supervisor tells its owner. */
export interface SupervisorEvents {
  /** The process crashed too often: it is stopped for good. */
  crashLoop(lastLines: string[]): void;
  /** The process came back at a new address after a crash. */
  restarted(target: HttpTarget): void;
  /** A line the process printed (stdout or stderr). */
  output?(line: string): void;
}

/** Where a release answers: its sandbox's address, and its unix socket when the sandbox gives one. */
export type HttpTarget = Extract<ReleaseTarget, { kind: 'http' }>;

const KEEP_LINES = 50;
const CRASH_WINDOW_MS = 60_000;
const MAX_CRASHES = 5;

/**
 * Runs one release in the sandbox, keeps its last output lines, restarts it with backoff when it
 * crashes after being healthy, and gives up (a crash loop) after 5 crashes within a minute.
 */
export class Supervisor {
  readonly lines: string[] = [];
  private service: SandboxService | null = null;
  private stopped = false;
  private crashes: number[] = [];

  constructor(
    private readonly sandbox: Sandbox,
    private readonly spec: Omit<SandboxServe, 'log'>,
    private readonly events: SupervisorEvents,
  ) {}

  /**
   * Starts the process and resolves with where it answers once it answers HTTP (through its socket when it has one,
   * as the edge will reach it). Rejects with the reason
   * (and leaves it stopped) when it exits first, when `signal` aborts, or after `timeoutMs`.
   */
  async start(timeoutMs: number, signal?: AbortSignal): Promise<HttpTarget> {
    const service = await this.sandbox.serve({ ...this.spec, log: (l) => this.keep(l) });
    this.service = service;
    const begun = Date.now();
    const end = begun + timeoutMs;
    let exited: string | null = null;
    void service.exited.then(
      (r) => (exited = `exited with ${r.exitCode ?? r.signal ?? r.reason} before answering on PORT ${this.spec.port}`),
    );
    while (!exited) {
      if (signal?.aborted || this.stopped) {
        await service.stop();
        throw new Error('canceled');
      }
      if (await answers(service.url, service.socket)) {
        void service.exited.then(() => this.onCrash(service));
        return { kind: 'http', url: service.url, ...(service.socket && { socket: service.socket }) };
      }
      if (Date.now() > end) {
        await service.stop();
        throw new Error(`did not answer HTTP on PORT ${this.spec.port} within ${Math.round(timeoutMs / 1000)} s`);
      }
      await new Promise((r) => setTimeout(r, nextPollMs(Date.now() - begun)));
    }
    throw new Error(exited);
  }

  /** Stops the process for good; resolves once it is gone. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.service?.stop();
  }

  private keep(line: string): void {
    this.events.output?.(line);
    this.lines.push(line.length > 2000 ? `${line.slice(0, 2000)}…` : line);
    if (this.lines.length > KEEP_LINES) this.lines.shift();
  }

  private onCrash(service: SandboxService): void {
    if (this.stopped || service !== this.service) return;
    const now = Date.now();
    this.crashes = [...this.crashes.filter((t) => now - t < CRASH_WINDOW_MS), now];
    if (this.crashes.length >= MAX_CRASHES) {
      this.stopped = true;
      this.events.crashLoop([...this.lines]);
      return;
    }
    const backoff = Math.min(30_000, 500 * 2 ** (this.crashes.length - 1));
    setTimeout(() => {
      if (this.stopped) return;
      this.start(60_000).then(
        (target) => this.events.restarted(target),
        () => this.onCrash(this.service!),
      );
    }, backoff).unref();
  }
}
