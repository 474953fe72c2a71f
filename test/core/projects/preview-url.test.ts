// The preview host: <slug>--<8 hex of the operation id>, one DNS label even for the longest slug.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { uploadOptions } from '../../../core/deployments/upload-options.js';
import { HoistError } from '../../../core/errors.js';
import { previewLabel, previewUrl } from '../../../core/projects/project-url.js';
import { SLUG_MAX, slugify } from '../../../core/projects/slug.js';

const op = '7ac80622-1b2c-4d3e-8f90-a1b2c3d4e5f6';

test('a preview label is the slug, two hyphens and the operation id’s first 8 hex digits', () => {
  assert.is(previewLabel('my-site', op), 'my-site--7ac80622');
  const config = { appsScheme: 'https', appsDomain: 'apps.example.com', appsPort: 443, edgePort: 8080 };
  assert.is(previewUrl(config, 'my-site', op), 'https://my-site--7ac80622.apps.example.com/');
});

test('a long slug is cut so the label stays one DNS label, without a hyphen before the separator', () => {
  const slug = slugify(`${'a'.repeat(52)}-${'b'.repeat(20)}`);
  assert.is(slug.length, SLUG_MAX);
  const label = previewLabel(slug, op);
  assert.ok(label.length <= 63, `${label.length}`);
  assert.is(label, `${'a'.repeat(52)}--7ac80622`);
});

test('no slug holds two hyphens, so no project host looks like a preview host', () => {
  assert.is(slugify('a -- b'), 'a-b');
  assert.not.match(slugify('x--y'), /--/);
});

test('target: production (stored as nothing) or preview; anything else is a 400 naming the field', () => {
  assert.equal(uploadOptions({ target: 'production' }), {});
  assert.equal(uploadOptions({ target: 'preview' }), { target: 'preview' });
  try {
    uploadOptions({ target: 'staging' });
    assert.unreachable();
  } catch (err) {
    assert.instance(err, HoistError);
    assert.equal([(err as HoistError).code, (err as HoistError).details], ['invalid_request', { field: 'target' }]);
  }
});

test.run();
