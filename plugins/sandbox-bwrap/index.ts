import type { PluginDefinition } from '../../core/plugin.js';
import { SANDBOX, type Sandbox } from '../../core/ports/sandbox.js';
import { BwrapSandbox } from './bwrap-sandbox.js';

export default {
  id: 'sandbox-bwrap',
  port: 'sandbox',
  name: 'bwrap',
  token: SANDBOX,
  create: ({ config }) =>
    new BwrapSandbox({
      dataDir: config.dataDir,
      uidBase: config.sandboxUidBase,
      npmRegistry: config.npmRegistry,
      denyCidrs: (config.sandboxDenyCidrs ?? '').split(',').map((s) => s.trim()).filter(Boolean),
    }),
} satisfies PluginDefinition<Sandbox>;
