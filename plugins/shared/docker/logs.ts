import type Docker from 'dockerode';

/**
 * The last `n` lines a container wrote to stdout and stderr, in order. Without a TTY the engine
 * sends them multiplexed: frames of an 8-byte header (stream, 3 zero bytes, big-endian length).
 */
export async function lastLogLines(container: Docker.Container, n: number): Promise<string[]> {
  const raw = (await container.logs({ stdout: true, stderr: true, tail: n, follow: false })) as unknown as Buffer;
  const parts: Buffer[] = [];
  let at = 0;
  while (at + 8 <= raw.length && raw[at] <= 2 && raw.readUIntBE(at + 1, 3) === 0) {
    const size = raw.readUInt32BE(at + 4);
    parts.push(raw.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  const text = (at === 0 ? raw : Buffer.concat(parts)).toString('utf8');
  return text
    .split('\n')
    .map((l) => (l.length > 2000 ? `${l.slice(0, 2000)}…` : l))
    .filter((l) => l.length > 0)
    .slice(-n);
}
