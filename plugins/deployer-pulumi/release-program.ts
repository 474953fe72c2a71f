import * as docker from '@pulumi/docker';
import type * as pulumi from '@pulumi/pulumi';
import { join } from 'node:path';
import type { ReleaseSpec } from '../../core/ports/deployer.js';
import {
  MAX_RESTARTS,
  RELEASE_PORT,
  RELEASE_USER,
  releaseContainerName,
  releaseEnv,
  releaseImageTag,
  releaseLabels,
  releaseTmpfs,
} from '../shared/docker/release-image.js';

/** What one release stack is made of. */
export interface ReleaseProgramArgs {
  spec: ReleaseSpec;
  /** The Docker build context laid out by stageBuildContext. */
  context: string;
  /** The network releases run on (made by the network stack). */
  network: string;
  /** Memory limit, MiB. */
  memoryMb: number;
  /** CPU limit, thousandths of a CPU. */
  cpuMillis: number;
  /** Size of /tmp and of the largest file, MiB. */
  diskMb: number;
  /** OCI runtime (HOIST_DOCKER_RUNTIME); the engine's default when unset. */
  runtime?: string;
}

const MiB = 1024 * 1024;

const HOIST_LABEL = { label: 'hoist.managed', value: 'true' };

/** The program of the one stack that holds the bridge network every release runs on. */
export function networkProgram(name: string) {
  return async () => {
    const network = new docker.Network('network', { name, driver: 'bridge', labels: [HOIST_LABEL] });
    return { network: network.name };
  };
}

/**
 * The program of one release's stack: its image (the base image plus the artifact, built by the
 * engine) and its container, with the limits, labels and hardening of deployer-docker
 * (shared/docker/hardening.ts: non-root, read-only root, no capabilities, no-new-privileges,
 * memory, CPU and file size limits, the runtime, docker-init; the process limit, which the
 * provider does not know, is set by the deployer once the container runs). Its `url`
 * output is where the edge reaches the release: the container's address on the network.
 */
export function releaseProgram(a: ReleaseProgramArgs) {
  return async (): Promise<{ url: pulumi.Output<string> }> => {
    const labels = Object.entries(releaseLabels(a.spec)).map(([label, value]) => ({ label, value }));
    const image = new docker.Image('image', {
      imageName: releaseImageTag(a.spec.deploymentId),
      build: { context: a.context, dockerfile: join(a.context, 'Dockerfile'), builderVersion: 'BuilderV1' },
      skipPush: true,
    });
    const container = new docker.Container('container', {
      name: releaseContainerName(a.spec.deploymentId),
      image: image.imageName,
      envs: releaseEnv(a.spec, a.memoryMb),
      labels,
      user: RELEASE_USER,
      memory: a.memoryMb,
      memorySwap: a.memoryMb,
      cpus: (a.cpuMillis / 1000).toString(),
      ulimits: [{ name: 'fsize', soft: a.diskMb * MiB, hard: a.diskMb * MiB }],
      ...(a.runtime ? { runtime: a.runtime } : {}),
      init: true,
      readOnly: true,
      tmpfs: releaseTmpfs(a.diskMb),
      capabilities: { drops: ['ALL'] },
      securityOpts: ['no-new-privileges'],
      privileged: false,
      networksAdvanced: [{ name: a.network }],
      restart: 'on-failure',
      maxRetryCount: MAX_RESTARTS,
      logOpts: { 'max-size': '10m', 'max-file': '2' },
      mustRun: true,
      wait: false,
    });
    const url = container.networkDatas.apply((nets) => {
      const ip = nets?.find((n) => n.networkName === a.network)?.ipAddress;
      return `http://${ip}:${RELEASE_PORT}`;
    });
    return { url };
  };
}
