import type Docker from 'dockerode';
import { createInterface } from 'node:readline';
import { PassThrough } from 'node:stream';

/**
 * Follows a container's attach stream (stdout and stderr multiplexed, no TTY): each line of either
 * goes to `log` as it arrives. Once more than `limitBytes` have come, `over` is called (once) and
 * no more lines are passed on. Resolves when the stream has ended and every line is out.
 */
export function followOutput(docker: Docker, stream: NodeJS.ReadableStream, o: { log(line: string): void; limitBytes: number; over(): void }): Promise<void> {
  let bytes = 0;
  let passed = false;
  const ends: Promise<void>[] = [];
  const sinks = [new PassThrough(), new PassThrough()];
  for (const sink of sinks) {
    sink.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      if (bytes > o.limitBytes && !passed) {
        passed = true;
        o.over();
      }
    });
    const lines = createInterface({ input: sink, crlfDelay: Infinity });
    lines.on('line', (line) => {
      if (!passed) o.log(line);
    });
    ends.push(new Promise((resolve) => lines.once('close', resolve)));
  }
  docker.modem.demuxStream(stream, sinks[0], sinks[1]);
  const finish = () => sinks.forEach((s) => s.end());
  stream.once('end', finish);
  stream.once('close', finish);
  stream.once('error', finish);
  return Promise.all(ends).then(() => {});
}
