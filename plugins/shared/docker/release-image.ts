import type Docker from 'dockerode';
import { copyFile, lstat, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { StageError } from '../../../core/errors.js';
import type { Archive } from '../../../core/ports/archive.js';
import type { ReleaseSpec } from '../../../core/ports/deployer.js';
import type { Storage } from '../../../core/ports/storage.js';
import { answers, nextPollMs } from '../release/answers.js';
import { MAX_BYTES } from '../../../core/ports/site-rules.cjs';
import { addSiteRules, SITE_RULE_FILES, type SiteRules } from '../release/site-rules.js';
import { unpackArtifact } from '../release/unpack-artifact.js';
import { TENANT_USER, tenantTmpfs } from './hardening.js';

/** The port a release container answers on (all interfaces of its own network namespace). */
export const RELEASE_PORT = 8080;
/** The non-root user releases run as (the base image's `hoist`; numeric so any base image works). */
export const RELEASE_USER = TENANT_USER;
/** Restarts Docker gives a crashed release before leaving it stopped. */
export const MAX_RESTARTS = 5;

/** The writable scratch space of a release (its root filesystem is read-only), also its HOME: `diskMb` MiB. */
export const releaseTmpfs = (diskMb: number) => ({ '/tmp': tenantTmpfs(diskMb, '1777') });

/** Hoist's runtime scripts of a release (`/hoist` in its image): the static server and the app runner. */
export const RUNTIME_DIR = fileURLToPath(new URL('./runtime/', import.meta.url));
/** The site rules' matcher (`_redirects`, `_headers`), which the static server shares with the edge (in `/hoist`). */
const SITE_RULES = fileURLToPath(new URL('../../../core/ports/site-rules.cjs', import.meta.url));

/** Labels on everything a Docker deployer creates; cleanup only ever touches objects carrying them. */
export function releaseLabels(spec: Pick<ReleaseSpec, 'deploymentId' | 'projectId'>): Record<string, string> {
  return { 'hoist.managed': 'true', 'hoist.deployment': spec.deploymentId, 'hoist.project': spec.projectId };
}

/**
 * The deployments of the running containers labelled `hoist.managed=true` on `docker`, each once, whichever Docker
 * deployer or Hoist started them (packing containers carry no deployment label).
 */
export async function runningReleaseIds(docker: Docker): Promise<string[]> {
  const running = await docker.listContainers({ filters: { label: ['hoist.managed=true'], status: ['running'] } });
  return [...new Set(running.map((c) => c.Labels['hoist.deployment']).filter(Boolean))];
}

/** The image tag and container name of a release. */
export const releaseImageTag = (deploymentId: string) => `hoist-release:${deploymentId}`;
export const releaseContainerName = (deploymentId: string) => `hoist-${deploymentId}`;

/** The container's environment: the release's variables, then what Hoist fixes (heap cap, HOME on the tmpfs). */
export function releaseEnv(spec: ReleaseSpec, memoryMb: number): string[] {
  // The heap cap leaves a quarter of the container's memory to the rest of the process.
  const heap = Math.max(16, Math.floor(memoryMb * 0.75));
  const env: Record<string, string> = {
    ...spec.env,
    NODE_ENV: 'production',
    HOME: '/tmp',
    npm_config_update_notifier: 'false',
    NODE_OPTIONS: `${spec.env.NODE_OPTIONS ?? ''} --max-old-space-size=${heap}`.trim(),
  };
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}

/** What a release's container runs: the static server, or the app's start command behind the relay. */
const releaseCmd = (spec: Pick<ReleaseSpec, 'runtime' | 'startCommand'>) =>
  spec.runtime === 'static'
    ? ['node', '/hoist/entry.cjs', 'static']
    : ['node', '/hoist/entry.cjs', 'node', spec.startCommand ?? ''];

/**
 * The configuration of a release's image that releaseDockerfile sets, for an image committed from a
 * container of the base image holding the same files.
 */
export function releaseImageConfig(spec: ReleaseSpec) {
  return {
    Labels: releaseLabels(spec),
    Cmd: releaseCmd(spec),
    WorkingDir: '/app',
    User: RELEASE_USER,
    Env: [`HOIST_RELEASE=${spec.deploymentId}`],
    ExposedPorts: { [`${RELEASE_PORT}/tcp`]: {} },
  };
}

/** The Dockerfile of a release: the artifact in /app and the runtime scripts in /hoist, on the base image. */
export function releaseDockerfile(spec: ReleaseSpec, baseImage: string): string {
  const labels = Object.entries(releaseLabels(spec)).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  const cmd = releaseCmd(spec);
  return [
    `FROM ${baseImage}`,
    `LABEL ${labels.join(' ')}`,
    'COPY --chown=0:0 hoist /hoist',
    'COPY --chown=0:0 app /app',
    'WORKDIR /app',
    `USER ${RELEASE_USER}`,
    `ENV HOIST_RELEASE=${spec.deploymentId}`,
    `EXPOSE ${RELEASE_PORT}`,
    `CMD ${JSON.stringify(cmd)}`,
    '',
  ].join('\n');
}

/**
 * Lays out `hoist` (the release's `/hoist`, absent): the static server, the app runner and the site rules' matcher
 * they share with the edge; for a static site whose `app` (the artifact, unpacked) holds a `_redirects` or `_headers`
 * file, their rules, checked (StageError `deploy_redirects_invalid`, `deploy_headers_invalid` when refused), in
 * `site-rules.json`.
 */
export async function stageRuntime(hoist: string, app: string, spec: Pick<ReleaseSpec, 'runtime'>): Promise<void> {
  await mkdir(hoist);
  for (const f of ['entry.cjs', 'static-server.cjs']) await copyFile(join(RUNTIME_DIR, f), join(hoist, f));
  await copyFile(SITE_RULES, join(hoist, 'site-rules.cjs'));
  if (spec.runtime !== 'static') return;
  const rules: SiteRules = {};
  for (const name of SITE_RULE_FILES) {
    const file = join(app, name);
    const found = await lstat(file).catch(() => null);
    if (!found?.isFile()) continue;
    // One too large to read is refused unread.
    addSiteRules(rules, name, found.size <= MAX_BYTES ? await readFile(file) : undefined, found.size);
  }
  // What the static server follows (entry.cjs reads it).
  if (rules.redirects || rules.headers) await writeFile(join(hoist, 'site-rules.json'), JSON.stringify(rules));
}

/**
 * Lays out the Docker build context of a release in `dir`: `Dockerfile`, `app/` (the artifact from
 * Storage, unpacked) and `hoist/` (stageRuntime: StageError `deploy_redirects_invalid` or `deploy_headers_invalid`
 * when the site's `_redirects` or `_headers` is refused). Returns the entries.
 */
export async function stageBuildContext(
  dir: string,
  spec: ReleaseSpec,
  baseImage: string,
  deps: { storage: Storage; archive: Archive },
  signal: AbortSignal,
): Promise<string[]> {
  await unpackArtifact(deps, spec.artifactKey, dir, join(dir, 'app'), signal, spec.artifactRoot);
  await stageRuntime(join(dir, 'hoist'), join(dir, 'app'), spec);
  await writeFile(join(dir, 'Dockerfile'), releaseDockerfile(spec, baseImage));
  return ['Dockerfile', 'app', 'hoist'];
}

/**
 * Polls `url` with HTTP GET until it answers. Rejects with the reason when `down()` names one (the
 * container exited or restarted), when `signal` aborts (message `canceled`), or after `timeoutMs`.
 */
export async function waitUntilAnswering(
  url: string,
  timeoutMs: number,
  signal: AbortSignal,
  down: () => Promise<string | null>,
): Promise<void> {
  const begun = Date.now();
  const end = begun + timeoutMs;
  for (;;) {
    if (signal.aborted) throw new Error('canceled');
    if (await answers(url)) return;
    const reason = await down();
    if (reason) throw new Error(reason);
    if (Date.now() > end)
      throw new Error(`did not answer HTTP on port ${RELEASE_PORT} within ${Math.round(timeoutMs / 1000)} s`);
    await new Promise((r) => setTimeout(r, nextPollMs(Date.now() - begun)));
  }
}

/** The `deploy_unhealthy` failure of a release that did not answer: why, and the last lines it printed. */
export function unhealthy(reason: string, lines: string[]): StageError {
  const tail = lines.length ? `Last lines:\n${lines.join('\n')}` : 'It printed nothing.';
  return new StageError('deploy_unhealthy', `The release ${reason}. ${tail}`, { last_lines: lines });
}
