import { readFileSync } from 'node:fs';
import net from 'node:net';

/** Whether a server can listen on 127.0.0.1:`port` now (0: any port); resolves the port it got, or null. */
const listenable = (port: number) =>
  new Promise<number | null>((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(null));
    s.listen(port, '127.0.0.1', () => {
      const { port: got } = s.address() as net.AddressInfo;
      s.close(() => resolve(got));
    });
  });

/** The first port of the kernel's ephemeral range (32768 by default), where outgoing connections take theirs. */
const EPHEMERAL_FROM = (() => {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 32768;
  }
})();

/**
 * A free TCP port on the host's loopback for a server started afterwards, picked at random below the kernel's
 * ephemeral range (checked by listening on it). A port `listen(0)` gives is from that range, where every outgoing
 * connection takes its local port: one could take it before the server bound it (seen in CI: EADDRINUSE).
 */
export async function freePort(): Promise<number> {
  if (EPHEMERAL_FROM > 12_000)
    for (let attempt = 0; attempt < 20; attempt++) {
      const port = await listenable(10_000 + Math.floor(Math.random() * (EPHEMERAL_FROM - 10_000)));
      if (port !== null) return port;
    }
  const port = await listenable(0);
  if (port === null) throw new Error('no free port on 127.0.0.1');
  return port;
}
