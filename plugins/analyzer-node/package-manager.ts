import type { PackageJson } from './package-json.js';
import { quoted } from './quoted.js';

/** A package manager Hoist knows how to drive. */
export type PackageManagerName = 'npm' | 'pnpm' | 'yarn' | 'bun';

/** The chosen package manager, its lockfile (if any) and the command shapes it uses. */
export interface PackageManager {
  name: PackageManagerName;
  /** The root lockfile that belongs to this manager, or null. */
  lockfile: string | null;
  /** Yarn 2+ (`--immutable` instead of `--frozen-lockfile`). */
  yarnBerry: boolean;
  reason: string;
  warnings: string[];
}

// Checked in this order when several lockfiles are present.
const LOCKFILES: [string, PackageManagerName][] = [
  ['pnpm-lock.yaml', 'pnpm'],
  ['yarn.lock', 'yarn'],
  ['bun.lock', 'bun'],
  ['bun.lockb', 'bun'],
  ['package-lock.json', 'npm'],
  ['npm-shrinkwrap.json', 'npm'],
];

/** Picks the package manager: the `packageManager` field, else the lockfile, else npm. */
export function detectPackageManager(pkg: PackageJson, files: string[]): PackageManager {
  const warnings: string[] = [];
  const present = LOCKFILES.filter(([file]) => files.includes(file));
  const lockfileOf = (name: PackageManagerName) => present.find(([, pm]) => pm === name)?.[0] ?? null;
  const field = /^(npm|pnpm|yarn|bun)@(\d+)/.exec(pkg.packageManager ?? '');
  if (pkg.packageManager && !field)
    warnings.push(
      `package.json "packageManager" is "${quoted(pkg.packageManager)}", which Hoist does not know; it is ignored`,
    );
  if (field) {
    const name = field[1] as PackageManagerName;
    const lockfile = lockfileOf(name);
    const others = present.filter(([, pm]) => pm !== name).map(([f]) => f);
    if (others.length)
      warnings.push(
        `package.json "packageManager" names ${name} but ${others.join(', ')} is also present; ${name} is used`,
      );
    return {
      name,
      lockfile,
      yarnBerry: name === 'yarn' && Number(field[2]) >= 2,
      reason: `"packageManager": "${quoted(pkg.packageManager!)}" in package.json`,
      warnings,
    };
  }
  if (present.length) {
    const [lockfile, name] = present[0];
    const others = present
      .slice(1)
      .filter(([, pm]) => pm !== name)
      .map(([f]) => f);
    if (others.length)
      warnings.push(
        `several lockfiles are present (${present.map(([f]) => f).join(', ')}); ${lockfile} wins and ${name} is used`,
      );
    return {
      name,
      lockfile,
      yarnBerry: name === 'yarn' && files.includes('.yarnrc.yml'),
      reason: `${lockfile} at the root`,
      warnings,
    };
  }
  return {
    name: 'npm',
    lockfile: null,
    yarnBerry: false,
    reason: 'no packageManager field and no lockfile: npm is the default',
    warnings,
  };
}

/** The command that runs a package.json script with `pm` (`npm run build`, `npm start`). */
export function runScript(pm: PackageManager, script: string): string {
  return script === 'start' && pm.name !== 'bun' ? `${pm.name} start` : `${pm.name} run ${script}`;
}

/**
 * The command that runs an installed package binary with `pm`, never downloading it (`npx --no-install vite build`).
 */
export function execBin(pm: PackageManager, command: string): string {
  switch (pm.name) {
    case 'npm':
      return `npx --no-install ${command}`;
    case 'pnpm':
      return `pnpm exec ${command}`;
    case 'yarn':
      return `yarn ${command}`;
    case 'bun':
      return `bun x ${command}`;
  }
}
