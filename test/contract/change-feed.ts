import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { ChangeFeed } from '../../core/ports/change-feed.js';

/** A change feed under test, and a second one standing for another process (the same one when the plugin has none). */
export interface ChangeFeedUnderTest {
  feed: ChangeFeed;
  peer: ChangeFeed;
  /** Cuts the feed's connection to its backend, so it must reconnect; absent when it has none. */
  breakConnection?(): Promise<void>;
  cleanup(): Promise<void>;
}

/** Resolves when `check` holds, polling every 10 ms; rejects after `ms` naming `what`. */
async function until(check: () => boolean, what: string, ms = 5000): Promise<void> {
  const end = performance.now() + ms;
  while (!check()) {
    if (performance.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * The ChangeFeed contract every change-feed plugin passes: a change reaches the listeners of its
 * channel in every process (the publisher's at once), in the order one publisher sent them, and no
 * other channel; unsubscribing stops the calls; a bad channel is refused; a listener's failure stays
 * its own; after a lost connection every listener is called with null.
 */
export function changeFeedContract(name: string, fresh: () => Promise<ChangeFeedUnderTest>) {
  const t = suite(`change feed contract: ${name}`);

  t('a change reaches every listener of its channel, in this process and the other, in order', async () => {
    const f = await fresh();
    try {
      const here: (string | null)[] = [];
      const there: (string | null)[] = [];
      const other: (string | null)[] = [];
      f.feed.subscribe('routes', (k) => here.push(k));
      f.peer.subscribe('routes', (k) => there.push(k));
      f.peer.subscribe('sessions', (k) => other.push(k));
      await new Promise((r) => setTimeout(r, 100));
      for (const key of ['p1', 'p2', 'p3']) await f.feed.publish('routes', key);
      await until(() => here.length === 3 && there.length === 3, 'three changes on both sides');
      assert.equal(here, ['p1', 'p2', 'p3']);
      assert.equal(there, ['p1', 'p2', 'p3']);
      await new Promise((r) => setTimeout(r, 100));
      assert.equal(other, [], 'another channel hears nothing');
    } finally {
      await f.cleanup();
    }
  });

  t("this process's listeners are called at once; publish resolves once they handled it (awaiting them)", async () => {
    const f = await fresh();
    try {
      const called: string[] = [];
      const handled: string[] = [];
      f.feed.subscribe('routes', async (k) => {
        called.push(String(k));
        await new Promise((r) => setTimeout(r, 50));
        handled.push(String(k));
      });
      const sent = f.feed.publish('routes', 'now');
      assert.equal(called, ['now'], 'called before publish returned');
      await sent;
      assert.equal(handled, ['now']);
      await new Promise((r) => setTimeout(r, 200));
      assert.equal(handled, ['now'], 'called once, not again by its own notification');
    } finally {
      await f.cleanup();
    }
  });

  t('unsubscribing stops the calls; a throwing listener does not stop the others', async () => {
    const f = await fresh();
    try {
      const got: string[] = [];
      const stop = f.peer.subscribe('routes', (k) => got.push(`a:${k}`));
      f.peer.subscribe('routes', () => {
        throw new Error('listener failure');
      });
      f.peer.subscribe('routes', (k) => got.push(`b:${k}`));
      await new Promise((r) => setTimeout(r, 100));
      await f.feed.publish('routes', 'x');
      await until(() => got.length === 2, 'both listeners called');
      stop();
      await f.feed.publish('routes', 'y');
      await until(() => got.length === 3, 'the remaining listener called');
      assert.equal(got.sort(), ['a:x', 'b:x', 'b:y']);
    } finally {
      await f.cleanup();
    }
  });

  t('a bad channel is refused', async () => {
    const f = await fresh();
    try {
      for (const bad of ['', 'Routes', 'a-b', 'x;drop', 'a'.repeat(50)]) {
        const refused = await f.feed.publish(bad, 'k').then(
          () => null,
          (err: Error) => err.message,
        );
        assert.match(String(refused), /bad channel/);
        assert.throws(() => f.feed.subscribe(bad, () => {}), /bad channel/);
      }
    } finally {
      await f.cleanup();
    }
  });

  t('after a lost connection every listener is called with null, then hears changes again', async () => {
    const f = await fresh();
    if (!f.breakConnection) return f.cleanup();
    try {
      const got: (string | null)[] = [];
      f.feed.subscribe('routes', (k) => got.push(k));
      await new Promise((r) => setTimeout(r, 100));
      await f.breakConnection();
      await until(() => got.includes(null), 'a null after the reconnect', 10_000);
      await f.peer.publish('routes', 'after');
      await until(() => got.includes('after'), 'a change after the reconnect');
    } finally {
      await f.cleanup();
    }
  });

  t.run();
}
