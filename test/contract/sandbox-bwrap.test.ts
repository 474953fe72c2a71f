import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testSandbox, workspaceIn } from '../helpers/sandbox.js';
import { sandboxEscapes } from './sandbox-escapes.js';
import { sandboxContract } from './sandbox.js';

const fresh = async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'hoist-bwrap-'));
  const sandbox = await testSandbox(dataDir);
  workspaceIn(dataDir, 'work');
  return {
    sandbox,
    dataDir,
    workspace: (name: string) => workspaceIn(join(dataDir, 'work'), name),
    cleanup: async () => rmSync(dataDir, { recursive: true, force: true }),
    socket: true,
  };
};

sandboxContract('sandbox-bwrap', fresh);
sandboxEscapes('sandbox-bwrap', fresh);
