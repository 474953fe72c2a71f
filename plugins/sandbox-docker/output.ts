import type Docker from 'dockerode';
import { PassThrough } from 'node:stream';
import { followLines } from '../shared/sandbox/follow-lines.js';

/**
 * Follows a container's attach stream (stdout and stderr multiplexed, no TTY) with followLines.
 * Resolves when the stream has ended and every line is out.
 */
export function followOutput(
  docker: Docker,
  stream: NodeJS.ReadableStream,
  o: { log(line: string): void; limitBytes: number; over(): void },
): Promise<void> {
  const sinks = [new PassThrough(), new PassThrough()];
  const done = followLines(sinks, o);
  docker.modem.demuxStream(stream, sinks[0], sinks[1]);
  const finish = () => sinks.forEach((s) => s.end());
  stream.once('end', finish);
  stream.once('close', finish);
  stream.once('error', finish);
  return done;
}
