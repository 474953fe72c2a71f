import { CHANNEL, type ChangeFeed } from '../../core/ports/change-feed.js';

/**
 * Changes announced within this process only: every role of `hoist start` shares one. `publish`
 * resolves once every listener has handled the change (a listener returning a promise is awaited), so
 * what the write changed is in every in-memory view when the write's caller answers.
 */
export class MemoryChangeFeed implements ChangeFeed {
  private readonly listeners = new Map<string, Set<(key: string | null) => void>>();

  async publish(channel: string, key: string): Promise<void> {
    if (!CHANNEL.test(channel)) throw new Error(`changes: bad channel ${JSON.stringify(channel)}`);
    const handled: unknown[] = [];
    for (const listener of this.listeners.get(channel) ?? []) {
      try {
        handled.push(listener(key));
      } catch {
        // A listener's failure is its own: the publisher's write has committed and stands.
      }
    }
    await Promise.allSettled(handled);
  }

  subscribe(channel: string, listener: (key: string | null) => void): () => void {
    if (!CHANNEL.test(channel)) throw new Error(`changes: bad channel ${JSON.stringify(channel)}`);
    const set = this.listeners.get(channel) ?? new Set();
    this.listeners.set(channel, set);
    set.add(listener);
    return () => void set.delete(listener);
  }
}
