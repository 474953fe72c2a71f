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

/** A Docker Engine API client for `endpoint`; dockerode (large) loads only when a plugin asks for one. */
export async function dockerClient(endpoint: string): Promise<Docker> {
  const { default: Dockerode } = await import('dockerode');
  return new Dockerode(dockerConnection(endpoint));
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
