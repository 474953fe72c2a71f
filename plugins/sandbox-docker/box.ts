import type Docker from 'dockerode';
import { randomUUID } from 'node:crypto';
import { access } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import { HOME_DIR, SANDBOX_WORKSPACE } from '../../core/ports/sandbox.js';
import { engineStatus } from '../shared/docker/connection.js';
import { packDirectory } from '../shared/docker/pack-directory.js';
import { emptyDirectory, unpackDirectory, type Unpacked } from './workspace-tar.js';

/** Label keys on everything sandbox-docker makes; `owner` is the instance id of the Hoist process that made it. */
export const LABEL = { kind: 'hoist.sandbox', owner: 'hoist.sandbox.owner', box: 'hoist.sandbox.box' } as const;

/**
 * What a label `hoist.sandbox` says: a command's container, a service's, its relay, the files container, a presence
 * container.
 */
export type BoxKind = 'run' | 'serve' | 'relay' | 'files' | 'owner';

/** The labels of an object of `kind` made by `owner`. */
export function sandboxLabels(kind: BoxKind, owner: string, box?: string): Record<string, string> {
  return { 'hoist.managed': 'true', [LABEL.kind]: kind, [LABEL.owner]: owner, ...(box ? { [LABEL.box]: box } : {}) };
}

/** A host folder copied into a volume mounted at `target`. */
interface Folder {
  target: string;
  source: string;
  volume: string;
}

/**
 * The Docker objects of one run or service besides its container: a volume per host folder it sees
 * (the workspace at /app, and HOME when the spec names one) and a `files` container that is never
 * started, through which the volumes are filled from the host and read back (the engine's archive
 * endpoint, so a remote engine works too; the command's container has a read-only root, where the
 * engine refuses to unpack). Everything is labelled with the box id and its owner.
 */
export class Box {
  readonly id = randomUUID();
  readonly name = `hoist-sandbox-${this.id}`;
  private readonly folders: Folder[] = [];
  private files: Docker.Container | null = null;
  private readonly streams: { destroy(): void }[] = [];

  constructor(
    private readonly docker: Docker,
    private readonly owner: string,
  ) {}

  /** The labels of this box's objects of `kind`. */
  labels(kind: BoxKind): Record<string, string> {
    return sandboxLabels(kind, this.owner, this.id);
  }

  /**
   * Makes the volumes of `workspace` (at /app) and `home` (at HOME_DIR, when given), copies the
   * folders' contents in, owned by the tenant user, and returns the mounts of the command's
   * container (/app read-only when `readOnlyWorkspace`).
   */
  async fill(
    image: string,
    workspace: string,
    home: string | undefined,
    readOnlyWorkspace: boolean,
  ): Promise<Docker.MountSettings[]> {
    this.folders.push({ target: SANDBOX_WORKSPACE, source: workspace, volume: `${this.name}-app` });
    if (home) this.folders.push({ target: HOME_DIR, source: home, volume: `${this.name}-home` });
    for (const f of this.folders) await this.docker.createVolume({ Name: f.volume, Labels: this.labels('files') });
    const mounts = (readOnly: (f: Folder) => boolean): Docker.MountSettings[] =>
      // NoCopy: the image's own files at the target never land in the volume.
      this.folders.map(
        (f) =>
          ({
            Type: 'volume',
            Source: f.volume,
            Target: f.target,
            ReadOnly: readOnly(f),
            VolumeOptions: { NoCopy: true },
          }) as Docker.MountSettings,
      );
    this.files = await this.docker.createContainer({
      name: `${this.name}-files`,
      Image: image,
      Entrypoint: [''],
      Cmd: ['/bin/true'],
      Labels: this.labels('files'),
      NetworkDisabled: true,
      HostConfig: { NetworkMode: 'none', Mounts: mounts(() => false) },
    });
    for (const f of this.folders) {
      const { tar, done } = packDirectory(f.source, f.target.slice(1));
      await Promise.all([this.files.putArchive(tar, { path: '/' }), done]);
    }
    return mounts((f) => readOnlyWorkspace && f.target === SANDBOX_WORKSPACE);
  }

  /**
   * Replaces the contents of each host folder with what its volume holds now (see unpackDirectory
   * for what is refused). Resolves whether any folder held more than `maxBytes`.
   */
  async copyBack(maxBytes: number, refused: (path: string, why: string) => void): Promise<Unpacked[]> {
    const out: Unpacked[] = [];
    for (const f of this.folders) {
      const tar = (await this.files!.getArchive({ path: f.target })) as unknown as Readable;
      await emptyDirectory(f.source);
      out.push(
        await unpackDirectory(tar, f.source, { maxBytes, refused: (path, why) => refused(`${f.target}/${path}`, why) }),
      );
    }
    return out;
  }

  /**
   * The host folders of the volumes at `targets` (default: all) when the engine keeps them on this
   * machine where this process can read them (a local engine, Hoist as root), else null.
   */
  async hostPaths(targets = this.folders.map((f) => f.target)): Promise<string[] | null> {
    const paths: string[] = [];
    for (const f of this.folders.filter((x) => targets.includes(x.target))) {
      const path = (await this.docker.getVolume(f.volume).inspect()).Mountpoint;
      if (
        !path ||
        !(await access(path).then(
          () => true,
          () => false,
        ))
      )
        return null;
      paths.push(path);
    }
    return paths;
  }

  /**
   * Keeps an attached stream of one of the box's containers, to close it with the box (the engine holds it open until
   * then).
   */
  hold<T extends { destroy(): void }>(stream: T): T {
    this.streams.push(stream);
    return stream;
  }

  /** Removes every container and volume of this box (force), whatever state they are in, and closes its streams. */
  async remove(): Promise<void> {
    try {
      await removeLabelled(this.docker, [`${LABEL.box}=${this.id}`]);
    } finally {
      for (const s of this.streams.splice(0)) s.destroy();
    }
  }
}

/** Removes the containers, then the volumes, carrying all of `labels`; missing ones are fine. */
export async function removeLabelled(
  docker: Docker,
  labels: string[],
  keep?: (labels: Record<string, string>) => boolean,
): Promise<void> {
  const gone = (err: unknown) => {
    if (engineStatus(err) !== 404 && engineStatus(err) !== 409) throw err;
  };
  for (const c of await docker.listContainers({ all: true, filters: { label: labels } })) {
    if (!keep?.(c.Labels)) await docker.getContainer(c.Id).remove({ force: true, v: true }).catch(gone);
  }
  const { Volumes } = await docker.listVolumes({ filters: { label: labels } });
  for (const v of Volumes ?? []) {
    if (!keep?.(v.Labels ?? {})) await docker.getVolume(v.Name).remove().catch(gone);
  }
}
