/** Whether stdout is a terminal a person watches: live views, spinners and colours only then. */
export const interactive = () => Boolean(process.stdout.isTTY);

/** Colours only on a terminal, and never with NO_COLOR set (https://no-color.org). */
export const useColor = () => interactive() && !process.env.NO_COLOR;

const paint = (code: number) => (s: string) => (useColor() ? `\x1b[${code}m${s}\x1b[0m` : s);
export const green = paint(32);
export const red = paint(31);
export const yellow = paint(33);
export const dim = paint(2);
export const bold = paint(1);

/**
 * A line a server sent (a build log, an app's output) made safe to print on a terminal: escape sequences (colours,
 * cursor moves, title or clipboard writes) and other control characters but tabs are left out, so what a build or an
 * app printed cannot drive the terminal of whoever reads it.
 */
export function printable(line: string): string {
  return (
    line
      // CSI (ESC [ ... final byte), OSC (ESC ] ... BEL or ESC \) and the other escapes, then what is left.
      .replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -/]*[0-~]/g, '')
      .replace(/[\x00-\x08\x0a-\x1f\x7f-\x9f]/g, '')
  );
}

/** Text a server sent, of one or more lines, made safe to print as `printable` makes each of its lines. */
export const printableText = (text: string): string => text.split('\n').map(printable).join('\n');

/**
 * A copy of what a server answered (an operation, a project, a domain...) whose every string is `printableText`, to
 * show a person: names, URLs, messages, statuses and all, since a server, a teammate who named a project, a build
 * or an app may have put escape sequences in any of them. JSON output keeps the answer as it came.
 */
export function printableDeep<T>(value: T): T {
  if (typeof value === 'string') return printableText(value) as T;
  if (Array.isArray(value)) return value.map(printableDeep) as T;
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, printableDeep(v)])) as T;
  return value;
}

/** 1234567 → "1.2 MB" (decimal units, as the limits are written). */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ['kB', 'MB', 'GB'];
  let v = n;
  let u = -1;
  while (v >= 1000 && u < units.length - 1) {
    v /= 1000;
    u++;
  }
  return `${v >= 100 ? Math.round(v) : v.toFixed(1)} ${units[u]}`;
}

/** A bar of `width` cells, `fraction` (0..1) of them full. */
export function bar(fraction: number, width = 24): string {
  const full = Math.max(0, Math.min(width, Math.round(fraction * width)));
  return '█'.repeat(full) + '░'.repeat(width - full);
}
