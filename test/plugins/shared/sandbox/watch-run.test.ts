import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { watchRun } from '../../../../plugins/shared/sandbox/watch-run.js';

test(
  'a process that ended before it was watched (bubblewrap giving up while Hoist set the sandbox up) is reported ' +
    'ended, with its exit code',
  async () => {
    const child = spawn('/bin/sh', ['-c', 'exit 3'], { stdio: ['ignore', 'pipe', 'pipe'] });
    await once(child, 'exit');
    const watch = watchRun(child, { outputBytes: 1_000_000, log: () => {}, kill: () => {} });
    // Unanswered, the run would be watched forever (a build that never ends): a generous bound, not a timing.
    let timer: NodeJS.Timeout | undefined;
    const never = new Promise<'still waiting'>((r) => (timer = setTimeout(() => r('still waiting'), 10_000)));
    const result = await Promise.race([watch.done, never]).finally(() => clearTimeout(timer));
    assert.equal(result, { reason: 'exited', exitCode: 3, signal: null });
  },
);

test.run();
