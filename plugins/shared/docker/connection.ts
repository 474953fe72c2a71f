import type Docker from 'dockerode';

/**
 * Connection options of the Docker Engine API at `endpoint`: a unix socket (`unix:///path` or a path) or
 * `tcp://host:port`.
 */
export function dockerConnection(endpoint: string): Docker.DockerOptions {
  if (endpoint.startsWith('/')) return { socketPath: endpoint };
  const url = new URL(endpoint);
  if (url.protocol === 'unix:') return { socketPath: url.pathname };
  if (url.protocol === 'tcp:' || url.protocol === 'http:')
    return { host: url.hostname, port: Number(url.port || 2375), protocol: 'http' };
  throw new Error(`dockerHost ${JSON.stringify(endpoint)} is neither unix:///path nor tcp://host:port`);
}

/** How long the Docker engine has to answer a call, ms (see withDeadlines). */
export interface EngineDeadlines {
  /** Any call but those below: ping, inspect, list, create, start, stop, kill, remove, networks, volumes... */
  callMs: number;
  /** A call that carries a release's or a workspace's files: putArchive, commit. */
  transferMs: number;
}

/**
 * 30 s for a call, 120 s for a transfer (an artifact of a few hundred MiB put into a container, or committed, on a busy
 * disk). A healthy engine answers a call in milliseconds; one that takes longer is wedged, and the stage fails.
 */
export const ENGINE_DEADLINES: EngineDeadlines = { callMs: 30_000, transferMs: 120_000 };

/**
 * A Docker Engine API client for `endpoint` whose calls have `deadlines` (withDeadlines); dockerode (large) loads only
 * when a plugin asks for one.
 */
export async function dockerClient(endpoint: string, deadlines = ENGINE_DEADLINES): Promise<Docker> {
  const { default: Dockerode } = await import('dockerode');
  return withDeadlines(new Dockerode(dockerConnection(endpoint)), deadlines);
}

/**
 * Gives every call `docker` makes a deadline, so that a wedged engine fails it instead of hanging it: a call answered
 * in one piece must be answered whole within `callMs` (`transferMs` for putArchive and commit); a streaming one
 * (events, attach, getArchive, logs that follow) must begin its answer within `callMs`, then lasts as long as it
 * flows (it ends with its container); `wait` has none (it answers when its container ends). A call past its deadline
 * is aborted and rejects with an Error naming it. An `abortSignal` the caller passes still aborts it too.
 */
export function withDeadlines(docker: Docker, deadlines: EngineDeadlines): Docker {
  const modem = docker.modem;
  const dial = modem.dial.bind(modem);
  // At dial, where every dockerode call passes: dockerode 5 drops the abortSignal of some (image and network inspect).
  modem.dial = (options, callback) => {
    const path = options.path.split('?')[0];
    if (/\/wait$/.test(path)) return dial(options, callback);
    const transfer = (options.method === 'PUT' && /\/archive$/.test(path)) || path === '/commit';
    const ms = transfer ? deadlines.transferMs : deadlines.callMs;
    const call = `${options.method ?? 'GET'} ${path.replace(/\b([0-9a-f]{12})[0-9a-f]{52}\b/g, '$1')}`;
    const deadline = new AbortController();
    let answered = false;
    const answer: NonNullable<typeof callback> = (err, data) => {
      // A stream that comes after the deadline is nobody's.
      if (answered) return void (data as { destroy?(): void } | null)?.destroy?.();
      answered = true;
      clearTimeout(timer);
      callback?.(err, data);
    };
    const timer = setTimeout(() => {
      const err = new Error(`the Docker engine did not answer \`${call}\` within ${ms / 1000} s`);
      deadline.abort(err);
      answer(err, null);
    }, ms);
    const signal = options.abortSignal ? AbortSignal.any([options.abortSignal, deadline.signal]) : deadline.signal;
    dial({ ...options, abortSignal: signal }, answer);
  };
  return docker;
}

/** True when `endpoint` is a unix socket, i.e. the engine runs on this machine. */
export const isLocalEngine = (endpoint: string) => endpoint.startsWith('/') || endpoint.startsWith('unix:');

/** The HTTP status of a Docker Engine API error (404 missing, 409 conflict ...), if it has one. */
export const engineStatus = (err: unknown): number | undefined => (err as { statusCode?: number }).statusCode;

/**
 * Starts `container`; one the engine finds running already counts as started, which is what was asked. The engine
 * answers a second start 304, and under load it once refused a first one with its runtime's "cannot start an
 * already running container" (a race of its own, seen in CI on the sandbox's presence container).
 */
export async function startContainer(container: Pick<Docker.Container, 'start'>): Promise<void> {
  await container.start().catch((err: unknown) => {
    if (engineStatus(err) === 304 || /already running/.test((err as Error)?.message ?? '')) return;
    throw err;
  });
}
