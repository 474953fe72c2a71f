#!/usr/bin/env node
// The `hoist` command. Sources are TypeScript, loaded through tsx; no build step is needed.
import { register } from 'tsx/esm/api';

register();
await import('../adapters/cli/main.ts');
