import { closeSync, readdirSync, readFileSync } from 'node:fs';

/** O_CLOEXEC, as /proc/<pid>/fdinfo prints a descriptor's flags (octal). */
const O_CLOEXEC = 0o2000000;

/**
 * Closes the descriptors past stdin, stdout and stderr that this process inherited open across exec (whatever
 * started Hoist left them: a terminal's, a supervisor's pipe): every process Hoist starts would inherit them in
 * turn, tenant code included, and bubblewrap passes them on. Hoist's own (Node.js', SQLite's, its sockets') are
 * close-on-exec and stay. Returns those closed (none where /proc is missing).
 */
export function closeInheritedDescriptors(): number[] {
  const closed: number[] = [];
  let names: string[];
  try {
    names = readdirSync('/proc/self/fd');
  } catch {
    return closed;
  }
  for (const name of names) {
    const fd = Number(name);
    if (!(fd > 2)) continue;
    try {
      const flags = /^flags:\s*([0-7]+)/m.exec(readFileSync(`/proc/self/fdinfo/${fd}`, 'utf8'))?.[1];
      if (flags === undefined || (parseInt(flags, 8) & O_CLOEXEC) !== 0) continue;
      closeSync(fd);
      closed.push(fd);
    } catch {
      // Gone meanwhile (the folder readdir held, for one).
    }
  }
  return closed;
}
