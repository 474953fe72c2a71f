import type { HoistConfig, Logger } from '../../../core/plugin.js';
import { parseCidrs } from './firewall.js';

/** What both Docker deployers take from the configuration for their release containers. */
export function releaseOptions(config: HoistConfig, log: Logger) {
  return {
    baseImage: config.dockerBaseImage,
    network: config.dockerNetwork,
    memoryMb: config.releaseMemoryMb,
    cpuMillis: config.releaseCpuMillis,
    processes: config.releaseProcesses,
    diskMb: config.releaseDiskMb,
    runtime: config.dockerRuntime,
    denyCidrs: parseCidrs(config.sandboxDenyCidrs),
    healthTimeoutMs: config.healthTimeoutSeconds * 1000,
    warn: (message: string) => log.warn(message),
  };
}
