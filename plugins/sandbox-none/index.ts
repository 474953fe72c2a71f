import type { PluginDefinition } from '../../core/plugin.js';
import { SANDBOX, type Sandbox } from '../../core/ports/sandbox.js';
import { LOGGER } from '../../core/tokens.js';
import { NoneSandbox } from './none-sandbox.js';

export default {
  id: 'sandbox-none',
  port: 'sandbox',
  name: 'none',
  token: SANDBOX,
  create: ({ get }) => {
    const log = get<{ warn(msg: string): void }>(LOGGER);
    return new NoneSandbox((m) => log.warn(m));
  },
} satisfies PluginDefinition<Sandbox>;
