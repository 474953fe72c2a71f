import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import net from 'node:net';
import http from 'node:http';

/** How one release process is run. */
export interface ProcessSpec {
  command: string;
  cwd: string;
  env: Record<string, string>;
  /** Heap cap in MiB (NODE_OPTIONS --max-old-space-size). */
  memoryMb: number;
}

/** What the supervisor tells its owner. */
export interface SupervisorEvents {
  /** The process crashed too often: it is stopped for good. */
  crashLoop(lastLines: string[]): void;
  /** The process came back on a new port after a crash. */
  restarted(port: number): void;
}

const KEEP_LINES = 50;
const CRASH_WINDOW_MS = 60_000;
const MAX_CRASHES = 5;

/** A free TCP port on the loopback interface. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** True once something answers HTTP on the port (any status: the app is up and listening). */
function answers(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: '/', timeout: 1000, headers: { 'user-agent': 'hoist-health-check' } }, (res) => {
      res.resume();
      resolve(true);
    });
    req.on('timeout', () => req.destroy());
    req.on('error', () => resolve(false));
  });
}

/**
 * Runs one release as a child process in its own process group on a free port, keeps its last
 * output lines, restarts it with backoff when it crashes after being healthy, and gives up (a crash
 * loop) after 5 crashes within a minute.
 */
export class Supervisor {
  readonly lines: string[] = [];
  port = 0;
  private child: ChildProcess | null = null;
  private stopped = false;
  private crashes: number[] = [];

  constructor(
    private readonly spec: ProcessSpec,
    private readonly events: SupervisorEvents,
  ) {}

  /**
   * Starts the process and resolves with its port once it answers HTTP. Rejects with the reason
   * (and leaves it stopped) when it exits first, when `signal` aborts, or after `timeoutMs`.
   */
  async start(timeoutMs: number, signal?: AbortSignal): Promise<number> {
    this.port = await freePort();
    const child = this.spawn();
    const end = Date.now() + timeoutMs;
    let exited: string | null = null;
    child.once('exit', (code, sig) => (exited = `exited with ${code ?? sig} before answering on port ${this.port}`));
    while (!exited) {
      if (signal?.aborted) {
        this.kill();
        throw new Error('canceled');
      }
      if (await answers(this.port)) {
        child.on('exit', () => this.onCrash());
        return this.port;
      }
      if (Date.now() > end) {
        this.kill();
        throw new Error(`did not answer HTTP on PORT ${this.port} within ${Math.round(timeoutMs / 1000)} s`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(exited);
  }

  /** Stops the process group for good. */
  stop(): void {
    this.stopped = true;
    this.kill();
  }

  private kill(): void {
    const pid = this.child?.pid;
    if (!pid) return;
    try {
      process.kill(-pid, 'SIGTERM');
      setTimeout(() => {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }, 3000).unref();
    } catch {
      // already gone
    }
  }

  private spawn(): ChildProcess {
    const env = {
      ...this.spec.env,
      PORT: String(this.port),
      NODE_OPTIONS: `${this.spec.env.NODE_OPTIONS ?? ''} --max-old-space-size=${this.spec.memoryMb}`.trim(),
    };
    const child = spawn('sh', ['-c', this.spec.command], { cwd: this.spec.cwd, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const s of [child.stdout!, child.stderr!]) {
      createInterface({ input: s, crlfDelay: Infinity }).on('line', (l) => {
        this.lines.push(l.length > 2000 ? `${l.slice(0, 2000)}…` : l);
        if (this.lines.length > KEEP_LINES) this.lines.shift();
      });
    }
    child.on('error', (err) => this.lines.push(`could not start: ${err.message}`));
    this.child = child;
    return child;
  }

  private onCrash(): void {
    if (this.stopped) return;
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
        (port) => this.events.restarted(port),
        () => this.onCrash(),
      );
    }, backoff).unref();
  }
}
