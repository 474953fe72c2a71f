import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import type { EntityName } from '@mikro-orm/core';
import { STORAGE, type Storage } from '../../core/ports/storage.js';
import type { Kernel } from '../../adapters/kernel.js';
import { Operation } from '../../core/entities/operation.js';
import { Project } from '../../core/entities/project.js';
import { Version } from '../../core/entities/version.js';

/** What came back on a raw connection: status 0 when the server closed it without an answer. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: any;
  /** The connection ended with an error (e.g. ECONNRESET) rather than a clean close or a whole answer. */
  error: string | null;
}

/** A raw HTTP/1.1 connection, for requests no well-behaved client sends. */
export interface RawConnection {
  socket: net.Socket;
  /** Settles with the first whole answer, or with what there is when the connection ends. */
  response: Promise<RawResponse>;
  /** Writes `chunk`, waiting for the socket to drain; false once the connection is gone. */
  write(chunk: Buffer | string): Promise<boolean>;
}

/**
 * Opens a connection to `base` (http://host:port) and writes the request head (Host: the base's, unless `headers` has
 * `host`).
 */
export async function rawRequest(
  base: string,
  method: string,
  path: string,
  headers: Record<string, string | number>,
): Promise<RawConnection> {
  const url = new URL(base);
  const socket = net.connect(Number(url.port), url.hostname);
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  let buf = Buffer.alloc(0);
  let error: string | null = null;
  const response = new Promise<RawResponse>((resolve) => {
    const parse = (): RawResponse | null => {
      const end = buf.indexOf('\r\n\r\n');
      if (end < 0) return null;
      const [statusLine, ...lines] = buf.subarray(0, end).toString().split('\r\n');
      const h = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      const body = buf.subarray(end + 4);
      const length = h['content-length'] === undefined ? null : Number(h['content-length']);
      if (length !== null && body.length < length) return null;
      const text = body.subarray(0, length ?? body.length).toString();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {}
      return { status: Number(statusLine.split(' ')[1]), headers: h, body: parsed, error };
    };
    socket.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const r = parse();
      if (r) resolve(r);
    });
    socket.on('error', (e: NodeJS.ErrnoException) => (error = e.code ?? e.message));
    socket.on('close', () => resolve(parse() ?? { status: 0, headers: {}, body: buf.toString(), error }));
  });
  const write = async (chunk: Buffer | string) => {
    if (socket.destroyed || socket.writableEnded) return false;
    if (!socket.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          socket.off('drain', done).off('close', done);
          resolve();
        };
        socket.on('drain', done).on('close', done);
      });
    }
    return !socket.destroyed;
  };
  // A `host` among `headers` takes the place of the base's (`Host` besides it makes a second one).
  const host = 'host' in headers ? [] : [`host: ${url.host}`];
  const head = [
    `${method} ${path} HTTP/1.1`,
    ...host,
    ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`),
    '',
    '',
  ].join('\r\n');
  await write(head);
  return { socket, response, write };
}

/** A multipart/form-data body builder with a fixed boundary. */
export class Form {
  readonly boundary = `----hoist${randomBytes(8).toString('hex')}`;
  readonly contentType = `multipart/form-data; boundary=${this.boundary}`;

  /** The head of a part (boundary line and headers); a file part when `filename` is given. */
  head(name: string, filename?: string): Buffer {
    const disposition = `form-data; name="${name}"${filename === undefined ? '' : `; filename="${filename}"`}`;
    const type = filename === undefined ? '' : 'content-type: application/zip\r\n';
    return Buffer.from(`--${this.boundary}\r\ncontent-disposition: ${disposition}\r\n${type}\r\n`);
  }

  /** A whole part. */
  part(name: string, value: Buffer | string, filename?: string): Buffer {
    return Buffer.concat([this.head(name, filename), Buffer.from(value), Buffer.from('\r\n')]);
  }

  /** The closing boundary. */
  end(): Buffer {
    return Buffer.from(`--${this.boundary}--\r\n`);
  }

  /** A whole body of `parts` ([name, value, filename?]) and the closing boundary. */
  body(parts: [string, Buffer | string, string?][]): Buffer {
    return Buffer.concat([...parts.map(([n, v, f]) => this.part(n, v, f)), this.end()]);
  }
}

/** Files under `<dataDir>/storage/<dir>` (recursively; 0 when the folder does not exist). */
export function filesUnder(kernel: Kernel, dir: string): string[] {
  const root = join(kernel.config.dataDir, 'storage', dir);
  try {
    return readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => join(e.parentPath ?? e.path, e.name));
  } catch {
    return [];
  }
}

/** Objects whose key starts with `prefix` in the kernel's Storage, whichever plugin it is. */
export async function objectsUnder(kernel: Kernel, prefix: string): Promise<number> {
  let n = 0;
  for await (const _ of kernel.get<Storage>(STORAGE).list(prefix)) n++;
  return n;
}

/**
 * What an upload may leave behind: stored uploads, storage temp files (storage-local's), versions, operations,
 * projects.
 */
export async function footprint(
  kernel: Kernel,
): Promise<{ uploads: number; temp: number; versions: number; operations: number; projects: number }> {
  const em = kernel.orm.em.fork();
  const count = (e: EntityName<object>) => em.count(e, {});
  return {
    uploads: await objectsUnder(kernel, 'uploads/'),
    temp: filesUnder(kernel, '.tmp').length,
    versions: await count(Version),
    operations: await count(Operation),
    projects: await count(Project),
  };
}
