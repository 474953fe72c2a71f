import type Docker from 'dockerode';
import { randomUUID } from 'node:crypto';
import { access } from 'node:fs/promises';
import type { Duplex } from 'node:stream';
import type { Lifecycle } from '../../core/plugin.js';
import {
  HOME_DIR,
  SandboxError,
  type Sandbox,
  type SandboxEndReason,
  type SandboxResult,
  type SandboxRun,
  type SandboxServe,
  type SandboxService,
} from '../../core/ports/sandbox.js';
import { Box, LABEL, removeLabelled, sandboxLabels } from './box.js';
import { createCommandContainer, type ImageFacts } from './command-container.js';
import { engineStatus, startContainer } from '../shared/docker/connection.js';
import { overDisk, watchDisk } from '../shared/sandbox/disk-watch.js';
import { prepareNetworks, type SandboxNetworks } from './networks.js';
import { followOutput } from './output.js';
import { Presence, removeOrphans } from './owners.js';
import { relayPort, startRelay } from './relay.js';

export interface DockerSandboxOptions {
  /**
   * The image every sandbox container runs (HOIST_DOCKER_BASE_IMAGE): sh and the usual commands, node and npm for
   * Node.js projects.
   */
  image: string;
  /** The engine's address, for messages (HOIST_DOCKER_HOST). */
  dockerHost: string;
  /** OCI runtime of every sandbox container (HOIST_DOCKER_RUNTIME). */
  runtime?: string;
  /** Ranges egress may never reach besides the built-in ones (sandboxDenyCidrs). */
  denyCidrs: string[];
  /** The registry builds install from (npmRegistry): reachable even on a private network. */
  npmRegistry?: string;
  /** CPU of a served process, thousandths of a CPU (releaseCpuMillis); a run gets one CPU. */
  serveCpuMillis: number;
  /** Where warnings go: what cannot be enforced from here, what could not be removed. */
  warn(message: string): void;
}

/** What preparing learnt about the engine. */
interface Setup {
  facts: ImageFacts;
  networks: SandboxNetworks;
  /** Added to every process limit: gVisor's own threads count in the container's pids cgroup. */
  extraProcesses: number;
}

/** Threads gVisor's runsc keeps in a container's pids cgroup besides the tenant's (about 40 measured, with room). */
export const GVISOR_THREADS = 64;
const SIGXFSZ_EXIT = 128 + 25;
const MiB = 1024 * 1024;

/**
 * The catch of a kill or a stop: any answer of the engine is fine (the container exited already...); none (past the
 * call's deadline, withDeadlines) aborts `wedged`, where the wait for the container's end, which has none, gives up.
 */
const unanswered = (wedged: AbortController) => (err: unknown) => {
  if (engineStatus(err) === undefined) wedged.abort(err);
};

/**
 * Runs tenant code in throwaway hardened containers through the Docker Engine API, local or
 * remote. Each run or service gets a fresh container of the base image: the tenant user (10001), a
 * read-only root, tmpfs /tmp and HOME (each `diskMb`), no capabilities, no-new-privileges, memory
 * without swap, processes, CPU and largest-file limits, docker-init as PID 1, the configured OCI
 * runtime, and no host path. The workspace is copied into a volume at /app before and back out
 * after (box.ts); while a run lasts its volumes are measured every 2 s when the engine keeps them
 * on this machine. Network `none` is no network; `egress` is the `hoist-sandbox` bridge, with no
 * traffic between its containers, nor to this host or the denied ranges (networks.ts). A service
 * is reached at its address on the sandbox network through a relay (relay.ts).
 *
 * Every container holds its stdin attached to this process and is killed (`kill -9 -1`) when that
 * stdin closes, so it dies with the Hoist process that started it. What a crash still leaves (a
 * container that did not notice, volumes) is removed when any Hoist process on the engine next
 * prepares its sandbox: objects carry their owner's instance id, and an owner is alive while its
 * presence container runs (owners.ts).
 *
 * Every engine call has a deadline (withDeadlines, given by dockerClient): a wedged engine fails a run or a service
 * with a SandboxError naming the call, at the latest once its time limit is up and the engine does not answer the kill.
 */
export class DockerSandbox implements Sandbox, Lifecycle {
  readonly id = 'sandbox-docker';
  /** This process' instance id, on everything it makes. */
  readonly owner = randomUUID();
  private setup: Promise<Setup> | null = null;
  private readonly presence: Presence;

  constructor(
    private readonly docker: Docker,
    private readonly opts: DockerSandboxOptions,
  ) {
    this.presence = new Presence(docker, opts.image, this.owner);
  }

  /**
   * Checks the engine answers and has the base image (and the runtime, when one is set), makes the
   * networks and their firewall rules, starts this process' presence, and removes what crashed Hoist
   * processes left. Throws a SandboxError naming the setting or the command that fixes it. Idempotent.
   */
  async prepare(): Promise<void> {
    await this.ready();
  }

  /** Removes every container and volume this process made. */
  async stop(): Promise<void> {
    if (!this.setup) return;
    await removeLabelled(
      this.docker,
      [`${LABEL.owner}=${this.owner}`],
      (labels) => labels[LABEL.kind] === 'owner',
    ).catch((err: Error) => this.leftBehind('this process', err));
    await this.presence.stop();
  }

  /** Throws when a prepared sandbox's engine does not answer (a role that runs no tenant code never prepares it). */
  async check(): Promise<void> {
    if (this.setup) await this.ping();
  }

  async run(spec: SandboxRun): Promise<SandboxResult> {
    if (spec.signal?.aborted) return { reason: 'canceled', exitCode: null, signal: null };
    const setup = await this.ready();
    const box = new Box(this.docker, this.owner);
    try {
      const container = await createCommandContainer(this.docker, box, setup.facts, spec, {
        kind: 'run',
        network: spec.network === 'egress' ? setup.networks.egress : 'none',
        limits: {
          ...spec.limits,
          processes: spec.limits.processes + setup.extraProcesses,
          cpuMillis: 1000,
          runtime: this.opts.runtime,
        },
        readOnlyWorkspace: false,
      });
      const ended = await this.execute(container, spec, await box.hostPaths());
      if (ended.reason === 'canceled') return ended;
      const copied = await box.copyBack(spec.limits.diskMb * MiB, (path, why) =>
        spec.log(`sandbox: ${path} was not copied back: ${why}`),
      );
      if (ended.reason === 'exited' && copied.some((c) => c.overLimit))
        return { reason: 'disk', exitCode: null, signal: null };
      return ended;
    } catch (err) {
      throw err instanceof SandboxError
        ? err
        : new SandboxError(`sandbox-docker: the run failed on the Docker engine: ${(err as Error).message}`, {
            cause: err,
          });
    } finally {
      await box.remove().catch((err: Error) => this.leftBehind('a run', err));
    }
  }

  async serve(spec: SandboxServe): Promise<SandboxService> {
    const setup = await this.ready();
    const box = new Box(this.docker, this.owner);
    const network = spec.network === 'egress' ? setup.networks.egress : setup.networks.internal;
    let why: SandboxEndReason | null = null;
    let container: Docker.Container | null = null;
    const wedged = new AbortController();
    const stopFor = (reason: SandboxEndReason) => {
      why ??= reason;
      // Best effort: a container that already exited has nothing left to kill.
      void container?.kill({ signal: 'SIGKILL' }).catch(unanswered(wedged));
    };
    let ip: string;
    let output: Promise<void> = Promise.resolve();
    let unwatch = () => {};
    try {
      const made = await createCommandContainer(
        this.docker,
        box,
        setup.facts,
        { ...spec, env: { ...spec.env, PORT: String(spec.port) } },
        {
          kind: 'serve',
          network,
          limits: {
            ...spec.limits,
            processes: spec.limits.processes + setup.extraProcesses,
            cpuMillis: this.opts.serveCpuMillis,
            runtime: this.opts.runtime,
          },
          readOnlyWorkspace: true,
          port: spec.port,
        },
      );
      const attach = box.hold(
        (await made.attach({ stream: true, stdin: true, stdout: true, stderr: true, hijack: true })) as Duplex,
      );
      output = followOutput(this.docker, attach, {
        log: spec.log,
        limitBytes: spec.limits.outputBytes,
        over: () => stopFor('output'),
      });
      await startContainer(made);
      container = made;
      ip = (await made.inspect()).NetworkSettings.Networks[network]?.IPAddress ?? '';
      if (!ip) throw new Error(`the container has no address on the network ${network}`);
      await startRelay(this.docker, box, setup.facts.image, made.id, spec.port);
      attach.write('\n');
      const home = spec.home ? await box.hostPaths([HOME_DIR]) : null;
      if (home) unwatch = watchDisk(home, spec.limits.diskMb * MiB, () => stopFor('disk'));
    } catch (err) {
      await box.remove().catch((e: Error) => this.leftBehind('a service that did not start', e));
      throw err instanceof SandboxError
        ? err
        : new SandboxError(`sandbox-docker could not start the service: ${(err as Error).message}`, { cause: err });
    }
    const started = container;
    const exited: Promise<SandboxResult> = started
      .wait({ abortSignal: wedged.signal })
      .then(async ({ StatusCode }: { StatusCode: number }) => {
        await Promise.race([output, new Promise((r) => setTimeout(r, 2000))]);
        const oom = await started.inspect().then(
          (i) => i.State.OOMKilled,
          () => false,
        );
        return this.result(StatusCode, why, oom, why === 'canceled' ? 'SIGTERM' : 'SIGKILL');
      })
      .catch((): SandboxResult => ({ reason: why ?? 'exited', exitCode: null, signal: null }))
      .finally(async () => {
        unwatch();
        await box.remove().catch((err: Error) => this.leftBehind('a service', err));
      });
    let stopped: Promise<void> | null = null;
    return {
      url: `http://${ip}:${relayPort(spec.port)}`,
      exited,
      stop: () =>
        (stopped ??= (async () => {
          why ??= 'canceled';
          // SIGTERM to docker-init, which passes it on; SIGKILL after 5 s. It fails only for a container
          // that has exited already (and so is being removed): `exited` settles either way.
          await started.stop({ t: 5 }).catch(unanswered(wedged));
          await exited;
        })()),
    };
  }

  /**
   * Runs a created container to its end under the run's limits, its output going to `spec.log`; `volumes` are measured
   * while it runs.
   */
  private async execute(
    container: Docker.Container,
    spec: SandboxRun,
    volumes: string[] | null,
  ): Promise<SandboxResult> {
    let reason: SandboxEndReason | null = null;
    let started = false;
    const wedged = new AbortController();
    // Best effort: a container that already exited has nothing left to kill.
    const kill = () => void container.kill({ signal: 'SIGKILL' }).catch(unanswered(wedged));
    const stopFor = (r: SandboxEndReason) => {
      if (reason) return;
      reason = r;
      if (started) kill();
    };
    const attach = (await container.attach({
      stream: true,
      stdin: true,
      stdout: true,
      stderr: true,
      hijack: true,
    })) as NodeJS.ReadWriteStream;
    const output = followOutput(this.docker, attach, {
      log: spec.log,
      limitBytes: spec.limits.outputBytes,
      over: () => stopFor('output'),
    });
    const timer = setTimeout(() => stopFor('timeout'), spec.limits.timeMs);
    const onAbort = () => stopFor('canceled');
    spec.signal?.addEventListener('abort', onAbort);
    // A cancel that came while the container was made has fired its event already.
    if (spec.signal?.aborted) onAbort();
    const unwatch = volumes ? watchDisk(volumes, spec.limits.diskMb * MiB, () => stopFor('disk')) : () => {};
    try {
      if (reason) return { reason, exitCode: null, signal: null };
      await startContainer(container).catch((err: Error) => {
        throw new SandboxError(`sandbox-docker could not start the container: ${err.message}`, { cause: err });
      });
      started = true;
      if (reason) kill();
      attach.write('\n');
      // Waiting once it has started (condition not-running) cannot miss an exit, however quick.
      const { StatusCode } = (await container.wait({ abortSignal: wedged.signal }).catch((err: Error) => {
        throw wedged.signal.reason ?? err;
      })) as { StatusCode: number };
      await Promise.race([output, new Promise((r) => setTimeout(r, 2000))]);
      const info = await container.inspect();
      const result = this.result(StatusCode, reason, info.State.OOMKilled, 'SIGKILL');
      // What it wrote after the last check (or all of a run shorter than one) counts too.
      if (result.reason === 'exited' && volumes && (await overDisk(volumes, spec.limits.diskMb * MiB)))
        return { reason: 'disk', exitCode: null, signal: null };
      return result;
    } finally {
      clearTimeout(timer);
      unwatch();
      spec.signal?.removeEventListener('abort', onAbort);
      // The attached stream of a container that never started never ends: it would hold the process open.
      if (started) attach.end();
      else (attach as unknown as Duplex).destroy();
    }
  }

  /** How a container ended: stopped by us for `ours`, killed for memory, past the file size limit, or exited. */
  private result(status: number, ours: SandboxEndReason | null, oomKilled: boolean, ourSignal: string): SandboxResult {
    if (ours) return { reason: ours, exitCode: null, signal: ourSignal };
    if (oomKilled) return { reason: 'memory', exitCode: null, signal: 'SIGKILL' };
    if (status === SIGXFSZ_EXIT) return { reason: 'disk', exitCode: null, signal: 'SIGXFSZ' };
    return { reason: 'exited', exitCode: status, signal: null };
  }

  private ping(): Promise<unknown> {
    return this.docker.ping().catch((err: Error) => {
      throw new SandboxError(
        `sandbox-docker: the Docker engine at ${this.opts.dockerHost} does not answer ` +
          `(${err.message}); start it, or set HOIST_DOCKER_HOST`,
      );
    });
  }

  private ready(): Promise<Setup> {
    this.setup ??= this.init().catch((err: Error) => {
      this.setup = null;
      throw err instanceof SandboxError ? err : new SandboxError(`sandbox-docker: ${err.message}`, { cause: err });
    });
    return this.setup;
  }

  private async init(): Promise<Setup> {
    await this.ping();
    const image = await this.docker
      .getImage(this.opts.image)
      .inspect()
      .catch((err: Error) => {
        throw new Error(
          `the base image ${this.opts.image} is not on the Docker engine (${err.message}); ` +
            `build it with scripts/docker-base-image.sh, or set HOIST_DOCKER_BASE_IMAGE`,
        );
      });
    let extraProcesses = 0;
    if (this.opts.runtime) {
      const info = (await this.docker.info()) as { Runtimes?: Record<string, { path?: string }> };
      const known = Object.keys(info.Runtimes ?? {});
      if (!known.includes(this.opts.runtime))
        throw new Error(
          `HOIST_DOCKER_RUNTIME is ${this.opts.runtime}, which the Docker engine does not ` +
            `know (it has ${known.join(', ')}); register it in the engine's daemon.json ` +
            `("runtimes") or unset it`,
        );
      if (/runsc/.test(info.Runtimes?.[this.opts.runtime]?.path ?? this.opts.runtime)) extraProcesses = GVISOR_THREADS;
    }
    const envs = image.Config.Env ?? [];
    const facts: ImageFacts = {
      image: this.opts.image,
      env: envs.map((e) => e.split('=')[0]),
      path: envs.find((e) => e.startsWith('PATH='))?.slice(5) ?? '/usr/local/bin:/usr/bin:/bin',
    };
    const networks = await prepareNetworks(this.docker, this.opts.denyCidrs, this.opts.npmRegistry, this.opts.warn);
    await this.presence.start();
    await removeOrphans(this.docker, this.owner);
    if (!(await this.volumesVisible())) {
      this.opts.warn(
        'sandbox-docker: the Docker engine keeps volumes where this process cannot read ' +
          "them (a remote engine, or Hoist not running as root): a workspace's size is " +
          'checked when it is copied back, not while the command runs',
      );
    }
    return { facts, networks, extraProcesses };
  }

  /**
   * Says that the containers and volumes of `what` could not be removed; labelled with this process as
   * their owner, they go at its stop, or when another Hoist process finds them after a crash (owners.ts).
   */
  private leftBehind(what: string, err: Error): void {
    this.opts.warn(`sandbox-docker: the containers and volumes of ${what} were not removed (${err.message})`);
  }

  /** Whether a volume of the engine can be read here (see Box.hostPaths). */
  private async volumesVisible(): Promise<boolean> {
    const name = `hoist-sandbox-probe-${this.owner}`;
    const volume = await this.docker.createVolume({ Name: name, Labels: sandboxLabels('files', this.owner) });
    try {
      const path = (await this.docker.getVolume(name).inspect()).Mountpoint;
      return (
        !!path &&
        (await access(path).then(
          () => true,
          () => false,
        ))
      );
    } finally {
      // Labelled as this process' own: one left here goes with the others at stop, or after a crash.
      await this.docker
        .getVolume(volume.name)
        .remove()
        .catch(() => {});
    }
  }
}
