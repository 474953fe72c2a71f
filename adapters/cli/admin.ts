import { loadConfig } from '../../config/load.js';
import type { Kernel } from '../kernel.js';
import { createLogger } from '../logger.js';

/** Boots a quiet kernel for an admin command, runs `fn` in a database context, then stops it. */
export async function withKernel<T>(fn: (kernel: Kernel) => Promise<T>): Promise<T> {
  // Loaded here, not at the top: the commands that talk to the REST API never pay for the kernel.
  const [{ boot }, { RequestContext }] = await Promise.all([import('../kernel.js'), import('@mikro-orm/core')]);
  const config = loadConfig();
  const kernel = await boot(config, { log: createLogger(process.env.HOIST_LOG_LEVEL ?? 'warn', config.logFormat) });
  try {
    return await RequestContext.create(kernel.orm.em.fork(), () => fn(kernel));
  } finally {
    await kernel.stop();
  }
}
