import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  locationOf,
  matchHeaders,
  matchRedirect,
  MAX_DYNAMIC_RULES,
  MAX_HEADER_RULES,
  MAX_RULES,
  parseHeaders,
  parseRedirects,
} from '../../core/ports/site-rules.cjs';

test('rules parse in order: status 301 by default, ! forces, comments and blank lines are skipped', () => {
  const { rules, errors } = parseRedirects(
    '# a comment\r\n\n/old /new\n  /blog/:year/*   /posts/:year/:splat   302  \n/* /index.html 200!  # the fallback\n',
  );
  assert.equal(errors, []);
  assert.equal(rules, [
    { from: '/old', to: '/new', status: 301, force: false },
    { from: '/blog/:year/*', to: '/posts/:year/:splat', status: 302, force: false },
    { from: '/*', to: '/index.html', status: 200, force: true },
  ]);
});

test('each refused line is named with its number and why', () => {
  const lines = [
    '/only-from',
    'https://other.example/* /x',
    'relative /x',
    '/a b=c /d',
    '/a nowhere',
    '/a https://other.example/x 200',
    '/a /b 404 Country=us',
    '/a /b 418',
    '/a /b permanent',
    '/a* /b',
    '/*/a /b',
    '/:1x /b',
    '/a /b 301 extra',
    `/${'x'.repeat(2100)} /b`,
    '/a\u0001 /b',
    'https://[bad /x',
    '/a https://[bad 302',
    '/a /caf\u00e9',
  ];
  const { rules, errors } = parseRedirects(lines.join('\n'));
  assert.equal(rules, []);
  assert.equal(
    errors.map((e) => e.line),
    lines.map((_, i) => i + 1),
  );
  const say = (n: number) => errors[n - 1].message;
  assert.match(say(1), /target is missing/);
  assert.match(say(2), /matching on a domain is not supported/);
  assert.match(say(3), /starts with \//);
  assert.match(say(4), /query parameters is not supported/);
  assert.match(say(5), /"to" is a path that starts with \/ or an http\(s\) URL/);
  assert.match(say(6), /proxying\) is not supported/);
  assert.match(say(7), /conditions .* are not supported/);
  assert.match(say(8), /418: the status is one of 200, 301/);
  assert.match(say(9), /the status is one of/);
  assert.match(say(10), /a \* may only end the path/);
  assert.match(say(11), /a \* may only end the path/);
  assert.match(say(12), /placeholder/);
  assert.match(say(13), /nothing after the status/);
  assert.match(say(14), /at most 2048 characters/);
  assert.match(say(15), /control characters/);
  assert.match(say(17), /not a valid URL/);
  assert.match(say(18), /percent-encoded/);
});

test(`more than ${MAX_RULES} rules are refused as a whole`, () => {
  const { rules, errors } = parseRedirects(Array.from({ length: MAX_RULES + 1 }, (_, i) => `/p${i} /q${i}`).join('\n'));
  assert.is(rules.length, MAX_RULES + 1);
  assert.equal(errors, [{ line: 0, message: `${MAX_RULES + 1} rules: at most ${MAX_RULES} are supported` }]);
});

test('matching: placeholders, the splat (the empty rest too), trailing slashes, escapes, first match wins', () => {
  const { rules } = parseRedirects(
    [
      '/old /new',
      '/u/:user/p/:post /posts/:post?by=:user',
      '/docs/* /v2/docs/:splat',
      '/caf\u00e9 /coffee',
      '/u/* /users',
      '/ /home 302',
    ].join('\n'),
  );
  const to = (path: string) => matchRedirect(rules, path, false)?.to ?? null;
  assert.is(to('/old'), '/new');
  assert.is(to('/old/'), '/new');
  assert.is(to('/older'), null);
  assert.is(to('/old/x'), null);
  assert.is(to('/u/ann/p/7'), '/posts/7?by=ann');
  assert.is(to('/u/ann/p/7/8'), '/users', 'one segment a placeholder: the next rule matches');
  assert.is(to('/u//p/7'), '/users', 'a placeholder matches no empty segment');
  assert.is(to('/docs/a/b%20c'), '/v2/docs/a/b%20c', 'the splat as sent, still escaped');
  assert.is(to('/docs'), '/v2/docs/', 'the splat matches the empty rest');
  assert.is(to('/caf%C3%A9'), '/coffee', 'a literal segment matches its escaped form');
  assert.is(to('/'), '/home');
  assert.is(matchRedirect(rules, '/old', true), null, 'a file answers: only forced rules apply');
});

test(`plain paths are looked up, the others tried in turn (at most ${MAX_DYNAMIC_RULES}); the first match wins`, () => {
  const { rules } = parseRedirects('/a/:x /first\n/a/b /second\n/c/d /third\n/c/* /fourth\n/c/d /fifth\n');
  assert.is(matchRedirect(rules, '/a/b', false)!.to, '/first', 'a placeholder rule before the plain one wins');
  assert.is(matchRedirect(rules, '/c/d', false)!.to, '/third', 'the plain rule before the splat wins');
  assert.is(matchRedirect(rules, '/c/e', false)!.to, '/fourth');
  const many = Array.from({ length: MAX_DYNAMIC_RULES + 1 }, (_, i) => `/d${i}/* /e`);
  assert.equal(parseRedirects([...many, '/plain /p'].join('\n')).errors, [
    {
      line: 0,
      message:
        `${MAX_DYNAMIC_RULES + 1} rules with placeholders or a splat: ` + `at most ${MAX_DYNAMIC_RULES} are supported`,
    },
  ]);
});

test('forced rules apply where a file answers; the others only where none does', () => {
  const { rules } = parseRedirects('/a /x 200\n/a /y 200!\n/* /index.html 200');
  assert.is(matchRedirect(rules, '/a', false)!.to, '/x');
  assert.is(matchRedirect(rules, '/a', true)!.to, '/y');
  assert.is(matchRedirect(rules, '/b', true), null);
  assert.is(matchRedirect(rules, '/b', false)!.to, '/index.html');
  assert.is(matchRedirect([], '/b', false), null);
});

test('a placeholder named like a property of objects is only a name', () => {
  const { rules } = parseRedirects('/:__proto__/:constructor /:constructor/:__proto__/:toString');
  assert.is(matchRedirect(rules, '/a/b', false)!.to, '/b/a/:toString');
});

test("a redirect's Location: the request's query goes along, before a fragment; no host from the request", () => {
  const { rules } = parseRedirects('/y/* /:splat 302\n/z /a#top\n/q /b?x=1\n/ext/* //cdn.example/:splat');
  const location = (path: string, query = '') => {
    const hit = matchRedirect(rules, path, false)!;
    return locationOf(hit.rule, hit.to, query);
  };
  assert.is(location('/y/a/b', '?k=v'), '/a/b?k=v');
  assert.is(location('/z', '?k=v'), '/a?k=v#top');
  assert.is(location('/q', '?k=v'), '/b?x=1');
  assert.is(location('/y//evil.example/p'), '/evil.example/p', 'not //evil.example: another host');
  assert.is(location('/y/\\evil.example'), '/evil.example');
  assert.is(location('/ext/x.js'), '//cdn.example/x.js', "the rule's own host stays");
});

test("each placeholder and :splat is used once in `to`: a Location is never many times the request's size", () => {
  const lines = ['/* /:splat/:splat 302', '/:a/* https://x.example/:a?again=:a', '/:a/* /:a/:splat?x=:b#:splat'];
  const { rules, errors } = parseRedirects([...lines, '/:a/:b/* /:b/:a/:splat?keep=:c:c'].join('\n'));
  assert.equal(
    errors.map((e) => e.line),
    [1, 2, 3],
  );
  assert.match(errors[0].message, /:splat is used more than once/);
  assert.match(errors[1].message, /:a is used more than once/);
  assert.is(rules.length, 1, 'a name the path does not fill in (:c) is text, as often as it likes');
  assert.is(matchRedirect(rules, '/x/y/z', false)!.to, '/y/x/z?keep=:c:c');
  // A rule stored before they were refused: its name filled in once, the rest left as written.
  const stored = [{ from: '/*', to: `/${':splat'.repeat(300)}`, status: 302 as const, force: false }];
  const path = `/${'a'.repeat(10_000)}`;
  const hit = matchRedirect(stored, path, false)!;
  assert.ok(hit.to.length <= path.length + stored[0].to.length, `${hit.to.length} characters`);
  assert.ok(hit.to.startsWith(`/${'a'.repeat(10_000)}:splat`));
});

test('a path with escapes is decoded once for all the rules tried, not once a rule', () => {
  const dynamic = Array.from({ length: MAX_DYNAMIC_RULES }, (_, i) => `/${'a/'.repeat(40)}:x${i} /t`).join('\n');
  const redirects = parseRedirects(dynamic);
  const headerLines = Array.from({ length: 50 }, (_, i) => `/${'a/'.repeat(40)}:x${i}\n  X-N: ${i}`);
  const headers = parseHeaders(headerLines.join('\n'));
  assert.equal([...redirects.errors, ...headers.errors], []);
  const path = `/${'%61/'.repeat(40)}b/c`;
  const real = globalThis.decodeURIComponent;
  let calls = 0;
  globalThis.decodeURIComponent = (s: string) => (calls++, real(s));
  try {
    assert.is(matchRedirect(redirects.rules, path, false), null);
    assert.ok(calls <= 2 * 43, `${calls} decodes for a path of 42 segments and ${MAX_DYNAMIC_RULES} rules`);
    calls = 0;
    assert.is(matchHeaders(headers.rules, path), null);
    assert.ok(calls <= 43, `${calls} decodes for a path of 42 segments and 50 header rules`);
    assert.is(matchRedirect(redirects.rules, `/${'%61/'.repeat(40)}b`, false)!.to, '/t', 'an escaped segment matches');
  } finally {
    globalThis.decodeURIComponent = real;
  }
});

test('_headers: paths, then their headers, names in lower case; comments and blank lines skipped', () => {
  const { rules, errors } = parseHeaders(
    "# security\n/*\n  X-Frame-Options: DENY\n\tContent-Security-Policy: default-src 'self'; img-src *\n\n" +
      '/assets/*\n  Cache-Control: public, max-age=31536000, immutable\n/blog/:slug\n  Link: </x.css>; rel=preload\n',
  );
  assert.equal(errors, []);
  assert.equal(rules, [
    {
      path: '/*',
      headers: [
        ['x-frame-options', 'DENY'],
        ['content-security-policy', "default-src 'self'; img-src *"],
      ],
    },
    { path: '/assets/*', headers: [['cache-control', 'public, max-age=31536000, immutable']] },
    { path: '/blog/:slug', headers: [['link', '</x.css>; rel=preload']] },
  ]);
});

test('_headers: each refused line is named with its number and why', () => {
  const lines = [
    'X-Early: before any path',
    '/a',
    '  Set-Cookie: session=1',
    '  Content-Length: 10',
    '  X-Hoist-Release: mine',
    '  Bad Name: x',
    '  X-Empty:',
    '  no colon here',
    '  ! X-Frame-Options',
    'https://other.example/*',
    '/b*',
    '/with space',
    '  X-Ctl: a\u0001b',
    '/empty',
    '  Transfer-Encoding: chunked',
    '  X-Accel-Redirect: /internal',
    '  X-Sendfile: /etc/passwd',
  ];
  const { errors } = parseHeaders(lines.join('\n'));
  const say = Object.fromEntries(errors.map((e) => [e.line, e.message]));
  assert.equal(
    errors.map((e) => e.line),
    [1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 15, 16, 17],
  );
  assert.match(say[1], /after the path it is for/);
  assert.match(say[3], /set-cookie: a static answer sets no cookie/);
  assert.match(say[4], /content-length: Hoist sets this header itself/);
  assert.match(say[5], /X-Hoist-\* headers/);
  assert.match(say[6], /not a header name/);
  assert.match(say[7], /has no value/);
  assert.match(say[8], /"Name: value"/);
  assert.match(say[9], /removing a header/);
  assert.match(say[10], /matching on a domain/);
  assert.match(say[11], /a \* may only end the path/);
  assert.match(say[12], /holds no spaces/);
  assert.match(say[13], /characters a header may not/);
  assert.match(say[15], /transfer-encoding/);
  assert.match(say[16], /x-accel-redirect: an instruction to a proxy in front of Hoist/);
  assert.match(say[17], /x-sendfile: an instruction to a proxy/);
  const empty = parseHeaders('/a\n/b\n  X-B: 1').errors;
  assert.equal(empty, [{ line: 1, message: '/a: the path has no headers' }]);
});

test('_headers: Clear-Site-Data naming cookies is refused (browsers clear those of every project host)', () => {
  const { rules, errors } = parseHeaders(
    '/logout\n  Clear-Site-Data: "cookies"\n  Clear-Site-Data: "*"\n  Clear-Site-Data: "cache", "COOKIES"\n' +
      '/reset\n  Clear-Site-Data: "cache", "storage"\n',
  );
  assert.equal(
    errors.map((e) => e.line),
    [2, 3, 4],
  );
  assert.match(errors[0].message, /clear-site-data: "cookies" \(and "\*"\) clear the cookies of every site/);
  assert.equal(rules[1], { path: '/reset', headers: [['clear-site-data', '"cache", "storage"']] });
});

test(`_headers: more than ${MAX_HEADER_RULES} paths are refused as a whole`, () => {
  const text = Array.from({ length: MAX_HEADER_RULES + 1 }, (_, i) => `/p${i}\n  X-N: ${i}`).join('\n');
  assert.equal(parseHeaders(text).errors, [
    { line: 0, message: `${MAX_HEADER_RULES + 1} paths: at most ${MAX_HEADER_RULES} are supported` },
  ]);
});

test('_headers: every matching rule applies, in order; one header of several rules is joined', () => {
  const { rules } = parseHeaders(
    '/*\n  X-A: 1\n  Link: <a>\n/docs/*\n  X-B: 2\n  Link: <b>\n/docs/:page\n  X-C: 3\n/other\n  X-D: 4\n',
  );
  assert.equal({ ...matchHeaders(rules, '/docs/intro') }, { 'x-a': '1', link: '<a>, <b>', 'x-b': '2', 'x-c': '3' });
  assert.equal({ ...matchHeaders(rules, '/docs') }, { 'x-a': '1', link: '<a>, <b>', 'x-b': '2' });
  assert.equal({ ...matchHeaders(rules, '/') }, { 'x-a': '1', link: '<a>' });
  assert.is(matchHeaders(parseHeaders('/x\n  X-A: 1').rules, '/y'), null);
});

test.run();
