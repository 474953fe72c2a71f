import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { HoistError } from '../../core/errors.js';
import { DnsLookupError, type DnsResolver } from '../../core/ports/dns-resolver.js';
import type { TestDnsServer } from '../helpers/dns-server.js';

/** A resolver under test, reading from a DNS server the test controls. */
export interface DnsResolverUnderTest {
  resolver: DnsResolver;
  /** The server the resolver asks; the test sets its records and how it answers. */
  server: TestDnsServer;
  cleanup(): Promise<void>;
}

/** Options for a fresh resolver: its time allowed per try (the timeout test uses a short one). */
export interface FreshOptions {
  timeoutMs: number;
}

/** Checks that `err` (what a lookup rejected with; not an error when it resolved) is a DnsLookupError for `reason`. */
function assertFailure(err: Error, reason: string, hostname: string) {
  assert.instance(err, DnsLookupError, `${err}`);
  assert.instance(err, HoistError);
  assert.is((err as DnsLookupError).code, 'unavailable');
  assert.is((err as DnsLookupError).reason, reason);
  assert.is((err as DnsLookupError).details.hostname, hostname);
  assert.ok(err.cause, 'the resolver error is kept as cause');
}

/**
 * The DnsResolver contract every resolver plugin passes: TXT, CNAME and A records as the server
 * holds them (changes seen at the next lookup), NXDOMAIN and NODATA as no records, and SERVFAIL,
 * REFUSED and silence as a DnsLookupError (HoistError unavailable) with its reason and cause.
 */
export function dnsResolverContract(name: string, fresh: (opts: FreshOptions) => Promise<DnsResolverUnderTest>) {
  const t = suite(`dns resolver contract: ${name}`);
  const normal = { timeoutMs: 5000 };

  t('TXT records: each one whole, several strings of one record joined', async () => {
    const { resolver, server, cleanup } = await fresh(normal);
    try {
      server.set('_hoist-challenge.app.customer.test', 'TXT', [
        'hoist-abc',
        ['part one;', 'part two'],
        'x'.repeat(255),
      ]);
      assert.equal(
        (await resolver.resolveTxt('_hoist-challenge.app.customer.test')).sort(),
        ['hoist-abc', 'part one;part two', 'x'.repeat(255)].sort(),
      );
    } finally {
      await cleanup();
    }
  });

  t('a change of records is seen by the next lookup', async () => {
    const { resolver, server, cleanup } = await fresh(normal);
    try {
      server.set('_c.app.customer.test', 'TXT', ['one']);
      assert.equal(await resolver.resolveTxt('_c.app.customer.test'), ['one']);
      server.set('_c.app.customer.test', 'TXT', ['two']);
      assert.equal(await resolver.resolveTxt('_c.app.customer.test'), ['two']);
      server.remove('_c.app.customer.test');
      assert.equal(await resolver.resolveTxt('_c.app.customer.test'), []);
    } finally {
      await cleanup();
    }
  });

  t('CNAME targets come lowercased, without the trailing dot', async () => {
    const { resolver, server, cleanup } = await fresh(normal);
    try {
      server.set('App.Customer.test', 'CNAME', ['My-Site.Apps.Example.']);
      assert.equal(await resolver.resolveCname('app.customer.test'), ['my-site.apps.example']);
    } finally {
      await cleanup();
    }
  });

  t('A records, following a CNAME', async () => {
    const { resolver, server, cleanup } = await fresh(normal);
    try {
      server.set('www.customer.test', 'A', ['192.0.2.1', '192.0.2.2']);
      server.set('app.customer.test', 'CNAME', ['www.customer.test']);
      assert.equal((await resolver.resolve4('www.customer.test')).sort(), ['192.0.2.1', '192.0.2.2']);
      assert.equal((await resolver.resolve4('app.customer.test')).sort(), ['192.0.2.1', '192.0.2.2']);
    } finally {
      await cleanup();
    }
  });

  t('a name that does not exist (NXDOMAIN) has no records', async () => {
    const { resolver, cleanup } = await fresh(normal);
    try {
      assert.equal(await resolver.resolveTxt('nothing.customer.test'), []);
      assert.equal(await resolver.resolveCname('nothing.customer.test'), []);
      assert.equal(await resolver.resolve4('nothing.customer.test'), []);
    } finally {
      await cleanup();
    }
  });

  t('a name without records of the type asked (NODATA) has none of them', async () => {
    const { resolver, server, cleanup } = await fresh(normal);
    try {
      server.set('only-a.customer.test', 'A', ['192.0.2.9']);
      assert.equal(await resolver.resolveTxt('only-a.customer.test'), []);
      assert.equal(await resolver.resolveCname('only-a.customer.test'), []);
    } finally {
      await cleanup();
    }
  });

  t('SERVFAIL and REFUSED are failures, not an absence of records', async () => {
    const { resolver, server, cleanup } = await fresh(normal);
    try {
      server.set('app.customer.test', 'TXT', ['there']);
      server.mode = 'servfail';
      assertFailure(await resolver.resolveTxt('app.customer.test').catch((e) => e), 'servfail', 'app.customer.test');
      server.mode = 'refused';
      assertFailure(await resolver.resolveCname('app.customer.test').catch((e) => e), 'refused', 'app.customer.test');
      server.mode = 'answer';
      assert.equal(await resolver.resolveTxt('app.customer.test'), ['there']);
    } finally {
      await cleanup();
    }
  });

  t('a server that never answers fails with timeout', async () => {
    const { resolver, server, cleanup } = await fresh({ timeoutMs: 200 });
    try {
      server.mode = 'silent';
      assertFailure(await resolver.resolveTxt('app.customer.test').catch((e) => e), 'timeout', 'app.customer.test');
      assert.ok(server.asked.includes('TXT app.customer.test'), 'the question reached the server');
    } finally {
      await cleanup();
    }
  });

  t.run();
}
