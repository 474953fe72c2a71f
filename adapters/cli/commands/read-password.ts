import { readFile } from 'node:fs/promises';
import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { invalid } from '../../../core/errors.js';

/** Refusal for `--password`: argv is visible in shell history and in the process list. */
export const PASSWORD_IN_ARGV =
  '--password is not accepted: a password on the command line ends up in shell ' +
  'history and the process list; pipe it on stdin or use --password-file <file>';

/**
 * Reads a password without it ever touching argv: from `file` when given, else from a prompt that
 * hides input when stdin is a terminal, else from the text piped on stdin. One trailing newline
 * is dropped (`echo secret | hoist ...`). Throws invalid_request when nothing was given.
 */
export async function readPassword(file?: string): Promise<string> {
  let text: string;
  if (file !== undefined) {
    text = await readFile(file, 'utf8').catch((err: Error) => {
      throw invalid(`Cannot read --password-file ${file}: ${err.message}`, { field: 'password' });
    });
  } else if (process.stdin.isTTY) {
    const [first, again] = await prompt(['Password: ', 'Repeat password: ']);
    if (first !== again) throw invalid('The passwords do not match', { field: 'password' });
    text = first;
  } else {
    text = '';
    for await (const chunk of process.stdin) text += chunk;
  }
  text = text.replace(/\r?\n$/, '');
  if (!text) throw invalid('No password given: pipe it on stdin or use --password-file <file>', { field: 'password' });
  return text;
}

/** Asks each question on stderr and reads one line per question from the terminal without echoing it. */
export async function prompt(questions: string[]): Promise<string[]> {
  // readline echoes what is typed to its output; this output swallows it.
  const silent = new Writable({ write: (_chunk, _encoding, done) => done() });
  const rl = createInterface({ input: process.stdin, output: silent, terminal: true });
  rl.on('SIGINT', () => rl.close());
  // The iterator buffers lines that arrive together (pasted input) until they are asked for.
  const lines = rl[Symbol.asyncIterator]();
  try {
    const answers: string[] = [];
    for (const q of questions) {
      process.stderr.write(q);
      const line = await lines.next();
      process.stderr.write('\n');
      if (line.done) throw new Error('canceled');
      answers.push(line.value);
    }
    return answers;
  } finally {
    rl.close();
  }
}
