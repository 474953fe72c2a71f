import type Docker from 'dockerode';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { StageError } from '../../core/errors.js';
import type { Lifecycle } from '../../core/plugin.js';
import type { Archive } from '../../core/ports/archive.js';
import type {
  Deployer,
  PrepareControl,
  ReleaseLogLine,
  ReleaseReports,
  ReleaseSpec,
  ReleaseTarget,
} from '../../core/ports/deployer.js';
import type { Storage } from '../../core/ports/storage.js';
import type { Workspaces } from '../../core/ports/workspaces.js';
import { engineStatus, startContainer } from '../shared/docker/connection.js';
import { guardReleaseNetwork } from '../shared/docker/firewall.js';
import { tenantHostConfig } from '../shared/docker/hardening.js';
import { lastLogLines, releaseLogLines } from '../shared/docker/logs.js';
import { ensureBridgeNetwork } from '../shared/docker/network.js';
import { packDirectories } from '../shared/docker/pack-directory.js';
import {
  MAX_RESTARTS,
  RELEASE_PORT,
  RELEASE_USER,
  stageRuntime,
  releaseContainerName,
  releaseEnv,
  releaseImageConfig,
  releaseImageTag,
  releaseLabels,
  releaseTmpfs,
  runningReleaseIds,
  unhealthy,
  waitUntilAnswering,
} from '../shared/docker/release-image.js';
import { directStart } from '../shared/release/npm-start.js';
import { unpackArtifact } from '../shared/release/unpack-artifact.js';

export interface DockerDeployerOptions {
  /** Image every release image is built on (needs node, npm and sh). */
  baseImage: string;
  /** The bridge network releases run on (created, labelled, when missing). */
  network: string;
  /** Memory limit of a release container, MiB (its Node.js heap cap is three quarters of it). */
  memoryMb: number;
  /** CPU limit of a release container, thousandths of a CPU. */
  cpuMillis: number;
  /** Processes and threads of a release container (releaseProcesses). */
  processes: number;
  /** Size of its /tmp and its largest file, MiB (releaseDiskMb). */
  diskMb: number;
  /** OCI runtime of release containers (HOIST_DOCKER_RUNTIME); the engine's default when unset. */
  runtime?: string;
  /** Ranges releases may never reach besides this host and the private ranges (sandboxDenyCidrs). */
  denyCidrs: string[];
  /** How long a release has to answer HTTP before its deploy fails. */
  healthTimeoutMs: number;
  /** Where the start-up warning goes when releases cannot be firewalled off this host from here. */
  warn(message: string): void;
}

const never = new AbortController().signal;
const status = engineStatus;
/** The container a release's image is committed from. */
const packingName = (deploymentId: string) => `hoist-packing-${deploymentId}`;

/**
 * Runs each release as a container of its own image through the Docker Engine API. The image is
 * the base image plus the artifact (`/app`) and Hoist's runtime scripts (`/hoist`), committed from a
 * container that never runs (one layer, no build); the container
 * gets the hardening every tenant container gets (shared/docker/hardening.ts: a non-root user,
 * every capability dropped, no-new-privileges, a read-only root filesystem with a tmpfs `/tmp`,
 * memory, CPU, process and file size limits, HOIST_DOCKER_RUNTIME, no host path), docker-init as
 * PID 1, on Hoist's own bridge network, firewalled off this host and the private ranges when Hoist
 * runs as root beside the engine. The edge reaches it at its address on that network
 * (`http://<container ip>:8080`): no host port is taken, and an edge on the Docker host or in a
 * container attached to the network can route to it. Everything it creates carries
 * `hoist.managed=true` and the deployment and project ids. Every engine call has a deadline (withDeadlines, given by
 * dockerClient): a wedged engine fails the deploy with `deploy_docker_failed` naming the call; what it could not remove
 * then goes at the next `remove` of the release (a retry's, the project's deletion).
 */
export class DockerDeployer implements Deployer, Lifecycle {
  private events: Readable | null = null;
  /** Where a crash loop is reported: core's, as the last prepare or restore gave it (one object for all). */
  private reports: ReleaseReports | null = null;

  constructor(
    private readonly workspaces: Workspaces,
    private readonly storage: Storage,
    private readonly archive: Archive,
    private readonly docker: Docker,
    private readonly opts: DockerDeployerOptions,
  ) {}

  /**
   * Checks the engine answers and the base image is there, creates the network when missing, and
   * watches Hoist's containers: one that stops for good after its restarts is reported (exited).
   */
  async start(): Promise<void> {
    await this.check();
    await this.docker
      .getImage(this.opts.baseImage)
      .inspect()
      .catch((err) => {
        throw new Error(
          `the base image ${this.opts.baseImage} is not on the Docker engine (${status(err) ?? err.message}); ` +
            'build it with scripts/docker-base-image.sh or set HOIST_DOCKER_BASE_IMAGE',
        );
      });
    await this.network();
    this.events = (await this.docker.getEvents({
      filters: { type: ['container'], event: ['die'], label: ['hoist.managed=true'] },
    })) as Readable;
    this.events.on('error', () => {});
    createInterface({ input: this.events }).on(
      'line',
      (line) => void this.died(JSON.parse(line)).catch(this.unreported),
    );
  }

  async stop(): Promise<void> {
    this.events?.destroy();
    this.events = null;
  }

  async check(): Promise<void> {
    await this.docker.ping().catch((err: Error) => {
      throw new Error(`the Docker engine does not answer: ${err.message}`);
    });
  }

  async prepare(spec: ReleaseSpec, control: PrepareControl): Promise<ReleaseTarget> {
    this.reports = control.report;
    if (spec.runtime === 'node' && !spec.startCommand)
      throw new StageError(
        'deploy_no_start_command',
        'The release has no start command; set start_command in the project settings',
      );
    const { signal } = control;
    try {
      await this.remove(spec.deploymentId);
      await this.workspaces.run(`deploy-${spec.deploymentId}`, async (dir) => {
        const app = join(dir, 'app');
        const deps = { storage: this.storage, archive: this.archive };
        await unpackArtifact(deps, spec.artifactKey, dir, app, signal, spec.artifactRoot);
        signal.throwIfAborted();
        const hoist = join(dir, 'hoist');
        await stageRuntime(hoist, app, spec);
        const startCommand = spec.startCommand && (await directStart(spec.startCommand, app, spec.env));
        await this.commitImage({ ...spec, startCommand }, app, hoist, signal);
      });
      control.log(`Image ${releaseImageTag(spec.deploymentId)} made`);
      signal.throwIfAborted();
      const container = await this.create(spec);
      await startContainer(container);
      control.log(`Container ${releaseContainerName(spec.deploymentId)} started`);
      return await this.healthy(container, signal);
    } catch (err) {
      await this.remove(spec.deploymentId).catch((e: Error) =>
        this.opts.warn(`deployer-docker: the failed release ${spec.deploymentId} was not removed (${e.message})`),
      );
      if (signal.aborted)
        throw new StageError('deploy_canceled', 'The deploy was canceled; its container and image were removed');
      if (err instanceof StageError) throw err;
      throw new StageError(
        'deploy_docker_failed',
        `The Docker engine could not run the release: ${(err as Error).message}`,
      );
    }
  }

  async remove(deploymentId: string): Promise<void> {
    const label = ['hoist.managed=true', `hoist.deployment=${deploymentId}`];
    await this.suspend(deploymentId);
    // The packing container of a prepare that could not remove it (the engine stopped answering) goes with it.
    await this.docker
      .getContainer(packingName(deploymentId))
      .remove({ force: true })
      .catch((err) => {
        if (status(err) !== 404) throw err;
      });
    for (const i of await this.docker.listImages({ filters: { label } })) {
      await this.docker
        .getImage(i.Id)
        .remove({ force: true })
        .catch((err) => {
          if (status(err) !== 404 && status(err) !== 409) throw err;
        });
    }
  }

  /** Removes the release's container and keeps its image, from which `resume` starts it again. */
  async suspend(deploymentId: string): Promise<void> {
    const label = ['hoist.managed=true', `hoist.deployment=${deploymentId}`];
    for (const c of await this.docker.listContainers({ all: true, filters: { label } })) {
      await this.docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch((err) => {
          if (status(err) !== 404 && status(err) !== 409) throw err;
        });
    }
  }

  async resume(spec: ReleaseSpec, control: PrepareControl): Promise<ReleaseTarget> {
    this.reports = control.report;
    const label = ['hoist.managed=true', `hoist.deployment=${spec.deploymentId}`];
    if ((await this.docker.listImages({ filters: { label } })).length === 0)
      throw new StageError('deploy_release_gone', `The image of release ${spec.deploymentId} is no longer kept`);
    try {
      await this.suspend(spec.deploymentId);
      const container = await this.create(spec);
      await startContainer(container);
      control.log(`Container ${releaseContainerName(spec.deploymentId)} started from its kept image`);
      return await this.healthy(container, control.signal);
    } catch (err) {
      await this.suspend(spec.deploymentId).catch(() => {});
      if (control.signal.aborted) throw new StageError('deploy_canceled', 'The promote was canceled');
      if (err instanceof StageError) throw err;
      throw new StageError(
        'deploy_docker_failed',
        `The Docker engine could not run the release: ${(err as Error).message}`,
      );
    }
  }

  runningReleases(): Promise<string[]> {
    return runningReleaseIds(this.docker);
  }

  /**
   * The release container's own log (the engine keeps it, json-file, across its restarts), from any process that
   * reaches the engine; null for a static release, and once the container is gone: removed, or suspended (its image
   * is kept, not its container).
   */
  logs(deploymentId: string, limit: number): Promise<ReleaseLogLine[] | null> {
    return releaseLogLines(this.docker, deploymentId, limit);
  }

  /**
   * Starts the container of each live release again (after a host or engine restart) and waits for
   * it to answer; a release whose container is gone is built again from its artifact. The new
   * address is reported, and so is a release that does not come back.
   */
  async restore(specs: ReleaseSpec[], report: ReleaseReports): Promise<void> {
    this.reports = report;
    for (const spec of specs) {
      try {
        const [found] = await this.docker.listContainers({
          all: true,
          filters: { label: ['hoist.managed=true', `hoist.deployment=${spec.deploymentId}`] },
        });
        let target: ReleaseTarget;
        if (!found) target = await this.prepare(spec, { signal: never, log: () => {}, report });
        else {
          const container = this.docker.getContainer(found.Id);
          if (found.State !== 'running') await startContainer(container);
          target = await this.healthy(container, never);
        }
        await report.targetChanged(spec.deploymentId, target);
      } catch (err) {
        await report.failed(spec.deploymentId, (err as Error).message);
      }
    }
  }

  /** A container of ours died: when Docker will not restart it again, it is reported (exited). */
  /** Says that a release's end went unreported; a container removed meanwhile (Hoist removing it) is no news. */
  private readonly unreported = (err: Error) => {
    if (status(err) !== 404) this.opts.warn(`deployer-docker: a release's exit was not reported (${err.message})`);
  };

  private async died(event: { id: string; Actor?: { Attributes?: Record<string, string> } }): Promise<void> {
    const deploymentId = event.Actor?.Attributes?.['hoist.deployment'];
    if (!deploymentId || !this.reports) return;
    const container = this.docker.getContainer(event.id);
    const info = await container.inspect();
    if (info.RestartCount < MAX_RESTARTS || info.State.Running || info.State.Restarting) return;
    const lines = await lastLogLines(container, 20).catch(() => []);
    await this.reports.exited(deploymentId, `The app crashed ${MAX_RESTARTS + 1} times and was stopped.`, lines);
  }

  /**
   * The network releases run on, created with Hoist's label when missing, and firewalled off this
   * host and the private ranges (guardReleaseNetwork).
   */
  private async network(): Promise<void> {
    const net = await ensureBridgeNetwork(this.docker, {
      name: this.opts.network,
      labels: { 'hoist.managed': 'true' },
    });
    await guardReleaseNetwork(net, { who: 'deployer-docker', deny: this.opts.denyCidrs, warn: this.opts.warn });
  }

  /**
   * Makes the release's image without a build: a container of the base image, created and never
   * started, gets the artifact at /app and the runtime scripts at /hoist (owned by root, readable by
   * all), and is
   * committed with the release's configuration. One layer on the base image, where a build of
   * releaseDockerfile makes an intermediate container per instruction (about 4 times as long).
   */
  private async commitImage(spec: ReleaseSpec, app: string, hoist: string, signal: AbortSignal): Promise<void> {
    // One a failed prepare left went with the `remove` prepare begins with.
    const packing = await this.docker.createContainer({
      name: packingName(spec.deploymentId),
      Image: this.opts.baseImage,
      Cmd: ['true'],
      NetworkDisabled: true,
      // Not the release's labels: nothing that looks for the release's container finds (and starts) this one.
      Labels: { 'hoist.managed': 'true' },
    });
    try {
      const folders = [
        { dir: app, prefix: 'app' },
        { dir: hoist, prefix: 'hoist' },
      ];
      // One archive: each put mounts the container's filesystem anew (about 50 ms).
      const { tar, done } = packDirectories(folders, { uid: 0, gid: 0, worldReadable: true });
      const put = packing.putArchive(tar, { path: '/', abortSignal: signal }).catch((err: Error) => {
        // Aborted (its deadline, a cancel), the engine reads no more of it: nor does anything else.
        tar.destroy();
        throw err;
      });
      await Promise.all([put, done]);
      signal.throwIfAborted();
      const [repo, tag] = releaseImageTag(spec.deploymentId).split(':');
      // Not aborted on cancel: the engine would go on and make the image after the cleanup looked for it.
      await packing.commit({ _query: { container: packing.id, repo, tag }, _body: releaseImageConfig(spec) });
    } catch (err) {
      // The failure is this one, not the removal's (a wedged engine fails both): one left goes with `remove`.
      await packing.remove({ force: true }).catch(() => {});
      throw err;
    }
    await packing.remove({ force: true }).catch((err: Error) => {
      if (status(err) !== 404) throw err;
    });
  }

  private create(spec: ReleaseSpec): Promise<Docker.Container> {
    return this.docker.createContainer({
      name: releaseContainerName(spec.deploymentId),
      Image: releaseImageTag(spec.deploymentId),
      Env: releaseEnv(spec, this.opts.memoryMb),
      Labels: releaseLabels(spec),
      User: RELEASE_USER,
      ExposedPorts: { [`${RELEASE_PORT}/tcp`]: {} },
      HostConfig: {
        ...tenantHostConfig(this.opts, releaseTmpfs(this.opts.diskMb)),
        Init: true,
        NetworkMode: this.opts.network,
        RestartPolicy: { Name: 'on-failure', MaximumRetryCount: MAX_RESTARTS },
        LogConfig: { Type: 'json-file', Config: { 'max-size': '10m', 'max-file': '2' } },
      },
    });
  }

  /**
   * Waits until the container answers on its network address and returns that address. Fails with
   * `deploy_unhealthy` and its last log lines when it exits or restarts first, or at the deadline.
   */
  private async healthy(container: Docker.Container, signal: AbortSignal): Promise<ReleaseTarget> {
    const info = await container.inspect();
    const restarts = info.RestartCount;
    const ip = info.NetworkSettings.Networks[this.opts.network]?.IPAddress;
    const down = async () => {
      const now = await container.inspect();
      if (now.RestartCount > restarts || !now.State.Running)
        return `exited with code ${now.State.ExitCode} before answering on port ${RELEASE_PORT}`;
      return null;
    };
    try {
      if (!ip) throw new Error(`has no address on network ${this.opts.network}`);
      const url = `http://${ip}:${RELEASE_PORT}`;
      await waitUntilAnswering(url, this.opts.healthTimeoutMs, signal, down);
      return { kind: 'http', url };
    } catch (err) {
      if (signal.aborted) throw err;
      const lines = await lastLogLines(container, 20).catch(() => []);
      throw unhealthy((err as Error).message, lines);
    }
  }
}
