import { randomUUID } from 'node:crypto';
import { rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const REQUEST_LINE = /^[A-Z]+ \S+ HTTP\/1\.[01]\r\n/;

/**
 * A unix socket in front of a Docker engine's that passes everything through, until `blackHole` makes it a wedged
 * engine: requests are read and never answered, nor is anything after them on their connection. Streams the engine
 * answered already (events, attach) go on.
 */
export class EngineProxy {
  /** The request lines swallowed, in order (`POST /commit?container=… HTTP/1.1`). */
  readonly swallowed: string[] = [];
  private at: RegExp | null = null;
  private wedged = false;
  private readonly sockets = new Set<net.Socket>();

  private constructor(
    /** The proxy's socket, to give a Docker client as its `socketPath`. */
    readonly path: string,
    private readonly server: net.Server,
    private readonly engine: string,
  ) {
    server.on('connection', (client) => this.pass(client));
  }

  /** A proxy of the engine at the unix socket `engine`, listening on a fresh socket of its own. */
  static async start(engine = '/var/run/docker.sock'): Promise<EngineProxy> {
    const path = join(tmpdir(), `hoist-engine-${randomUUID().slice(0, 8)}.sock`);
    const server = net.createServer();
    await new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, resolve));
    return new EngineProxy(path, server, engine);
  }

  /** From the first request whose request line matches `at` on (default: the next request), all are swallowed. */
  blackHole(at = /^/): void {
    this.at = at;
  }

  /** From now on, new requests pass again (the connections of swallowed ones stay silent). */
  forward(): void {
    this.at = null;
    this.wedged = false;
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((resolve) => this.server.close(resolve));
    rmSync(this.path, { force: true });
  }

  private track(socket: net.Socket): net.Socket {
    this.sockets.add(socket);
    socket.on('error', () => {}).on('close', () => this.sockets.delete(socket));
    return socket;
  }

  private pass(client: net.Socket): void {
    this.track(client);
    let upstream: net.Socket | null = null;
    let silent = false;
    client.on('data', (chunk: Buffer) => {
      if (silent) return;
      // A client writes a request's head in one piece: a chunk that begins a request begins with its request line.
      const line = REQUEST_LINE.exec(chunk.toString('latin1', 0, 4096))?.[0].trim();
      if (line && (this.wedged || this.at?.test(line))) {
        this.wedged = silent = true;
        this.swallowed.push(line);
        upstream?.unpipe(client);
        return;
      }
      if (!upstream) {
        upstream = this.track(net.connect(this.engine));
        upstream.pipe(client, { end: false });
        upstream.on('close', () => {
          // A wedged engine closes nothing.
          if (!silent) client.destroy();
        });
      }
      if (!upstream.write(chunk)) {
        client.pause();
        upstream.once('drain', () => client.resume());
      }
    });
    client.on('close', () => upstream?.destroy());
  }
}
