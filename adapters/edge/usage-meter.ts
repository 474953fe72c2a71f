import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { hourOf, USAGE_COLUMNS, USAGE_SERVICE, type UsageCount } from '../../core/usage/usage-service.js';
import type { Kernel } from '../kernel.js';

const SENT = Symbol('hoist.sent');
/** A socket with what it had written when its last answer ended. */
type Marked = Socket & { [SENT]?: number };
const COUNTED = Symbol('hoist.counted');
const PROJECT = Symbol('hoist.project');
/** An answer: the project it serves (servedFor), and a mark once it has been counted. */
type Watched = ServerResponse & { [COUNTED]?: true; [PROJECT]?: string };

/**
 * Says that `res` answers for project `projectId`, as the edge found it from the Host (the hot path, or fastify's
 * route): the meter counts it for that project, with no lookup of its own. An answer never said so counts for nothing.
 */
export function servedFor(res: ServerResponse, projectId: string): void {
  (res as Watched)[PROJECT] = projectId;
}

/** Adds one answer of `status` and `bytes` to `c`. */
function count(c: UsageCount, status: number, bytes: number): void {
  c.requests++;
  c.bytes += bytes;
  if (status >= 500) c.status5xx++;
  else if (status >= 400) c.status4xx++;
  else if (status >= 300) c.status3xx++;
  else if (status >= 200) c.status2xx++;
}

/**
 * Counts what this edge process answers for each project (requests by status class, bytes written, headers
 * included), in memory, and adds it to the stored usage every `edgeUsageFlushSeconds` and when it stops. An answer
 * counts when it ends (sent, or cut off), for the project `servedFor` gave it; a Host that names none counts for
 * nothing. Bytes are what the connection wrote since its previous answer ended, taken as the answer finishes and
 * before node:http hands the connection to the next answer: the answer of a request pipelined behind it (which may
 * name another project) is never counted with it. A flush that fails keeps its counts for the next one; a process
 * that dies loses at most one interval's.
 */
export function createUsageMeter(kernel: Kernel) {
  const usage = kernel.get(USAGE_SERVICE);
  let counts = new Map<string, UsageCount>();
  const counted = (req: IncomingMessage, res: Watched) => {
    // Every answer moves the connection's mark, so the next one counts only its own bytes.
    const socket = req.socket as Marked;
    const written = socket.bytesWritten;
    const bytes = written - (socket[SENT] ?? 0);
    socket[SENT] = written;
    const projectId = res[PROJECT];
    if (!projectId) return;
    const hour = hourOf(Date.now());
    const key = `${projectId}:${hour}`;
    let c = counts.get(key);
    if (!c) {
      c = { projectId, hour, requests: 0, bytes: 0, status2xx: 0, status3xx: 0, status4xx: 0, status5xx: 0 };
      counts.set(key, c);
    }
    count(c, res.statusCode, bytes);
  };
  // One listener for every answer (no closure made per request): the answer knows its request.
  function ended(this: Watched) {
    if (this[COUNTED]) return;
    this[COUNTED] = true;
    counted(this.req, this);
  }
  let flushing: Promise<void> = Promise.resolve();
  const flush = () =>
    (flushing = flushing.then(async () => {
      if (!counts.size) return;
      const taken = counts;
      counts = new Map();
      await usage.record([...taken.values()]).catch((err: Error) => {
        kernel.log.warn(
          { reason: err.message, projects: taken.size },
          'edge usage not recorded yet; kept for the next flush',
        );
        for (const [key, c] of taken) {
          const now = counts.get(key);
          if (!now) counts.set(key, c);
          else for (const k of USAGE_COLUMNS) now[k] += c[k];
        }
      });
    }));
  const timer = setInterval(() => void flush(), kernel.config.edgeUsageFlushSeconds * 1000);
  timer.unref();
  return {
    /**
     * Counts `res` once it has ended: at its `finish`, ahead of node:http's own listener, which writes the answer of
     * the next pipelined request on the connection; or at its `close` when it is cut off before it finishes.
     */
    watch(res: ServerResponse): void {
      // Plain listeners (no once wrapper made per answer): `ended` counts an answer once.
      res.prependListener('finish', ended);
      res.on('close', ended);
    },
    /** Adds what was counted to the stored usage now. */
    flush,
    /** Stops the timer and flushes once more. */
    async stop(): Promise<void> {
      clearInterval(timer);
      await flush();
    },
  };
}
