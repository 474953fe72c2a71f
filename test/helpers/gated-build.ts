import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { zipOf } from './live.js';

/**
 * The file a gate creates in a build's workspace: tenant code waits for it in its own working
 * directory (`fs.existsSync('.gate-open')`), since the sandbox shows it no other host path.
 */
export const GATE_FILE = '.gate-open';

/**
 * Shell words that wait up to `seconds` for {@link GATE_FILE} in the working directory, then go on
 * either way: a command that fails until a gate opens, e.g. `${waitForGate()} test -f .gate-open && node build.js`,
 * without racing the gate's first write into a new workspace.
 */
export const waitForGate = (seconds = 3) =>
  `i=0; while [ ! -f ${GATE_FILE} ] && [ $i -lt ${seconds * 10} ]; do sleep 0.1; i=$((i+1)); done;`;

/**
 * A gate that builds wait for inside their sandbox. Each build's source tree is a workspace of its
 * own on the host (`<dataDir>/work/build-<operation id>-XXXX/src`); the gate knows the builds it
 * holds by `id`, which their `script` file carries.
 */
export interface WorkspaceGate {
  /** Unique to this gate: put it in the script (a comment will do) and, to find its processes, in the command line. */
  readonly id: string;
  /**
   * Writes {@link GATE_FILE} (mode 0644, readable by the sandbox's uid) into every workspace whose
   * script carries `id`, now and every 50 ms after, so that every waiting and every later build
   * passes. The timer is unref'd: it never keeps the test process alive.
   */
  open(): void;
  /** Stops writing the gate file into new workspaces. */
  close(): void;
}

/**
 * A gate on the build workspaces under `dataDir` whose file `script` (relative to the workspace) contains the gate's
 * id.
 */
export function workspaceGate(dataDir: string, script: string, id = `gate-${randomUUID()}`): WorkspaceGate {
  let timer: NodeJS.Timeout | null = null;
  const sweep = () => {
    const work = join(dataDir, 'work');
    let dirs: string[];
    try {
      dirs = readdirSync(work);
    } catch {
      return;
    }
    for (const d of dirs) {
      const src = join(work, d, 'src');
      try {
        // Written once per workspace: never into a tree Hoist is already removing after its build.
        if (existsSync(join(src, GATE_FILE)) || !readFileSync(join(src, script), 'utf8').includes(id)) continue;
        writeFileSync(join(src, GATE_FILE), 'open', { mode: 0o644 });
      } catch {
        // not this project's build, not unpacked yet, or already removed
      }
    }
  };
  return {
    id,
    open() {
      sweep();
      timer ??= setInterval(sweep, 50).unref();
    },
    close() {
      if (timer) clearInterval(timer);
      timer = null;
    },
  };
}

/**
 * Host pids of the processes whose whole command line starts with `prefix` (e.g. `node gate.js <gate id>`):
 * the command of a sandboxed build as it runs, not the shell or the sandbox around it. pgrep runs on
 * its own (no shell, which would match itself); the pids are the host's, not the sandbox's.
 */
export function processesRunning(prefix: string): number[] {
  const pattern = `^${prefix.replace(/[\\^$.*+?()[\]{}|]/g, '\\$&')}( |$)`;
  try {
    return execFileSync('pgrep', ['-f', pattern], { encoding: 'utf8' }).split('\n').filter(Boolean).map(Number);
  } catch (err) {
    if ((err as { status?: number }).status === 1) return [];
    throw err;
  }
}

/** Where a gated project is made, and where its builds' workspaces are (Hoist's data directory). */
export interface GateHost {
  api: string;
  dataDir: string;
}

/** A project whose builds run until its gate opens, so a chain stays running as long as a test needs. */
export interface GatedProject {
  id: string;
  name: string;
  /** The build command, `node gate.js <gate id>`: a unique command line to find the build's process by. */
  command: string;
  /** A site whose build waits for the gate (index.html says `marker`). */
  zip(marker?: string): Promise<Buffer>;
  /** The files of that site (index.html and gate.js), to write into a folder. */
  files(marker?: string): Record<string, string>;
  /** Lets every waiting and later build of this project finish. */
  open(): void;
}

/**
 * Creates the project `name` with build_command `node gate.js <gate id>` (waits for the gate file) and output_directory
 * `.`.
 */
export async function gatedProject(h: GateHost, token: string, name: string): Promise<GatedProject> {
  const gate = workspaceGate(h.dataDir, 'gate.js');
  const command = `node gate.js ${gate.id}`;
  const res = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, settings: { build_command: command, output_directory: '.' } }),
  });
  const body = await res.json();
  if (res.status !== 201) throw new Error(`project not created: ${JSON.stringify(body)}`);
  const script =
    `// ${gate.id}\nconst fs = require('fs'); const t = setInterval(() => { if ` +
    `(fs.existsSync(${JSON.stringify(GATE_FILE)})) clearInterval(t); }, 50);\n`;
  return {
    id: body.id,
    name,
    command,
    files: (marker = name) => ({ 'index.html': marker, 'gate.js': script }),
    zip: (marker = name) => zipOf({ 'index.html': marker, 'gate.js': script }),
    open: () => gate.open(),
  };
}
