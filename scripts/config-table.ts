// Prints the README's configuration table, generated from config/schema.ts:
//   node --import tsx scripts/config-table.ts           print it
//   node --import tsx scripts/config-table.ts --write   replace it in README.md, between the markers
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { settings, type Setting } from '../config/schema.js';

export const START = '<!-- config:start -->';
export const END = '<!-- config:end -->';

const cell = (s: string) => s.replace(/\|/g, '\\|');
const text = (s: string) => cell(s).replace(/</g, '&lt;').replace(/>/g, '&gt;');

/** The configuration table in Markdown: one row per setting of `config/schema.ts`. */
export function configTable(): string {
  const rows = (Object.entries(settings) as [string, Setting][]).map(([key, s]) => {
    const range =
      s.min !== undefined
        ? s.max !== undefined
          ? ` From ${s.min} to ${s.max}.`
          : ` At least ${s.min}.`
        : s.max !== undefined
          ? ` At most ${s.max}.`
          : '';
    const oneOf = s.oneOf ? ` One of ${s.oneOf.map((v) => `\`${v}\``).join(', ')}.` : '';
    const bytes = s.minBytes !== undefined ? ` At least ${s.minBytes} bytes.` : '';
    const def = s.default === undefined ? '' : `\`${s.default}\``;
    return `| \`${s.env}\` | \`${key}\` | ${s.type} | ${cell(def)} | ${text(s.doc)}${oneOf}${range}${bytes} |`;
  });
  return [
    '| Environment variable | Config file key | Type | Default | Meaning |',
    '|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

/** The table currently between the markers of `readme`, or null when the markers are missing. */
export function tableIn(readme: string): string | null {
  const from = readme.indexOf(START);
  const to = readme.indexOf(END);
  return from < 0 || to < from ? null : readme.slice(from + START.length, to).trim();
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  if (process.argv.includes('--write')) {
    const readme = readFileSync('README.md', 'utf8');
    if (tableIn(readme) === null) throw new Error(`README.md has no ${START} ... ${END} markers`);
    writeFileSync(
      'README.md',
      readme.replace(/<!-- config:start -->[\s\S]*<!-- config:end -->/, () => `${START}\n${configTable()}\n${END}`),
    );
  } else console.log(configTable());
}
