import type Docker from 'dockerode';
import { engineStatus } from './connection.js';

/** How a bridge network Hoist makes is set up. */
export interface BridgeSpec {
  name: string;
  labels: Record<string, string>;
  /** Containers on it may talk to each other (Docker's `enable_icc`; default true). */
  icc?: boolean;
  /** No route out of the host (Docker's `--internal`). */
  internal?: boolean;
  /** The host interface name of the bridge (at most 15 characters); Docker's `br-<id>` when unset. */
  bridge?: string;
}

const ICC = 'com.docker.network.bridge.enable_icc';
const BRIDGE = 'com.docker.network.bridge.name';

/**
 * The bridge network `spec.name`, created with `spec`'s labels and options when missing (another
 * process may create it at the same time: either one wins). Throws when an existing network lets
 * containers talk to each other but `spec.icc` is false, or is internal when it should not be (or
 * the reverse), naming the command that removes it.
 */
export async function ensureBridgeNetwork(docker: Docker, spec: BridgeSpec): Promise<Docker.NetworkInspectInfo> {
  const inspect = () => docker.getNetwork(spec.name).inspect() as Promise<Docker.NetworkInspectInfo>;
  let net = await inspect().catch((err) => {
    if (engineStatus(err) === 404) return null;
    throw err;
  });
  if (!net) {
    const options: Record<string, string> = {};
    if (spec.icc === false) options[ICC] = 'false';
    if (spec.bridge) options[BRIDGE] = spec.bridge;
    await docker
      .createNetwork({
        Name: spec.name,
        Driver: 'bridge',
        CheckDuplicate: true,
        Internal: spec.internal ?? false,
        Labels: spec.labels,
        Options: options,
      })
      .catch((err) => {
        // Another process created it first.
        if (engineStatus(err) !== 409) throw err;
      });
    net = await inspect();
  }
  const icc = net.Options?.[ICC] !== 'false';
  if ((spec.icc === false && icc) || Boolean(net.Internal) !== Boolean(spec.internal)) {
    const want = [
      spec.icc === false ? 'inter-container traffic disabled' : '',
      spec.internal ? 'internal' : 'not internal',
    ]
      .filter(Boolean)
      .join(', ');
    throw new Error(
      `the Docker network ${spec.name} exists but is not set up as Hoist needs (${want}); ` +
        `remove it (docker network rm ${spec.name}) and Hoist makes it again`,
    );
  }
  return net;
}

/**
 * The host interface of a bridge network: its `com.docker.network.bridge.name`, else Docker's
 * `br-<first 12 of its id>`.
 */
export const bridgeInterface = (net: Docker.NetworkInspectInfo): string =>
  net.Options?.[BRIDGE] ?? (net.Name === 'bridge' ? 'docker0' : `br-${net.Id.slice(0, 12)}`);
