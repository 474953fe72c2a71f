import type Docker from 'dockerode';
import { guardBridge, hostDnsServers } from '../shared/docker/firewall.js';
import { DENIED_RANGES } from '../shared/sandbox/denied-ranges.js';
import { registryAddresses, registryPort } from '../shared/sandbox/registry-addresses.js';
import { bridgeInterface, ensureBridgeNetwork } from '../shared/docker/network.js';

/** The networks sandbox containers use. */
export interface SandboxNetworks {
  /** `egress`: out to the internet through the host's NAT. */
  egress: string;
  /** A service with network `none`: no route out, reachable only from this host. */
  internal: string;
}

export const EGRESS_NETWORK = 'hoist-sandbox';
export const INTERNAL_NETWORK = 'hoist-sandbox-internal';

/**
 * Makes the sandbox networks when missing: bridges of their own (never Hoist's release network)
 * with inter-container traffic disabled, so a sandbox reaches neither another sandbox nor a release;
 * Docker's isolation rules keep them off every other Docker network. Then firewalls this host, the
 * private ranges and `denyCidrs` off both (guardBridge), letting the npm registry's addresses
 * through on the registry's port only; when that cannot be done here, says once through `warn` what
 * is not enforced.
 */
export async function prepareNetworks(
  docker: Docker,
  denyCidrs: string[],
  npmRegistry: string | undefined,
  warn: (message: string) => void,
): Promise<SandboxNetworks> {
  const labels = { 'hoist.managed': 'true', 'hoist.sandbox': 'network' };
  const egress = await ensureBridgeNetwork(docker, {
    name: EGRESS_NETWORK,
    labels,
    icc: false,
    bridge: 'hoist-sandbox',
  });
  const internal = await ensureBridgeNetwork(docker, {
    name: INTERNAL_NETWORK,
    labels,
    icc: false,
    internal: true,
    bridge: 'hoist-sbx-int',
  });
  const port = registryPort(npmRegistry);
  const allow = port === null ? [] : (await registryAddresses(npmRegistry)).map((address) => ({ address, port }));
  const problems = new Set<string>();
  for (const net of [egress, internal]) {
    const why = await guardBridge(bridgeInterface(net), { deny: denyCidrs, allow, dns: hostDnsServers() });
    if (why) problems.add(why);
  }
  if (problems.size) {
    warn(
      `sandbox-docker: containers on the ${EGRESS_NETWORK} network can reach this ` +
        `host's ports (through the bridge gateway) and ` +
        `${[...DENIED_RANGES, ...denyCidrs].join(', ')}: ${[...problems].join('; ')}. ` +
        'Run Hoist as root on the Docker host, or add the equivalent iptables rules there ' +
        '(INPUT -i <bridge> DROP for new connections; DOCKER-USER -i <bridge> -d <range> ' +
        'DROP).',
    );
  }
  return { egress: EGRESS_NETWORK, internal: INTERNAL_NETWORK };
}
