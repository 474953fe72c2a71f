import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../../config/load.js';
import { Redactor } from '../../../core/deployments/redaction.js';
import { StageError } from '../../../core/errors.js';
import type { Detection } from '../../../core/ports/analyzer.js';
import { NodeBuilder } from '../../../plugins/builder-node/node-builder.js';
import { QUOTED_LINE_MAX, quoteLine } from '../../../plugins/builder-node/quote-line.js';
import { testSandbox } from '../../helpers/sandbox.js';

const root = mkdtempSync(join(tmpdir(), 'hoist-builder-node-install-error-'));
test.after(() => void execFileSync('rm', ['-rf', root]));
const sandbox = await testSandbox(root);
const SECRET = 'sk_live_' + 'A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6';
/** The longest prefix of SECRET (8 characters at least) that `text` holds, or 0. */
const leaked = (text: string) =>
  [...Array(SECRET.length + 1).keys()].reverse().find((n) => n >= 8 && text.includes(SECRET.slice(0, n))) ?? 0;

test('a secret around column 4,000 of the first npm error line is masked before the quoted line is cut', async () => {
  const workspace = join(root, 'build-1', 'src');
  mkdirSync(workspace, { recursive: true });
  writeFileSync(join(workspace, 'package.json'), JSON.stringify({ name: 'x', version: '1.0.0' }));
  const installCommand =
    "node -e \"console.log('npm error ' + 'x'.repeat(3975) + process.env.SECRET_TOKEN); process.exit(1)\"";
  const detection: Detection = {
    runtime: 'node',
    framework: null,
    outputDir: '.',
    installCommand,
    buildCommand: null,
    startCommand: 'node index.js',
    packageManager: 'npm',
    nodeVersion: null,
    reasons: { install_command: 'project setting install_command' },
    warnings: [],
  };
  const config = loadConfig({ HOIST_DATA_DIR: join(root, 'data') }, { buildTimeoutSeconds: 60 });
  const log: string[] = [];
  const error = await new NodeBuilder(config, sandbox)
    .build({
      workspace,
      detection,
      env: { SECRET_TOKEN: SECRET },
      // The operation's redaction, as the Build stage gives it: the build's values masked.
      redact: (text) => new Redactor(null, [SECRET]).text(text),
      signal: new AbortController().signal,
      log: (l) => log.push(l),
      progress: () => {},
    })
    .then(
      () => null,
      (err: unknown) => err,
    );
  assert.instance(error, StageError);
  const { code, message } = error as StageError;
  assert.is(code, 'build_install_failed', message);
  assert.is(leaked(message), 0, `no part of the secret in: …${message.slice(-80)}`);
  const quoted = message.slice(message.indexOf(': npm error') + 2);
  assert.ok(quoted.length <= QUOTED_LINE_MAX + 1, `quoted ${quoted.length} characters`);
  // The log gets the line whole, so that its redaction (the Build stage's) sees the whole secret before any cut.
  assert.ok(
    log.some((l) => l.endsWith(SECRET) && l.length === 'npm error '.length + 3975 + SECRET.length),
    'the line is passed on whole',
  );
});

test('quoteLine redacts the line (values and their encodings) while it is whole, then cuts it', () => {
  const redactor = new Redactor(null, [SECRET, 'abc']);
  const redact = (text: string) => redactor.text(text);
  const b64 = Buffer.from(SECRET).toString('base64');
  for (const line of [
    'x'.repeat(290) + SECRET,
    'x'.repeat(290) + b64,
    'x'.repeat(290) + encodeURIComponent(SECRET),
    'npm error ' + SECRET + ' abc',
  ]) {
    const q = quoteLine(line, redact);
    assert.is(leaked(q), 0, q);
    assert.not.ok(q.includes(b64.slice(0, 12)), q);
    assert.ok(q.length <= QUOTED_LINE_MAX + 1, String(q.length));
  }
  assert.is(quoteLine('npm error ' + SECRET + ' abc', redact), 'npm error *** abc', 'short values are not masked');
  assert.is(quoteLine('y'.repeat(400), redact), 'y'.repeat(QUOTED_LINE_MAX) + '…');
});

test.run();
