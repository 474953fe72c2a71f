/** Prints rows as aligned columns under upper-case headers, or `empty` when there are no rows. */
export function printTable(headers: string[], rows: string[][], empty: string): void {
  if (!rows.length) {
    console.log(empty);
    return;
  }
  const all = [headers.map((h) => h.toUpperCase()), ...rows];
  const widths = headers.map((_, i) => Math.max(...all.map((r) => r[i].length)));
  for (const r of all)
    console.log(
      r
        .map((cell, i) => cell.padEnd(widths[i]))
        .join('  ')
        .trimEnd(),
    );
}
