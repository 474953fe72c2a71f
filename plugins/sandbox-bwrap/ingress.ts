import { renameSync } from 'node:fs';
import net from 'node:net';

/** The descriptor a served release's relay finds its ingress socket at. */
export const INGRESS_FD = 5;

/** A listening unix socket made on the host for one served release, until the sandbox holds it. */
export interface Ingress {
  /** The listening socket's descriptor, for the sandbox's spawn to pass on (as INGRESS_FD). */
  fd: number;
  /** Where the edge connects, once handed over. */
  path: string;
  /**
   * Gives the socket to the sandbox for good (call it once the sandbox has its copy): it is moved to `path` and
   * Hoist's copy closed, so only the release's relay accepts on it. Closing a listening socket unlinks its file,
   * hence the socket is made at a temporary name and moved first.
   */
  handOver(): Promise<void>;
  /** Closes Hoist's copy (a sandbox that never started). Idempotent. */
  close(): Promise<void>;
}

/**
 * A unix socket at `path`, listening, for a sandbox to inherit: the edge reaches a release through it and the
 * release's relay, without slirp4netns and its host port (a TCP stack in user space, its own process: 41–48 µs of
 * CPU a proxied request, bench/edge-proxy.ts). Nothing of the host's filesystem is mounted into the sandbox: it
 * gets the descriptor; the socket is in a folder only Hoist reads, so a tenant can neither replace it nor point it
 * elsewhere.
 * Null when the path is too long for a socket address (the release is reached over TCP alone) or Node.js does not
 * give the descriptor.
 */
export async function openIngress(path: string): Promise<Ingress | null> {
  // sockaddr_un holds 108 bytes, the terminating NUL included.
  if (Buffer.byteLength(`${path}.new`) > 107) return null;
  const server = net.createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(`${path}.new`, resolve);
  });
  // Node.js has no public accessor for a server's descriptor; its handle has one on every Unix.
  const fd = (server as unknown as { _handle?: { fd?: number } })._handle?.fd;
  let closed: Promise<void> | null = null;
  const close = () => (closed ??= new Promise<void>((resolve) => server.close(() => resolve())));
  if (typeof fd !== 'number' || fd < 0) {
    await close();
    return null;
  }
  return {
    fd,
    path,
    handOver: () => {
      renameSync(`${path}.new`, path);
      return close();
    },
    close,
  };
}
