import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { testLimits, testSandbox, workspaceIn } from '../../helpers/sandbox.js';

const dataDir = mkdtempSync(join(tmpdir(), 'hoist-bwrap-retry-'));
test.after(() => rmSync(dataDir, { recursive: true, force: true }));

test(
  "a run that ends with only bubblewrap's own failure (exit 1) is made again, three " +
    'times at most, and then reported',
  async () => {
    const sandbox = await testSandbox(dataDir);
    const dir = workspaceIn(dataDir, 'w');
    const lines: string[] = [];
    const r = await sandbox.run({
      command: 'echo run >> count; echo "bwrap: loopback: Failed RTM_NEWADDR" >&2; exit 1',
      workspace: dir,
      env: {},
      network: 'none',
      limits: testLimits,
      log: (l) => lines.push(l),
    });
    assert.equal([r.reason, r.exitCode], ['exited', 1]);
    assert.is(readFileSync(join(dir, 'count'), 'utf8'), 'run\nrun\nrun\n');
    assert.equal(lines, ['bwrap: loopback: Failed RTM_NEWADDR'], "the last attempt's lines are reported once");

    const spoke: string[] = [];
    const once = await sandbox.run({
      command: 'echo run >> once; echo "bwrap: said by the tenant" >&2; echo more; exit 1',
      workspace: dir,
      env: {},
      network: 'none',
      limits: testLimits,
      log: (l) => spoke.push(l),
    });
    assert.is(once.exitCode, 1);
    assert.is(
      readFileSync(join(dir, 'once'), 'utf8'),
      'run\n',
      'a command that printed its own lines is not made again',
    );
    assert.equal(spoke.sort(), ['bwrap: said by the tenant', 'more']);
  },
);

test.run();
