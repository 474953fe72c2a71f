import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { hoistBin } from './cli.js';
import type { RemoteCli } from './remote-cli.js';

/** `hoist` commands of a RemoteCli run under a real terminal: tmux runs them, send-keys types, capture-pane reads. */
export interface TerminalCli {
  /** Whether tmux is installed (tests skip, and say so, when it is not). */
  available: boolean;
  /** Runs `hoist ...args` in a new 120×30 terminal `name`; the shell prints EXIT=<code> after it. */
  start(name: string, args: string[]): void;
  /** Types `keys` (tmux key names: 'y', 'Enter') into terminal `name`. */
  type(name: string, ...keys: string[]): void;
  /** The screen of terminal `name` once it matches `pattern` (throws with the screen after 30 s). */
  until(name: string, pattern: RegExp): Promise<string>;
  /** Ends every terminal. */
  close(): void;
}

/** A TerminalCli for `cli`'s user (its environment, so its login), on a tmux server of its own. */
export function terminalCli(cli: RemoteCli): TerminalCli {
  const socket = `hoist-terminal-${process.pid}-${Math.random().toString(36).slice(2, 8)}`;
  const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
  let available = true;
  try {
    execFileSync('tmux', ['-V']);
  } catch {
    available = false;
  }
  const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;
  return {
    available,
    start(name, args) {
      const script = join(mkdtempSync(join(tmpdir(), 'hoist-tmux-')), 'run.sh');
      const env = Object.entries(cli.env)
        .filter(([k, v]) => v !== undefined && /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
        .map(([k, v]) => `export ${k}=${quote(v!)}`);
      const line = [process.execPath, hoistBin, ...args].map(quote).join(' ');
      writeFileSync(script, [...env, 'export TERM=xterm-256color', line, 'echo "EXIT=$?"', 'sleep 600'].join('\n'));
      tmux('new-session', '-d', '-s', name, '-x', '120', '-y', '30', `bash ${script}`);
    },
    type(name, ...keys) {
      tmux('send-keys', '-t', name, ...keys);
    },
    async until(name, pattern) {
      const end = Date.now() + 30_000;
      for (;;) {
        const text = tmux('capture-pane', '-p', '-J', '-t', name);
        if (pattern.test(text)) return text;
        if (Date.now() > end) throw new Error(`the screen never showed ${pattern}:\n${text}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    close() {
      try {
        if (available) tmux('kill-server');
      } catch {
        // No terminal was started: there is no server to end.
      }
    },
  };
}
