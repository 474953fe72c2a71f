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
    // Under load the last launch may meet a real failure of the kernel's while Hoist still sets the sandbox up: serve
    // then throws bubblewrap's error.
    const r = await sandbox
      .serve({
        command: 'echo never',
        workspace: dir,
        cwd: 'missing',
        env: {},
        network: 'egress',
        port: 8080,
        limits: testLimits,
        log: (l) => lines.push(l),
      })
      .then(
        (failing) => failing.exited,
        (err: Error) => err,
      );
    assert.is(launches, 3);
    if (!(r instanceof Error)) assert.equal([r.reason, r.exitCode], ['exited', 1]);
    const said = r instanceof Error ? [r.message] : lines;
    assert.ok(said.some((l) => /bwrap: /.test(l)) && !lines.includes('never'), said.join('\n'));

    const ok = await sandbox.serve({
      command: 'echo began; exit 1',
      workspace: dir,
      env: {},
      network: 'egress',
      port: 8080,
      limits: testLimits,
      log: (l) => lines.push(l),
    });
    const { exitCode } = await ok.exited;
    // Counted by its lines, not by launches: a real failure of bubblewrap's under load adds a launch, never a run.
    const began = lines.filter((l) => l === 'began').length;
    assert.equal([exitCode, began], [1, 1], 'a command that began and failed is its own');
  },
);

test(
  'a sandbox bubblewrap gives up on while Hoist attaches its network (the sandbox gone under nsenter, as a failed ' +
    'netlink call leaves it) is made again, three times at most, for a run and a release alike',
  async () => {
    const dir = mkdtempSync(join(tmpdir(), 'hoist-bwrap-gone-'));
    try {
      const sandbox = await testSandbox(dir);
      const workspace = workspaceIn(dir, 'w');
      let launches = 0;
      const launch = (sandbox as unknown as { launch: (...a: unknown[]) => Promise<unknown> }).launch.bind(sandbox);
      (sandbox as unknown as { launch: typeof launch }).launch = (...a) => (launches++, launch(...a));
      // bubblewrap's sandbox process cannot mount this /etc file: it says so and ends right after it was made, as
      // the kernel's failing netlink call ends it, while Hoist attaches slirp4netns and nft to its network.
      rmSync(join(dir, 'sandbox', 'etc', 'egress', 'hosts'));
      const spec = { workspace, env: {}, network: 'egress' as const, limits: testLimits, log: () => {} };
      const failureOf = (p: Promise<unknown>) =>
        p.then(
          () => new Error('it ran'),
          (err: Error) => err,
        );
      const failure = await failureOf(sandbox.run({ ...spec, command: 'echo never' }));
      assert.is(launches, 3, failure.message);
      assert.is(failure.name, 'SandboxError');
      assert.match(failure.message, /bwrap: /, 'the error says what bubblewrap said');

      launches = 0;
      const release = await failureOf(sandbox.serve({ ...spec, command: 'echo never', port: 8080 }));
      assert.is(launches, 3, release.message);
      assert.match(release.message, /bwrap: /);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
);

test.run();
