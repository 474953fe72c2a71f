import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { isReservedSlug, slugify, SLUG_MAX, withSuffix } from '../../../core/projects/slug.js';

const VALID = /^[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$/;

test('slugify keeps a-z, 0-9 and single inner hyphens', () => {
  assert.is(slugify('My Site'), 'my-site');
  assert.is(slugify('  --Hello,   World!!--  '), 'hello-world');
  assert.is(slugify('Crème Brûlée 2'), 'creme-brulee-2');
  assert.is(slugify('日本語'), 'project');
  assert.is(slugify('!!!'), 'project');
});

test('slugify stays within one DNS label and never ends with a hyphen', () => {
  const s = slugify(`${'a'.repeat(62)} b`);
  assert.ok(s.length <= SLUG_MAX);
  assert.match(s, VALID);
  assert.is(slugify('x'.repeat(200)).length, SLUG_MAX);
});

test('withSuffix adds four random characters and stays valid', () => {
  assert.match(withSuffix('my-site'), /^my-site-[a-z0-9]{4}$/);
  const long = withSuffix(`${'a'.repeat(57)}-bbbbb`);
  assert.ok(long.length <= SLUG_MAX);
  assert.match(long, VALID);
  assert.not.match(long, /--/);
});

test('service host names are reserved', () => {
  assert.ok(isReservedSlug('www'));
  assert.ok(isReservedSlug('api'));
  assert.not.ok(isReservedSlug('my-api'));
});

test.run();
