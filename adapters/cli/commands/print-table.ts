import type { Command } from 'commander';
import type { HoistClient } from '../../../client/hoist-client.js';
import { projectAction } from '../remote/remote-action.js';
import { printable, printableText } from '../remote/terminal.js';

/**
 * Prints rows as aligned columns under upper-case headers, or `empty` when there are no rows; each line after `indent`.
 * Cells are what servers sent (names a teammate chose, a webhook endpoint's answer...): `printable`, so none can drive
 * the terminal or break a row.
 */
export function printTable(headers: string[], rows: string[][], empty: string, indent = ''): void {
  if (!rows.length) {
    console.log(printableText(empty));
    return;
  }
  const all = [headers.map((h) => h.toUpperCase()), ...rows.map((r) => r.map((cell) => printable(String(cell))))];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  for (const r of all)
    console.log(
      indent +
        r
          .map((cell, i) => cell.padEnd(widths[i]))
          .join('  ')
          .trimEnd(),
    );
}

/**
 * Adds `ls` to `group`: what `list` finds of the project, as JSON with --json, else a table of `headers` with a row
 * per item (`no <none> on <project>` when there is none).
 */
export function projectList<T>(
  group: Command,
  description: string,
  {
    list,
    headers,
    row,
    none,
  }: {
    list: (client: HoistClient, projectId: string) => Promise<T[]>;
    headers: string[];
    row: (item: T) => string[];
    none: string;
  },
): void {
  projectAction(group.command('ls').description(description), async (client, project, o) => {
    const items = await list(client, project.id);
    if (o.json) console.log(JSON.stringify(items));
    else printTable(headers, items.map(row), `no ${none} on ${project.name}`);
  });
}
