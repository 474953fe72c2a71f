import { Option, type Command } from 'commander';
import { usage as usageError } from '../remote/cli-error.js';
import { projectAction, type ProjectOptions } from '../remote/remote-action.js';
import { printTable } from './print-table.js';

/** The most days the API keeps. */
const DAYS_MAX = 90;

/** Bytes as a person reads them: B, KB, MB, GB (powers of 1,000). */
export function humanBytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (n >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(n < 10 ? 1 : 0)} ${units[i]}`;
}

/** `hoist usage`: what the edge served for a project (requests by status class, bytes), by day or hour. */
export default function usage(program: Command): void {
  projectAction<ProjectOptions & { days: string; hourly?: boolean }, []>(
    program
      .command('usage')
      .description('print what the edge served for a project: requests by status class and bytes, per UTC day')
      .addOption(new Option('--days <n>', `how many days back, today included (1 to ${DAYS_MAX})`).default('7'))
      .option('--hourly', 'per hour instead (7 days at most)'),
    async (client, project, o) => {
      const u = await client.usage(project.id, { days: Number(o.days), granularity: o.hourly ? 'hour' : 'day' });
      if (o.json) return console.log(JSON.stringify(u));
      const row = (label: string, f: typeof u.totals) => [
        label,
        String(f.requests),
        String(f.status['2xx']),
        String(f.status['3xx']),
        String(f.status['4xx']),
        String(f.status['5xx']),
        humanBytes(f.bytes),
      ];
      printTable(
        [o.hourly ? 'hour (UTC)' : 'day (UTC)', 'requests', '2xx', '3xx', '4xx', '5xx', 'sent'],
        [
          ...u.buckets.map((b) => row(o.hourly ? b.start.slice(0, 16) : b.start.slice(0, 10), b)),
          row('total', u.totals),
        ],
        `no usage of ${project.name}`,
      );
    },
    (o) => {
      const days = Number(o.days);
      if (!Number.isInteger(days) || days < 1 || days > DAYS_MAX)
        throw usageError(`--days must be a whole number from 1 to ${DAYS_MAX}`);
      if (o.hourly && days > 7) throw usageError('--hourly covers 7 days at most');
    },
  );
}
