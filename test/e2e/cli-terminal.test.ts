import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { hoistBin } from '../helpers/cli.js';
import { gatedProject } from '../helpers/gated-build.js';
import { hostOf, liveHoist, type LiveHoist } from '../helpers/live.js';
import { accountWithPassword, remoteCli, type RemoteCli } from '../helpers/remote-cli.js';

// `hoist deploy` under a real terminal: tmux runs it, send-keys types, capture-pane reads the screen.
const hasTmux = (() => {
  try {
    execFileSync('tmux', ['-V']);
    return true;
  } catch {
    return false;
  }
})();

const socket = `hoist-test-${process.pid}`;
const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, ...args], { encoding: 'utf8' });
let h: LiveHoist;
let cli: RemoteCli;
let token: string;
test.before(async () => {
  if (!hasTmux) return;
  h = await liveHoist({ healthTimeoutSeconds: 10 });
  cli = remoteCli(h);
  const user = await accountWithPassword(h);
  const login = await cli.run(['login', '--email', user.email], user.password);
  if (login.code !== 0) throw new Error(login.stderr);
  token = await tokenOf(user);
});
test.after(async () => {
  try {
    if (hasTmux) tmux('kill-server');
  } catch {}
  await h?.close();
});

async function tokenOf(user: { email: string; password: string }): Promise<string> {
  const res = await fetch(`${h.api}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(user),
  });
  return (await res.json()).token;
}

/**
 * Starts `hoist deploy ...args` in a new tmux window `name` (a 100×30 terminal); the shell prints EXIT=<code> after it.
 */
function startInTerminal(name: string, args: string[]): void {
  const dir = mkdtempSync(join(tmpdir(), 'hoist-tmux-'));
  const script = join(dir, 'run.sh');
  const env = Object.entries(cli.env)
    .filter(([k, v]) => v !== undefined && /^[A-Za-z_][A-Za-z0-9_]*$/.test(k))
    .map(([k, v]) => `export ${k}='${v!.replace(/'/g, `'\\''`)}'`);
  writeFileSync(
    script,
    [
      ...env,
      'export TERM=xterm-256color',
      `'${process.execPath}' '${hoistBin}' ${args.map((a) => `'${a}'`).join(' ')}`,
      'echo "EXIT=$?"',
      'sleep 600',
    ].join('\n'),
  );
  tmux('new-session', '-d', '-s', name, '-x', '100', '-y', '30', `bash ${script}`);
}

const screen = (name: string) => tmux('capture-pane', '-p', '-t', name, '-S', '-100');

async function untilScreen(name: string, pattern: RegExp, ms = 90_000): Promise<string> {
  const end = Date.now() + ms;
  for (;;) {
    const text = screen(name);
    if (pattern.test(text)) return text;
    if (Date.now() > end) throw new Error(`the screen never showed ${pattern}:\n${text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

function folder(files: Record<string, string>): string {
  const dir = join(mkdtempSync(join(tmpdir(), 'hoist-tmux-site-')), 'tty-site');
  mkdirSync(dir);
  for (const [name, body] of Object.entries(files)) writeFileSync(join(dir, name), body);
  return dir;
}

test('on a terminal: an upload bar, the three stages redrawn in place, then "Live at" the URL, exit 0', async () => {
  if (!hasTmux) return console.log('! tmux is not installed: the terminal test is skipped');
  startInTerminal('live', ['deploy', folder({ 'index.html': '<h1>tty</h1>' })]);
  const text = await untilScreen('live', /EXIT=\d/);
  assert.match(text, /Uploading {2}█+ {2}(\d+) B \/ \1 B/);
  assert.is(text.match(/Uploading/g)!.length, 1, text);
  assert.match(text, /✔ analyze\s+succeeded/);
  assert.match(text, /(✔|–) build\s+(succeeded|skipped)/);
  assert.match(text, /✔ deploy\s+succeeded/);
  assert.match(text, /100% succeeded/);
  // Redrawn in place: each stage line is on the screen once, not once per poll.
  assert.is(text.match(/ deploy {3,}/g)!.length, 1, text);
  const url = /Live at (http:\/\/\S+)/.exec(text)![1];
  assert.match(text, 'EXIT=0');
  assert.is((await h.site(hostOf(url))).body, '<h1>tty</h1>');
  const colored = tmux('capture-pane', '-p', '-e', '-t', 'live');
  assert.match(colored, /\x1b\[32m✔/, 'colours on a terminal');
});

const QUESTION = /Cancel the deployment\? \[y\]es \/ \[n\]o, keep watching \/ \[d\]etach:$/m;

/** `hoist deploy` of a gated project (its build waits) in terminal `name`; resolves once the build runs. */
async function deployGated(name: string, project: string) {
  const gated = await gatedProject(h, token, project);
  startInTerminal(name, ['deploy', folder(gated.files()), '--project', project]);
  const running = await untilScreen(name, /build\s+running\s+[█░]+\s+\d+%/);
  return { gated, running, id: /operation ([0-9a-f-]{36})/.exec(running)![1] };
}

/** Answers "y" to the open question: the deploy cancels through the API and exits 1 with the guidance. */
async function answerYes(name: string, id: string): Promise<void> {
  tmux('send-keys', '-t', name, 'y', 'Enter');
  const end = await untilScreen(name, /EXIT=\d/);
  assert.match(end, 'Canceling…');
  assert.match(end, /⊘ build\s+canceled/);
  assert.match(end, 'The deployment canceled');
  assert.match(end, /Next step: .*retry/);
  assert.match(end, 'EXIT=1');
  assert.is((await h.get(token, `/api/v1/operations/${id}`)).body.status, 'canceled');
}

test('Ctrl-C asks before canceling; "y" cancels through the API and exits 1', async () => {
  if (!hasTmux) return;
  const { gated, running, id } = await deployGated('gated', 'tty-gated');
  assert.match(running, 'Ctrl-C to cancel or detach');

  tmux('send-keys', '-t', 'gated', 'C-c');
  await untilScreen('gated', QUESTION);
  assert.is(
    (await h.get(token, `/api/v1/operations/${id}`)).body.status,
    'running',
    'nothing is canceled before the answer',
  );
  await answerYes('gated', id);
  gated.open();
});

test(
  'Ctrl-C, "n" redraws the stages at once and keeps watching; a second Ctrl-C asks ' + 'again and "y" cancels',
  async () => {
    if (!hasTmux) return;
    const { gated, id } = await deployGated('twice', 'tty-gated-twice');

    tmux('send-keys', '-t', 'twice', 'C-c');
    await untilScreen('twice', QUESTION);
    tmux('send-keys', '-t', 'twice', 'n', 'Enter');
    // The view is drawn again at once, in place: the question and the answer are erased, the stages are back.
    const again = await untilScreen(
      'twice',
      /^(?![\s\S]*Cancel the deployment)[\s\S]*build\s+running\s+[█░]+\s+\d+%[\s\S]*Ctrl-C to cancel or detach/,
      5_000,
    );
    assert.is(again.match(/ build {3,}/g)!.length, 1, again);
    assert.is((await h.get(token, `/api/v1/operations/${id}`)).body.status, 'running', '"n" cancels nothing');
    // Still redrawn in place: the spinner turns, and the block is not drawn a second time.
    const spinner = /([⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏]) build/.exec(again)![1];
    const later = await untilScreen(
      'twice',
      new RegExp(`[${'⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏'.replace(spinner, '')}] build\\s+running`),
      3_000,
    );
    assert.is(later.match(/ build {3,}/g)!.length, 1, later);

    tmux('send-keys', '-t', 'twice', 'C-c');
    await untilScreen('twice', QUESTION, 10_000);
    assert.is(
      (await h.get(token, `/api/v1/operations/${id}`)).body.status,
      'running',
      'nothing is canceled before the second answer',
    );
    await answerYes('twice', id);
    gated.open();
  },
);

test.run();
