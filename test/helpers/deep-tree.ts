import { execFileSync } from 'node:child_process';

/**
 * Makes, below `dir`, a chain of `depth` folders named `aaaaa` (by default deeper than PATH_MAX, 4,096 bytes) and
 * writes `bytes` bytes into a file `f` at its bottom, as a build can: by relative mkdir and chdir (here in a child
 * Node.js process, so that this process's working directory does not move).
 */
export function makeDeepTree(dir: string, o: { depth?: number; bytes?: number } = {}): void {
  const script =
    `const fs = require('node:fs'); process.chdir(${JSON.stringify(dir)});` +
    `for (let i = 0; i < ${o.depth ?? 1400}; i++) { fs.mkdirSync('aaaaa'); process.chdir('aaaaa'); }` +
    `fs.writeFileSync('f', Buffer.alloc(${o.bytes ?? 1}, 1));`;
  execFileSync(process.execPath, ['-e', script], { stdio: 'ignore' });
}
