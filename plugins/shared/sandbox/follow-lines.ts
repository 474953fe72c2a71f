import { createInterface } from 'node:readline';

/**
 * Follows a run's output streams (stdout and stderr): each line goes to `log` whole, as it arrives. It is not cut
 * here: `log` redacts it (a secret cut in two is no longer recognised, and its first characters would show) and cuts
 * it after that; the line is no longer than `limitBytes`, past which nothing is passed on. Once more than
 * `limitBytes` have come in all, `over` is called (once) and no more lines are passed on. Resolves when every stream
 * has ended and its lines are out.
 */
export function followLines(
  streams: NodeJS.ReadableStream[],
  o: { log(line: string): void; limitBytes: number; over(): void },
): Promise<void> {
  let bytes = 0;
  let passed = false;
  return Promise.all(
    streams.map(
      (s) =>
        new Promise<void>((resolve) => {
          s.on('data', (chunk: Buffer) => {
            bytes += chunk.length;
            if (bytes > o.limitBytes && !passed) {
              passed = true;
              o.over();
            }
          });
          const lines = createInterface({ input: s, crlfDelay: Infinity });
          lines.on('line', (l) => {
            if (!passed) o.log(l);
          });
          lines.once('close', resolve);
        }),
    ),
  ).then(() => {});
}
