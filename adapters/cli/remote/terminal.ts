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
