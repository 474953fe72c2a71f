#!/usr/bin/env node
// Fails when a package of the lockfile (what `npm ci` installs, dev and optional ones too) asks for a
// Node.js that package.json's `engines.node` allows but it does not support: Hoist must run on every
// version it declares. Pin such a package to a release that supports them (`overrides` for a nested one).
// Usage: node scripts/check-engines.js   (.ci/run runs it after the install)
import { readFileSync } from 'node:fs';
import semver from 'semver';

const read = (file) => JSON.parse(readFileSync(new URL(`../${file}`, import.meta.url), 'utf8'));
const declared = read('package.json').engines.node;
const offenders = Object.entries(read('package-lock.json').packages)
  .filter(([path, p]) => path && typeof p.engines?.node === 'string')
  .filter(([, p]) => !semver.subset(declared, p.engines.node))
  .map(([path, p]) => `  ${path.replace(/^node_modules\//, '')}@${p.version} needs node ${p.engines.node}`);

if (offenders.length) {
  console.error(`check-engines: Hoist declares node ${declared}, but:\n${offenders.join('\n')}`);
  process.exit(1);
}
console.log(`check-engines: every locked package supports node ${declared}`);
