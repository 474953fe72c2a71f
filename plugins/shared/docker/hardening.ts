import type Docker from 'dockerode';

/** The unprivileged user every tenant container runs as (numeric, for any base image; never root, never Hoist's). */
export const TENANT_UID = 10001;
export const TENANT_USER = `${TENANT_UID}:${TENANT_UID}`;

const MiB = 1024 * 1024;

/** What a tenant container may use. */
export interface TenantLimits {
  memoryMb: number;
  /** CPU, thousandths of a CPU. */
  cpuMillis: number;
  processes: number;
  /** Size of each tmpfs, and the largest file the container may write, MiB. */
  diskMb: number;
  /** OCI runtime (HOIST_DOCKER_RUNTIME, e.g. runsc); the engine's default when unset. */
  runtime?: string;
}

/** Mount options of a tenant tmpfs of `diskMb` MiB owned by the tenant user, with `mode`. */
export function tenantTmpfs(diskMb: number, mode: string): string {
  return `rw,nosuid,nodev,size=${diskMb}m,uid=${TENANT_UID},gid=${TENANT_UID},mode=${mode}`;
}

/**
 * The HostConfig every container running tenant code starts from: read-only root filesystem, every
 * capability dropped, no-new-privileges, not privileged, no mounts (so no Docker socket), memory
 * without swap, CPU, process and largest-file limits, and the configured OCI runtime. `tmpfs` maps
 * each writable scratch path to its mount options (see tenantTmpfs).
 */
export function tenantHostConfig(l: TenantLimits, tmpfs: Record<string, string>): Docker.HostConfig {
  return {
    ReadonlyRootfs: true,
    CapDrop: ['ALL'],
    SecurityOpt: ['no-new-privileges'],
    Privileged: false,
    Memory: l.memoryMb * MiB,
    MemorySwap: l.memoryMb * MiB,
    NanoCpus: l.cpuMillis * 1_000_000,
    PidsLimit: l.processes,
    Ulimits: [{ Name: 'fsize', Soft: l.diskMb * MiB, Hard: l.diskMb * MiB }],
    Tmpfs: tmpfs,
    ...(l.runtime ? { Runtime: l.runtime } : {}),
  };
}
