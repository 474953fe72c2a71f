import type { PackageManager } from './package-manager.js';

/** An install command (null: nothing to install) and why. */
export interface InstallChoice {
  command: string | null;
  reason: string;
}

/**
 * The install command: the project setting, else none when node_modules is committed, else the
 * package manager's lockfile-respecting install (a frozen install only when its lockfile exists,
 * since pnpm, yarn and bun refuse a frozen install without one).
 */
export function chooseInstallCommand(pm: PackageManager, files: string[], setting: string | undefined): InstallChoice {
  if (setting) return { command: setting, reason: 'project setting install_command' };
  if (files.some((f) => f.startsWith('node_modules/')))
    return { command: null, reason: 'committed node_modules is used as is' };
  const locked = pm.lockfile !== null;
  const why = locked
    ? `${pm.lockfile} pins the dependencies`
    : `no ${pm.name} lockfile, so dependencies are resolved afresh`;
  switch (pm.name) {
    case 'npm':
      return { command: `npm ${locked ? 'ci' : 'install'} --no-audit --no-fund`, reason: why };
    case 'yarn':
      return {
        command: locked ? `yarn install ${pm.yarnBerry ? '--immutable' : '--frozen-lockfile'}` : 'yarn install',
        reason: why,
      };
    default:
      return { command: locked ? `${pm.name} install --frozen-lockfile` : `${pm.name} install`, reason: why };
  }
}
