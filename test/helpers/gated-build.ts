import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LiveHoist } from './live.js';
import { zipOf } from './live.js';

/** A project whose builds run until its gate opens, so a chain stays running as long as a test needs. */
export interface GatedProject {
  id: string;
  name: string;
  /** A site whose build waits for the gate (index.html says `marker`). */
  zip(marker?: string): Promise<Buffer>;
  /** The files of that site (index.html and gate.js), to write into a folder. */
  files(marker?: string): Record<string, string>;
  /** Lets every waiting and later build of this project finish. */
  open(): void;
}

/** Creates the project `name` with build_command `node gate.js` (waits for the gate file) and output_directory `.`. */
export async function gatedProject(h: LiveHoist, token: string, name: string): Promise<GatedProject> {
  const gate = join(mkdtempSync(join(tmpdir(), 'hoist-gate-')), 'open');
  const res = await fetch(`${h.api}/api/v1/projects/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ name, settings: { build_command: 'node gate.js', output_directory: '.' } }),
  });
  const body = await res.json();
  if (res.status !== 201) throw new Error(`project not created: ${JSON.stringify(body)}`);
  const script = `const fs = require('fs'); const t = setInterval(() => { if (fs.existsSync(${JSON.stringify(gate)})) clearInterval(t); }, 50);`;
  return {
    id: body.id,
    name,
    files: (marker = name) => ({ 'index.html': marker, 'gate.js': script }),
    zip: (marker = name) => zipOf({ 'index.html': marker, 'gate.js': script }),
    open: () => writeFileSync(gate, ''),
  };
}
