import { Agent, type ClientRequestArgs } from 'node:http';
import { Socket } from 'node:net';
import type { Duplex } from 'node:stream';

type Callback = (error?: Error | null) => void;

/**
 * Makes `socket` finish a write of no bytes at once, without a system call. node:http ends a request whose body is
 * still being written with such a write, only so that it can tell when the body is out (OutgoingMessage.end). Over
 * a unix socket, Linux refuses any write, even one of no bytes, with EPIPE once the other end has closed. A release
 * that has read the whole request, answered it and closed its connection in that moment (a busy machine holds the
 * edge back between the two writes) would get its request failed and its client a 502, with its answer unread on
 * the socket. The stream sends one write at a time, so the writes before this one are done when it is called.
 */
export function skipEmptyWrites(socket: Socket): void {
  const write = socket._write;
  const writev = socket._writev;
  socket._write = function (chunk: { length: number }, encoding: BufferEncoding, callback: Callback) {
    if (chunk.length === 0) return callback();
    write.call(this, chunk, encoding, callback);
  };
  if (writev)
    socket._writev = function (chunks: { chunk: { length: number }; encoding: BufferEncoding }[], callback: Callback) {
      if (chunks.every(({ chunk }) => chunk.length === 0)) return callback();
      writev.call(this, chunks, callback);
    };
}

/**
 * The agent of the edge's connections to releases (for http-proxy): keeps them open between requests, the last one
 * freed used first, and ends a request whose body went out without a write of no bytes (skipEmptyWrites).
 */
export class ReleaseAgent extends Agent {
  /** An agent whose connections stay open between requests, the last one freed used first. */
  constructor() {
    super({ keepAlive: true, scheduling: 'lifo' });
  }

  /** Opens a connection as node:http's agent does, its empty writes skipped. */
  override createConnection(
    options: ClientRequestArgs,
    callback?: (err: Error | null, stream: Duplex) => void,
  ): Duplex | null | undefined {
    const socket = super.createConnection(options, callback);
    if (socket instanceof Socket) skipEmptyWrites(socket);
    return socket;
  }
}
