import { createInterface, type Interface } from 'node:readline';

/** A question open on the terminal; `close` ends it early (its answer is then null). */
export interface Question {
  answer: Promise<string | null>;
  close(): void;
}

/** Asks one question on the terminal; Ctrl-C while it is open answers null. */
export function ask(text: string): Question {
  const rl: Interface = createInterface({ input: process.stdin, output: process.stdout, terminal: true });
  let done = false;
  const answer = new Promise<string | null>((resolve) => {
    const finish = (value: string | null) => {
      if (done) return;
      done = true;
      rl.close();
      resolve(value);
    };
    rl.on('SIGINT', () => finish(null));
    rl.on('close', () => finish(null));
    rl.question(text, (line) => finish(line.trim().toLowerCase()));
  });
  return { answer, close: () => rl.close() };
}
