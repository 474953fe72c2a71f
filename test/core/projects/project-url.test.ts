import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { projectUrl } from '../../../core/projects/project-url.js';

const base = { appsScheme: 'http', appsDomain: 'localhost', edgePort: 8080 } as const;

test('the edge port is shown unless it is the scheme default', () => {
  assert.is(projectUrl(base, 'my-site'), 'http://my-site.localhost:8080/');
  assert.is(projectUrl({ ...base, edgePort: 80 }, 'a'), 'http://a.localhost/');
  assert.is(projectUrl({ ...base, appsScheme: 'https', edgePort: 443 }, 'a'), 'https://a.localhost/');
  assert.is(projectUrl({ ...base, appsScheme: 'https', edgePort: 80 }, 'a'), 'https://a.localhost:80/');
});

test('appsPort wins over the edge port', () => {
  assert.is(
    projectUrl({ ...base, appsDomain: 'apps.example.com', appsScheme: 'https', appsPort: 443 }, 'site'),
    'https://site.apps.example.com/',
  );
  assert.is(projectUrl({ ...base, appsPort: 9000 }, 'site'), 'http://site.localhost:9000/');
});

test.run();
