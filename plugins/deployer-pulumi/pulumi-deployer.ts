import type Docker from 'dockerode';
import {
  LocalWorkspace,
  type InlineProgramArgs,
  type LocalWorkspaceOptions,
  type PulumiFn,
  type Stack,
} from '@pulumi/pulumi/automation/index.js';
import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { StageError } from '../../core/errors.js';
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
import { guardReleaseNetwork } from '../shared/docker/firewall.js';
import { lastLogLines, releaseLogLines } from '../shared/docker/logs.js';
import {
  releaseContainerName,
  runningReleaseIds,
  stageBuildContext,
  unhealthy,
  waitUntilAnswering,
} from '../shared/docker/release-image.js';
import { networkProgram, releaseProgram } from './release-program.js';

export interface PulumiDeployerOptions {
  dataDir: string;
  dockerHost: string;
  baseImage: string;
  network: string;
  memoryMb: number;
  cpuMillis: number;
  processes: number;
  diskMb: number;
  runtime?: string;
  /** Ranges releases may never reach besides this host and the private ranges (sandboxDenyCidrs). */
  denyCidrs: string[];
  healthTimeoutMs: number;
  passphrase: string;
  /** Where the warning goes when releases cannot be firewalled off this host from here. */
  warn(message: string): void;
}

const PROJECT = 'hoist-releases';
const never = new AbortController().signal;

/**
 * Runs each release as a Pulumi stack (`@pulumi/docker` image and container; the network in a
 * stack of its own) through the Automation API with inline programs and a local state backend in
 * `<dataDir>/pulumi`. Needs the `pulumi` CLI and its Docker provider plugin on this machine.
 */
export class PulumiDeployer implements Deployer {
  private networkReady: Promise<void> | null = null;

  constructor(
    private readonly workspaces: Workspaces,
    private readonly storage: Storage,
    private readonly archive: Archive,
    /** To read releases' logs (a failed one's last lines), list and limit their containers. */
    private readonly docker: Docker,
    private readonly opts: PulumiDeployerOptions,
  ) {}

  async prepare(spec: ReleaseSpec, control: PrepareControl): Promise<ReleaseTarget> {
    if (spec.runtime === 'node' && !spec.startCommand)
      throw new StageError(
        'deploy_no_start_command',
        'The release has no start command; set start_command in the project settings',
      );
    const { signal } = control;
    try {
      await this.ensureNetwork();
      const url = await this.workspaces.run(`deploy-${spec.deploymentId}`, async (context) => {
        await stageBuildContext(
          context,
          spec,
          this.opts.baseImage,
          { storage: this.storage, archive: this.archive },
          signal,
        );
        const stack = await this.stack(spec.deploymentId, releaseProgram({ ...this.opts, spec, context }));
        const result = await stack.up({ onOutput: (out) => control.log(out.trimEnd()), signal });
        // @pulumi/docker's Container has no pids limit: the engine sets it on the running container.
        await this.docker
          .getContainer(releaseContainerName(spec.deploymentId))
          .update({ PidsLimit: this.opts.processes });
        return String(result.outputs.url.value);
      });
      await waitUntilAnswering(url, this.opts.healthTimeoutMs, signal, async () => null).catch(async (err: Error) => {
        if (signal.aborted) throw err;
        const lines = await lastLogLines(this.docker.getContainer(releaseContainerName(spec.deploymentId)), 20).catch(
          () => [],
        );
        throw unhealthy(err.message, lines);
      });
      return { kind: 'http', url };
    } catch (err) {
      await this.remove(spec.deploymentId).catch((e: Error) =>
        this.opts.warn(
          `deployer-pulumi: the stack of the failed release ${spec.deploymentId} was not destroyed (${e.message})`,
        ),
      );
      if (signal.aborted) throw new StageError('deploy_canceled', 'The deploy was canceled; its stack was destroyed');
      if (err instanceof StageError) throw err;
      throw new StageError('deploy_pulumi_failed', `Pulumi could not run the release: ${(err as Error).message}`);
    }
  }

  async remove(deploymentId: string): Promise<void> {
    const ws = await LocalWorkspace.create(this.workspace());
    const exists = (await ws.listStacks()).some((s) => s.name === deploymentId);
    if (!exists) return;
    const stack = await this.stack(deploymentId, async () => ({}));
    await stack.destroy();
    await ws.removeStack(deploymentId);
  }

  /** Runs `up` again for every live release (Pulumi brings back what is missing) and reports its address. */
  async restore(specs: ReleaseSpec[], report: ReleaseReports): Promise<void> {
    for (const spec of specs) {
      try {
        const target = await this.prepare(spec, { signal: never, log: () => {}, report });
        await report.targetChanged(spec.deploymentId, target);
      } catch (err) {
        await report.failed(spec.deploymentId, (err as Error).message);
      }
    }
  }

  /** The releases' containers run on the Docker engine, labelled as deployer-docker's. */
  runningReleases(): Promise<string[]> {
    return runningReleaseIds(this.docker);
  }

  /** The release container's own log, read from the engine as deployer-docker's; null for a static release. */
  logs(deploymentId: string, limit: number): Promise<ReleaseLogLine[] | null> {
    return releaseLogLines(this.docker, deploymentId, limit);
  }

  /**
   * The network stack, brought up once per process before the first release, and firewalled as
   * deployer-docker's (guardReleaseNetwork).
   */
  private ensureNetwork(): Promise<void> {
    this.networkReady ??= this.stack('network', networkProgram(this.opts.network))
      .then((s) => s.up())
      .then(async () => {
        const net = (await this.docker.getNetwork(this.opts.network).inspect()) as Docker.NetworkInspectInfo;
        await guardReleaseNetwork(net, { who: 'deployer-pulumi', deny: this.opts.denyCidrs, warn: this.opts.warn });
      })
      .then(
        () => undefined,
        (err) => {
          this.networkReady = null;
          throw err;
        },
      );
    return this.networkReady;
  }

  private workspace(): LocalWorkspaceOptions {
    const backend = `file://${join(this.opts.dataDir, 'pulumi')}`;
    return {
      projectSettings: { name: PROJECT, runtime: 'nodejs', backend: { url: backend } },
      envVars: {
        PULUMI_BACKEND_URL: backend,
        PULUMI_CONFIG_PASSPHRASE: this.opts.passphrase,
        PULUMI_SKIP_UPDATE_CHECK: 'true',
      },
    };
  }

  private async stack(stackName: string, program: PulumiFn): Promise<Stack> {
    await mkdir(join(this.opts.dataDir, 'pulumi'), { recursive: true, mode: 0o700 });
    const args: InlineProgramArgs = { projectName: PROJECT, stackName, program };
    const stack = await LocalWorkspace.createOrSelectStack(args, this.workspace());
    await stack.setConfig('docker:host', { value: this.opts.dockerHost });
    return stack;
  }
}
