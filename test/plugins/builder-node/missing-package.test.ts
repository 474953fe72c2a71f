import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { missingPackage } from '../../../plugins/builder-node/missing-package.js';

test('npm E404 on a packument names the package and the version asked for', () => {
  const out = [
    'npm error code E404',
    'npm error 404 Not Found - GET https://registry.npmjs.org/@hoist-test%2fdefinitely-missing-pkg-xyz',
    'npm error 404',
    'npm error 404  The requested resource ' +
      "'@hoist-test/definitely-missing-pkg-xyz@1.0.0' could not be found or you do not " +
      'have permission to access it.',
  ];
  assert.is(missingPackage(out), '@hoist-test/definitely-missing-pkg-xyz@1.0.0');
});

test('a 404 on a tarball, on a registry with a path prefix, gives the name and version from the URL', () => {
  const out = [
    'npm error code E404',
    'npm error 404 Not Found - GET ' +
      'https://npm.example.com/repository/npm/@rollup/rollup-linux-x64-gnu/-/rollup-linux-x64-gnu-4.68.0.tgz',
  ];
  assert.is(missingPackage(out), '@rollup/rollup-linux-x64-gnu@4.68.0');
  assert.is(
    missingPackage(['npm error 404 Not Found - GET https://registry.npmjs.org/left-pad-nope']),
    'left-pad-nope',
  );
});

test('npm ETARGET, pnpm and yarn messages name the package', () => {
  assert.is(
    missingPackage([
      'npm error code ETARGET',
      'npm error notarget No matching version found for is-number@99.0.0.',
      'npm error notarget In most cases...',
    ]),
    'is-number@99.0.0',
  );
  assert.is(
    missingPackage([' ERR_PNPM_NO_MATCHING_VERSION  No matching version found for is-number@99.0.0']),
    'is-number@99.0.0',
  );
  assert.is(
    missingPackage([' ERR_PNPM_FETCH_404  GET https://registry.npmjs.org/nope-pkg: Not Found - 404']),
    'nope-pkg',
  );
  assert.is(
    missingPackage([
      'error Couldn\'t find package "nope-pkg@^1.0.0" required by "fixture@1.0.0" on the "npm" registry.',
    ]),
    'nope-pkg@^1.0.0',
  );
});

test('other install failures name no package', () => {
  assert.is(
    missingPackage([
      'npm error code ECONNREFUSED',
      'npm error errno ECONNREFUSED',
      'npm error FetchError: request to http://127.0.0.1:9/is-number failed',
    ]),
    null,
  );
  assert.is(
    missingPackage([
      'npm error code EUSAGE',
      'npm error `npm ci` can only install packages when your package.json and package-lock.json are in sync.',
    ]),
    null,
  );
});

test.run();
