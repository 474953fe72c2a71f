import type Docker from 'dockerode';
import type { Duplex } from 'node:stream';
import { startContainer } from '../shared/docker/connection.js';
import { TENANT_USER, tenantHostConfig } from '../shared/docker/hardening.js';
import type { Box } from './box.js';

/** The port the relay of a service listens on, on the service's address (another when the app wants it). */
export const relayPort = (appPort: number) => (appPort === 65080 ? 65081 : 65080);

// Listens on the container's own address only (the app's own loopback does not reach it), forwards
// each connection to the app on the loopback (where an app listening on 127.0.0.1, on `::` or on
// 0.0.0.0 answers), else on that address; exits when its stdin closes.
const RELAY = `
const net = require('net'), os = require('os');
const [listen, app] = process.argv.slice(1).map(Number);
const own = Object.values(os.networkInterfaces()).flat().find((a) => a && a.family === 'IPv4' && !a.internal);
net.createServer((client) => {
  client.on('error', () => {});
  const dial = (hosts) => {
    const up = net.connect(app, hosts[0]);
    up.once('connect', () => {
      client.pipe(up).pipe(client);
      up.on('error', () => client.destroy());
      client.on('close', () => up.destroy());
    });
    up.once('error', () => (hosts.length > 1 ? dial(hosts.slice(1)) : client.destroy()));
  };
  dial(own ? ['127.0.0.1', own.address] : ['127.0.0.1']);
}).listen(listen, own ? own.address : '0.0.0.0');
process.stdin.on('end', () => process.exit(0)).on('error', () => process.exit(0)).resume();`;

/**
 * Starts the relay of a service: a container of Hoist's own code (no tenant code) sharing the
 * service container's network namespace, listening on relayPort(appPort) of its address and
 * passing connections to the app. It lets the edge reach an app that listens on the loopback only,
 * as on the host; being a container of its own, the app can neither kill it nor charge it to its
 * limits. It goes with the box.
 */
export async function startRelay(
  docker: Docker,
  box: Box,
  image: string,
  service: string,
  appPort: number,
): Promise<void> {
  const relay = await docker.createContainer({
    name: `${box.name}-relay`,
    Image: image,
    Entrypoint: [''],
    Cmd: ['node', '-e', RELAY, String(relayPort(appPort)), String(appPort)],
    User: TENANT_USER,
    Env: ['NODE_OPTIONS=--max-old-space-size=32'],
    Labels: box.labels('relay'),
    OpenStdin: true,
    StdinOnce: true,
    AttachStdin: true,
    HostConfig: {
      ...tenantHostConfig({ memoryMb: 96, cpuMillis: 500, processes: 32, diskMb: 1 }, {}),
      NetworkMode: `container:${service}`,
      LogConfig: { Type: 'none', Config: {} },
    },
  });
  const stdin = box.hold((await relay.attach({ stream: true, stdin: true, hijack: true })) as Duplex);
  stdin.on('error', () => {});
  await startContainer(relay);
}
