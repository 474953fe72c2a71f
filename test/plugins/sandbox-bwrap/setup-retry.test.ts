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

test(
  'a release whose sandbox bubblewrap fails to set up (exit 1 before its command begins) is started again, three ' +
    'times at most; one that begins is started once',
  async () => {
    const sandbox = await testSandbox(dataDir);
    const dir = workspaceIn(dataDir, 's');
    let launches = 0;
    const launch = (sandbox as unknown as { launch: (...a: unknown[]) => Promise<unknown> }).launch.bind(sandbox);
    (sandbox as unknown as { launch: typeof launch }).launch = (...a) => (launches++, launch(...a));
    const lines: string[] = [];
    // bubblewrap cannot enter a working folder that is not there: it stops before the command, as a failed netlink
    // call of the kernel's stops it.
    const failing = await sandbox.serve({
      command: 'echo never',
      workspace: dir,
      cwd: 'missing',
      env: {},
      network: 'egress',
      port: 8080,
      limits: testLimits,
      log: (l) => lines.push(l),
    });
    const r = await failing.exited;
    assert.equal([r.reason, r.exitCode, launches], ['exited', 1, 3]);
    assert.ok(lines.some((l) => l.startsWith('bwrap: ')) && !lines.includes('never'), lines.join('\n'));

    launches = 0;
    const ok = await sandbox.serve({
      command: 'echo began; exit 1',
      workspace: dir,
      env: {},
      network: 'egress',
      port: 8080,
      limits: testLimits,
      log: (l) => lines.push(l),
    });
    assert.equal([(await ok.exited).exitCode, launches], [1, 1], 'a command that began and failed is its own');
  },
);

test.run();
