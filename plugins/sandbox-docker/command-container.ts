import type Docker from 'dockerode';
import { posix } from 'node:path';
import { HOME_DIR, SANDBOX_WORKSPACE, SandboxError, type SandboxRun } from '../../core/ports/sandbox.js';
import { TENANT_USER, tenantHostConfig, tenantTmpfs, type TenantLimits } from '../shared/docker/hardening.js';
import type { Box } from './box.js';

/** What the engine's image brings that a command's container must know. */
export interface ImageFacts {
  image: string;
  /** Names the image's environment sets (unset where the spec does not name them). */
  env: string[];
  /** The image's PATH, the default of the command's. */
  path: string;
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The container's first process, before `/bin/sh -c <command>` (its `$1`): unsets what the image
 * and Docker add to the environment (`HOSTNAME`, the image's `NODE_ENV` ...), waits for a first line
 * on stdin (sent once the container is running and its address known), then leaves a watcher that
 * kills every process of the container (`kill -9 -1`) when stdin closes: the Hoist process holding
 * it attached is gone. The command gets /dev/null as stdin.
 */
export function startScript(unset: string[]): string {
  const names = unset.filter((k) => IDENTIFIER.test(k));
  return (
    (names.length ? `unset ${names.join(' ')}; ` : '') +
    'exec 3<&0 </dev/null; read _ <&3 || exit 125; (read _ <&3; kill -9 -1) & exec 3<&-; exec /bin/sh -c "$1"'
  );
}

/**
 * Fills the box's volumes from the host and creates (does not start) the container of one command:
 * the tenant user, `/bin/sh -c command` in /app/<cwd> behind startScript, exactly the spec's
 * environment plus HOME and PATH defaults, the hardened HostConfig with `limits`, tmpfs /tmp (and
 * HOME unless the spec gives a folder), docker-init as PID 1, the volumes, `network`, no log file
 * (output is read from the attached stream), the box's labels. Throws SandboxError.
 */
export async function createCommandContainer(
  docker: Docker,
  box: Box,
  facts: ImageFacts,
  spec: Pick<SandboxRun, 'command' | 'workspace' | 'cwd' | 'home' | 'env'>,
  o: { kind: 'run' | 'serve'; network: string; limits: TenantLimits; readOnlyWorkspace: boolean; port?: number },
): Promise<Docker.Container> {
  const cwd = posix.join(SANDBOX_WORKSPACE, spec.cwd ?? '.');
  if (cwd !== SANDBOX_WORKSPACE && !cwd.startsWith(`${SANDBOX_WORKSPACE}/`))
    throw new SandboxError(`the working directory ${JSON.stringify(spec.cwd)} is outside the workspace`);
  try {
    const mounts = await box.fill(facts.image, spec.workspace, spec.home, o.readOnlyWorkspace);
    const env: Record<string, string> = { HOME: HOME_DIR, PATH: facts.path, ...spec.env };
    const tmpfs: Record<string, string> = { '/tmp': tenantTmpfs(o.limits.diskMb, '1777') };
    if (!spec.home) tmpfs[HOME_DIR] = tenantTmpfs(o.limits.diskMb, '0700');
    return await docker.createContainer({
      name: box.name,
      Image: facts.image,
      Entrypoint: [''],
      Cmd: ['/bin/sh', '-c', startScript([...facts.env, 'HOSTNAME'].filter((k) => !(k in env))), 'sh', spec.command],
      User: TENANT_USER,
      WorkingDir: cwd,
      Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
      Labels: box.labels(o.kind),
      OpenStdin: true,
      StdinOnce: true,
      AttachStdin: true,
      AttachStdout: true,
      AttachStderr: true,
      ...(o.port ? { ExposedPorts: { [`${o.port}/tcp`]: {} } } : {}),
      HostConfig: {
        ...tenantHostConfig(o.limits, tmpfs),
        Init: true,
        Mounts: mounts,
        NetworkMode: o.network,
        LogConfig: { Type: 'none', Config: {} },
      },
    });
  } catch (err) {
    throw new SandboxError(
      `sandbox-docker could not set up the ${o.kind === 'run' ? 'run' : 'service'}: ${(err as Error).message}`,
      { cause: err },
    );
  }
}
