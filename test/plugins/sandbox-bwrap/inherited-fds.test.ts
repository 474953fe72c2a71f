import { spawnSync } from 'node:child_process';
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { root } from '../../helpers/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'hoist-fds-'));
test.after(() => rmSync(dir, { recursive: true, force: true }));

const module = join(root, 'plugins/sandbox-bwrap/inherited-fds.ts');

test('descriptors a process inherited open across exec are closed; its own close-on-exec ones stay', () => {
  const inherited = openSync(join(dir, 'inherited'), 'w');
  // A child gets `inherited` as descriptor 100 (without close-on-exec, as a launcher leaves one; Node.js itself makes
  // the lowest ones close-on-exec as it starts) and opens a file of its own (close-on-exec, as every descriptor
  // Node.js opens), then closes what it inherited.
  const script = `
    const { openSync, fstatSync } = require('node:fs');
    const own = openSync(${JSON.stringify(join(dir, 'own'))}, 'w');
    const { closeInheritedDescriptors } = require(${JSON.stringify(module)});
    const closed = closeInheritedDescriptors();
    const open = (fd) => { try { fstatSync(fd); return true; } catch { return false; } };
    console.log(JSON.stringify({ closed, inheritedOpen: open(100), ownOpen: open(own) }));`;
  const r = spawnSync(process.execPath, ['--import', 'tsx', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit', ...Array<'ignore'>(97).fill('ignore'), inherited],
    encoding: 'utf8',
  });
  closeSync(inherited);
  const got = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
  assert.ok(got.closed.includes(100), JSON.stringify(got));
  assert.is(got.inheritedOpen, false);
  assert.is(got.ownOpen, true);
});

test.run();
