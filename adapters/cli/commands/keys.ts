import type { Command } from 'commander';
import { ENVIRONMENT_SERVICE, type EnvironmentService } from '../../../core/environment/environment-service.js';
import { CIPHER, type Cipher } from '../../../core/ports/cipher.js';
import { withKernel } from '../admin.js';
import { printTable } from './print-table.js';

/** `hoist keys`: the master keys that wrap the projects' environment data keys (ids only, never material). */
export default function keys(program: Command): void {
  const group = program.command('keys').description('master keys of the environment variable encryption');

  group
    .command('list')
    .description('list master keys: id, created, current, and how many project keys each wraps')
    .option('--json', 'print the keys as JSON')
    .action(async (o: { json?: boolean }) => {
      const { list, usage } = await withKernel(async (k) => ({
        list: await k.get<Cipher>(CIPHER).masterKeys(),
        usage: await k.get<EnvironmentService>(ENVIRONMENT_SERVICE).keyUsage(),
      }));
      const rows = list.map((m) => ({
        id: m.id,
        created_at: m.createdAt?.toISOString() ?? null,
        current: m.current,
        project_keys: usage[m.id] ?? 0,
      }));
      if (o.json) return console.log(JSON.stringify(rows));
      printTable(
        ['id', 'created', 'current', 'project keys'],
        rows.map((r) => [r.id, r.created_at ?? '(configured)', r.current ? 'yes' : '', String(r.project_keys)]),
        'no master keys',
      );
    });

  group
    .command('rotate')
    .description('add a new master key, make it current and re-wrap every project key with it (values keep decrypting)')
    .option('--json', 'print the result as JSON')
    .action(async (o: { json?: boolean }) => {
      const result = await withKernel(async (k) => {
        const cipher = k.get<Cipher>(CIPHER);
        const before = (await cipher.masterKeys()).find((m) => m.current)!.id;
        const current = await cipher.addMasterKey();
        const rewrapped = await k.get<EnvironmentService>(ENVIRONMENT_SERVICE).rewrapAll();
        return { current: current.id, added: current.id !== before, rewrapped, fromConfig: !!k.config.masterKey };
      });
      if (o.json)
        return console.log(
          JSON.stringify({ current: result.current, added: result.added, rewrapped: result.rewrapped }),
        );
      if (!result.added && result.fromConfig) {
        console.log(
          `Master keys come from HOIST_MASTER_KEY: add the new id:key first there (keep the ` +
            `old ones), restart, then run this again to re-wrap.`,
        );
      } else console.log(`Master key ${result.current} is current.`);
      console.log(`Re-wrapped ${result.rewrapped} project key(s) with ${result.current}.`);
    });
}
