#!/usr/bin/env node
// The `hoist` command: the compiled JavaScript in dist/, which `npm install` builds (`npm run build`).
import { existsSync } from 'node:fs';
import module from 'node:module';

// Node 22.1 and later keep the compiled code of the modules on disk for the next start; Node 20 has no cache.
module.enableCompileCache?.();
const main = new URL('../dist/adapters/cli/main.js', import.meta.url);
if (!existsSync(main)) {
  console.error('hoist: dist/ is not built: run `npm run build` (npm install runs it)');
  process.exit(1);
}
// Before anything else: keeps process.nextTick fast for the life of the process (adapters/tick-object.ts says why).
const { pinTickObject } = await import(new URL('../dist/adapters/tick-object.js', import.meta.url).href);
pinTickObject();
await import(main.href);
