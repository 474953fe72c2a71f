import type Docker from 'dockerode';
import type { ReleaseLogLine } from '../../../core/ports/deployer.js';
import { engineStatus } from './connection.js';
import { releaseContainerName } from './release-image.js';

/** The most lines one read of a release's log answers (the Deployer port's bound). */
const LIMIT_MAX = 1000;
/** The longest line answered, in characters; a longer one is cut there, with `…` (as deployer-local keeps them). */
const LINE_MAX = 2000;
/** A deployment id as Hoist makes them; anything else names no release container. */
const DEPLOYMENT_ID = /^[\w-]{1,64}$/;
const NEWLINE = 0x0a;
const SPACE = 0x20;

/**
 * The messages of a container's log as the engine sends them. Without a TTY they come multiplexed: frames of an
 * 8-byte header (stream, 3 zero bytes, big-endian length), one frame a message; with one, as plain text (a message a
 * line). Bytes: a message the engine split (over 16 KiB) may be split within a character.
 */
function logMessages(raw: Buffer): Buffer[] {
  const frames: Buffer[] = [];
  let at = 0;
  while (at + 8 <= raw.length && raw[at] <= 2 && raw.readUIntBE(at + 1, 3) === 0) {
    const size = raw.readUInt32BE(at + 4);
    frames.push(raw.subarray(at + 8, at + 8 + size));
    at += 8 + size;
  }
  if (at > 0) return frames;
  const lines: Buffer[] = [];
  for (let from = 0; from < raw.length;) {
    const nl = raw.indexOf(NEWLINE, from);
    const to = nl === -1 ? raw.length : nl + 1;
    lines.push(raw.subarray(from, to));
    from = to;
  }
  return lines;
}

/** A line cut at LINE_MAX characters, with `…`. */
const cut = (line: string) => (line.length > LINE_MAX ? `${line.slice(0, LINE_MAX)}…` : line);

/** The last `n` lines (at most 1,000) a container wrote to stdout and stderr, in order, without the empty ones. */
export async function lastLogLines(container: Docker.Container, n: number): Promise<string[]> {
  return ((await containerLogLines(container, n)) ?? []).map((l) => l.text).filter((t) => t.length > 0);
}

/**
 * The last `limit` lines (1 to 1,000) a container wrote to stdout and stderr, oldest first, each with when the engine
 * got it (its RFC 3339 time with nanoseconds, as an ISO 8601 one with milliseconds); null when there is no such
 * container. Carriage returns are dropped and lines cut at 2,000 characters with `…`; empty lines are kept, not the
 * empty end after the last newline. A line the engine kept in pieces (over 16 KiB) is joined again; the engine
 * counts pieces in `tail`, so a log with such lines answers fewer than `limit` lines, and its first may be the end
 * of one.
 */
export async function containerLogLines(container: Docker.Container, limit: number): Promise<ReleaseLogLine[] | null> {
  const tail = Math.min(LIMIT_MAX, Math.max(1, Math.floor(limit) || 1));
  let raw: Buffer;
  try {
    raw = (await container.logs({
      stdout: true,
      stderr: true,
      tail,
      timestamps: true,
      follow: false,
    })) as unknown as Buffer;
  } catch (err) {
    if (engineStatus(err) === 404) return null;
    throw err;
  }
  const lines: ReleaseLogLine[] = [];
  /** The line being joined from the pieces of a message the engine split, until the piece that ends it. */
  let open: { at: string; pieces: Buffer[] } | null = null;
  const close = (line: { at: string; pieces: Buffer[] }) => {
    const text = Buffer.concat(line.pieces).toString('utf8').replace(/\r/g, '');
    lines.push({ at: line.at, text: cut(text) });
  };
  for (const message of logMessages(raw)) {
    // `<RFC 3339 time with nanoseconds> <text>`: every piece of a split message has one (the message's).
    const space = message.indexOf(SPACE);
    const time = space > 0 ? new Date(message.subarray(0, space).toString('latin1')) : null;
    const dated = time !== null && !Number.isNaN(time.getTime());
    const text = dated ? message.subarray(space + 1) : message;
    const ends = text.at(-1) === NEWLINE;
    open ??= { at: dated ? time.toISOString() : (lines.at(-1)?.at ?? new Date().toISOString()), pieces: [] };
    open.pieces.push(ends ? text.subarray(0, -1) : text);
    if (ends) {
      close(open);
      open = null;
    }
  }
  // The last message ended without a newline (the app printed no more, or has yet to end the line).
  if (open) close(open);
  return lines.slice(-tail);
}

/**
 * What the Docker deployers answer to Deployer.logs: the log of release `deploymentId`'s container (named
 * releaseContainerName, labelled with the deployment), the engine's own (json-file, kept across the container's
 * restarts until it is removed); null when the id is not one, when there is no such container, and for a static
 * release (its container runs Hoist's static server, which prints nothing of the site's).
 */
export async function releaseLogLines(
  docker: Docker,
  deploymentId: string,
  limit: number,
): Promise<ReleaseLogLine[] | null> {
  if (!DEPLOYMENT_ID.test(deploymentId)) return null;
  const container = docker.getContainer(releaseContainerName(deploymentId));
  let info: Docker.ContainerInspectInfo;
  try {
    info = await container.inspect();
  } catch (err) {
    if (engineStatus(err) === 404) return null;
    throw err;
  }
  // Not a release's container (another Hoist container whose name this id completes, a packing container).
  if (info.Config.Labels?.['hoist.deployment'] !== deploymentId) return null;
  const cmd = info.Config.Cmd ?? [];
  if (cmd[0] === 'node' && cmd[1] === '/hoist/entry.cjs' && cmd[2] === 'static') return null;
  return containerLogLines(container, limit);
}
