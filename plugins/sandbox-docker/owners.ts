import type Docker from 'dockerode';
import type { Duplex } from 'node:stream';
import { engineStatus, startContainer } from '../shared/docker/connection.js';
import { TENANT_USER, tenantHostConfig } from '../shared/docker/hardening.js';
import { LABEL, removeLabelled, sandboxLabels } from './box.js';

/**
 * Says to every Hoist process sharing the engine that owner `owner` is alive: a tiny container
 * (`hoist.sandbox=owner`) whose only process reads its stdin, which this process holds attached.
 * When the process dies (a crash, kill -9), the engine closes that stdin, the container exits and
 * is removed: a running presence container is a live owner. Runs no tenant code.
 */
export class Presence {
  private stream: Duplex | null = null;
  private stopped = false;

  constructor(
    private readonly docker: Docker,
    private readonly image: string,
    private readonly owner: string,
  ) {}

  /** Starts the presence container; it is started again if it goes away while this process lives. */
  async start(): Promise<void> {
    const container = await this.docker.createContainer({
      name: `hoist-sandbox-owner-${this.owner}`,
      Image: this.image,
      Entrypoint: [''],
      Cmd: ['/bin/sh', '-c', 'read _'],
      User: TENANT_USER,
      Labels: sandboxLabels('owner', this.owner),
      OpenStdin: true,
      StdinOnce: true,
      AttachStdin: true,
      HostConfig: {
        ...tenantHostConfig({ memoryMb: 16, cpuMillis: 100, processes: 4, diskMb: 1 }, {}),
        NetworkMode: 'none',
        AutoRemove: true,
        LogConfig: { Type: 'none', Config: {} },
      },
    });
    const stream = (await container.attach({ stream: true, stdin: true, hijack: true })) as Duplex;
    stream.on('error', () => {});
    stream.once('close', () => {
      if (this.stream === stream && !this.stopped) setTimeout(() => void this.restart(), 1000).unref();
    });
    this.stream = stream;
    await startContainer(container);
  }

  /** Ends the presence: the container exits and is removed. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.stream?.destroy();
    // Usually gone already: its stdin closed ends it, and it removes itself (AutoRemove).
    await this.docker
      .getContainer(`hoist-sandbox-owner-${this.owner}`)
      .remove({ force: true })
      .catch(() => {});
  }

  private async restart(): Promise<void> {
    if (this.stopped) return;
    // The old container, when it is still there: start() makes it again under the same name.
    await this.docker
      .getContainer(`hoist-sandbox-owner-${this.owner}`)
      .remove({ force: true })
      .catch(() => {});
    await this.start().catch(() => setTimeout(() => void this.restart(), 5000).unref());
  }
}

/**
 * Removes the sandbox containers and volumes whose owner has no running presence container (the
 * Hoist process that made them is gone; one created less than a minute ago counts as running),
 * except `self`'s. Returns how many containers it removed.
 */
export async function removeOrphans(docker: Docker, self: string): Promise<number> {
  // Objects are listed before the live owners: an owner's presence runs before it makes anything,
  // so whatever is listed first and belongs to a live owner finds that owner in the second list.
  const containers = await docker.listContainers({ all: true, filters: { label: [LABEL.owner] } });
  const { Volumes } = await docker.listVolumes({ filters: { label: [LABEL.owner] } });
  const presences = await docker.listContainers({ all: true, filters: { label: [`${LABEL.kind}=owner`] } });
  // A presence just created is not running yet: its owner is alive, unless it stays so (a crash between the two).
  const live = (c: Docker.ContainerInfo) =>
    c.State === 'running' || (c.State === 'created' && Date.now() / 1000 - c.Created < 60);
  const alive = new Set([self, ...presences.filter(live).map((c) => c.Labels[LABEL.owner])]);
  const dead = new Set(
    [...containers.map((c) => c.Labels[LABEL.owner]), ...(Volumes ?? []).map((v) => v.Labels?.[LABEL.owner])].filter(
      (o): o is string => !!o && !alive.has(o),
    ),
  );
  let removed = 0;
  for (const owner of dead) {
    removed += containers.filter((c) => c.Labels[LABEL.owner] === owner).length;
    await removeLabelled(docker, [`${LABEL.owner}=${owner}`]).catch((err) => {
      if (engineStatus(err) !== 404) throw err;
    });
  }
  return removed;
}
