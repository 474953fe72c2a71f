// `hoist start` logs readable lines on a terminal (pino-pretty) and JSON lines everywhere else, unless
// HOIST_LOG_FORMAT says which. The terminal is a pseudo-terminal made by util-linux's `script`.
import { spawn, type ChildProcess } from 'node:child_process';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hoistBin, root, testCli, type TestCli } from '../../helpers/cli.js';

let cli: TestCli;
test.before(async () => {
  cli = await testCli();
});
test.after(() => cli?.close());

/** Starts `hoist start` (on a terminal with `tty`) and resolves with its output once the API listens. */
async function startOutput(tty: boolean, env: Record<string, string> = {}): Promise<string> {
  const command = [process.execPath, hoistBin, 'start'];
  const [file, args] = tty
    ? ['script', ['-q', '-e', '-c', command.join(' '), '/dev/null']]
    : [command[0], command.slice(1)];
  const child: ChildProcess = spawn(file, args, {
    cwd: root,
    env: { ...cli.env, HOIST_PORT: '0', HOIST_EDGE_PORT: '0', HOIST_LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  try {
    return await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no "hoist api listening" within 60 s:\n${out}`)), 60_000);
      const onData = (d: Buffer) => {
        // Without the terminal's colours and carriage returns.
        out += String(d).replace(/\x1b\[[0-9;]*m|\r/g, '');
        if (/^hoist api listening on /m.test(out)) {
          clearTimeout(timer);
          resolve(out);
        }
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.on('exit', (code) => reject(new Error(`hoist start exited with ${code}:\n${out}`)));
    });
  } finally {
    child.removeAllListeners('exit');
    process.kill(-child.pid!, 'SIGTERM');
  }
}

const jsonListening = (out: string) =>
  out.split('\n').some((line) => line.startsWith('{') && /^Server listening at /.test(JSON.parse(line).msg));

test('on a terminal, hoist start logs readable lines', async () => {
  const out = await startOutput(true);
  assert.match(out, /^\[\d\d:\d\d:\d\d\.\d{3}\] INFO: Server listening at http:\/\/127\.0\.0\.1:\d+$/m);
  assert.not.match(out, /^\{"level"/m);
});

test('into a pipe, hoist start logs JSON lines', async () => {
  const out = await startOutput(false);
  assert.ok(jsonListening(out), out);
  assert.not.match(out, /INFO: /);
});

test('HOIST_LOG_FORMAT=json keeps JSON on a terminal; pretty makes readable lines into a pipe', async () => {
  assert.ok(jsonListening(await startOutput(true, { HOIST_LOG_FORMAT: 'json' })));
  assert.match(await startOutput(false, { HOIST_LOG_FORMAT: 'pretty' }), /INFO: Server listening at /);
});

test.run();
