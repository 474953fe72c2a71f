import type { Command } from 'commander';
import { randomBytes } from 'node:crypto';
import { invalid } from '../../../core/errors.js';

/** The secrets Hoist reads from its environment that this command makes, each from crypto.randomBytes. */
export const generators: Record<string, () => string> = {
  HOIST_JWT_SECRET: () => randomBytes(48).toString('base64url'),
  // One master key, named like the ones of the key file, so a later one for a rotation never takes its id.
  HOIST_MASTER_KEY: () =>
    `mk-${new Date().toISOString().slice(0, 10).replace(/-/g, '')}-${randomBytes(4).toString('hex')}:${randomBytes(32).toString('base64')}`,
  HOIST_PULUMI_PASSPHRASE: () => randomBytes(32).toString('base64url'),
  HOIST_METRICS_TOKEN: () => randomBytes(32).toString('base64url'),
};

const DEFAULT = ['HOIST_JWT_SECRET', 'HOIST_MASTER_KEY'];

/**
 * `hoist secrets [NAME...]`: prints fresh random secrets, `export NAME=value` lines for a shell, or
 * with `--env` `NAME=value` lines for an .env file (`npx hoist secrets --env >> .env`). Reads no
 * configuration, so it works while a bad secret keeps Hoist from starting.
 */
export default function secrets(program: Command): void {
  program
    .command('secrets')
    .description(
      `print new random secrets: ${DEFAULT.join(' and ')} unless others are named ` +
        `(${Object.keys(generators).join(', ')})`,
    )
    .argument('[names...]', 'the variables to generate')
    .option('--env', 'print NAME=value lines for an .env file (default: export lines for a shell)')
    .action((names: string[], o: { env?: boolean }) => {
      const wanted = names.length ? names : DEFAULT;
      for (const name of wanted) {
        if (!generators[name]) throw invalid(`Unknown secret ${name}; known: ${Object.keys(generators).join(', ')}`);
      }
      for (const name of new Set(wanted)) console.log(`${o.env ? '' : 'export '}${name}=${generators[name]()}`);
    });
}
