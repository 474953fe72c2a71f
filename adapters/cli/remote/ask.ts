import { createInterface, type Interface } from 'node:readline';

/** A question open on the terminal; `close` ends it early (its answer is then null). */
export interface Question {
  answer: Promise<string | null>;
  close(): void;
}

/**
 * Asks one question on the terminal; Ctrl-C while it is open answers null. With `erase`, the
 * question and what was typed are wiped once it is over, the cursor back where the question began.
 */
export function ask(text: string, { erase = false } = {}): Question {
  const rl: Interface = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
  let done = false;
  const answer = new Promise<string | null>((resolve) => {
    const finish = (value: string | null, entered = false) => {
      if (done) return;
      done = true;
      const typed = entered ? (value ?? '') : rl.line;
      rl.close();
      if (erase && process.stdout.isTTY) {
        const up = rowsAbove(text + typed, entered);
        process.stdout.write(`${up ? `\x1b[${up}F` : '\r'}\x1b[J`);
      }
      resolve(value);
    };
    rl.on('SIGINT', () => finish(null));
    rl.on('close', () => finish(null));
    rl.question(text, (line) => finish(line, true));
  }).then((line) => line?.trim().toLowerCase() ?? null);
  return { answer, close: () => rl.close() };
}

// How many rows above the cursor `written` began: its lines wrapped at the terminal's width, plus the line break of
// Enter.
function rowsAbove(written: string, entered: boolean): number {
  const cols = process.stdout.columns || 80;
  const lines = written.split('\n').map((l) => [...l].length);
  const last = lines.pop()!;
  return lines.reduce((rows, n) => rows + Math.max(1, Math.ceil(n / cols)), entered ? 1 : 0) + Math.floor(last / cols);
}
