import type { FastifyInstance } from 'fastify';
import { loadConfig } from '../../config/load.js';
import { buildHealthServer } from '../observability/health-routes.js';
import { boot, type Kernel } from '../kernel.js';
import { pinTickObject } from '../tick-object.js';

/** The roles one process can run. */
export type Role = 'api' | 'worker' | 'edge';

/** A running set of roles; `close` stops taking requests, finishes what is in flight, closes connections. */
export interface Running {
  kernel: Kernel;
  urls: Partial<Record<Role, string>>;
  /** The health and metrics listener of an edge running without the API (the public edge port has none). */
  edgeAdmin?: string;
  close(): Promise<void>;
}

/**
 * Boots the kernel and starts the given roles on their configured ports. Each role's code is loaded only when it
 * runs: an edge alone does not hold the API's routes and schemas or the worker's stages in memory.
 */
export async function startRoles(roles: Role[], kernel?: Kernel): Promise<Running> {
  pinTickObject();
  const k = kernel ?? (await boot(loadConfig()));
  const servers: FastifyInstance[] = [];
  const urls: Running['urls'] = {};
  let edgeAdmin: string | undefined;
  let stopWorker: (() => Promise<void>) | undefined;
  const shutdown = async () => {
    for (const s of servers) await s.close();
    await stopWorker?.();
    await k.stop();
  };
  try {
    if (roles.includes('api')) {
      const { buildApi } = await import('../http/app.js');
      const api = await buildApi(k);
      urls.api = await api.listen({ port: k.config.port, host: k.config.host });
      servers.push(api);
    }
    if (roles.includes('edge')) {
      const { buildEdge } = await import('../edge/edge.js');
      const edge = await buildEdge(k);
      urls.edge = await edge.listen({ port: k.config.edgePort, host: k.config.host });
      servers.push(edge);
      // With the API in the process, its root answers health and metrics (one registry for all roles).
      if (!roles.includes('api')) {
        const admin = await buildHealthServer(k, 'edge');
        edgeAdmin = await admin.listen({ port: k.config.edgeAdminPort, host: k.config.edgeAdminHost });
        servers.push(admin);
      }
    }
    if (roles.includes('worker')) {
      const { startWorker } = await import('../worker/worker.js');
      stopWorker = await startWorker(k);
      urls.worker = `queue ${k.config.queue}, ${k.config.workerConcurrency} at once`;
      if (!roles.includes('api')) {
        const health = await buildHealthServer(k, 'worker');
        urls.worker += `; health on ${await health.listen({ port: k.config.workerPort, host: k.config.host })}`;
        servers.push(health);
      }
    }
  } catch (err) {
    await shutdown();
    throw err;
  }
  return { kernel: k, urls, edgeAdmin, close: shutdown };
}

/** Closes `running` once on SIGTERM or SIGINT, then exits. */
export function closeOnSignals(running: Running): void {
  let closing = false;
  const onSignal = (signal: string) => {
    if (closing) return;
    closing = true;
    running.kernel.log.info({ signal }, 'shutting down');
    running.close().then(
      () => process.exit(0),
      (err) => {
        running.kernel.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
