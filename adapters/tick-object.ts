import { executionAsyncResource } from 'node:async_hooks';

let pinned: object | undefined;

/** The tick object kept alive, once pinned (for the test). */
export const pinnedTickObject = () => pinned;

/**
 * Keeps one of Node.js' tick objects (what `process.nextTick` queues) alive for as long as the process runs. On
 * Node.js 20, once full garbage collections have run while no tick object was alive (an idle moment), every later
 * `process.nextTick` stays 3–5 times as slow: 57–62 ns a call before 10 full collections, 286–314 ns after
 * (bench/next-tick.ts; it looks like the map of nextTick's object literal goes with the collection, and V8's cache of
 * how to build that literal does not come back). node:http calls it several times a request: `node --cpu-prof` of
 * the edge under `wrk` gave it 4–5 µs a request, against 0.1 µs in a bare server. One tick object kept alive keeps
 * the map (48–73 ns a call after the same collections): side by side, the edge then spent 15–18% less CPU a request
 * on `index.html` and on the 304. Called first thing (bin/hoist.js), before the collections of the start; again by
 * startRoles for a process that runs roles without the CLI (tests, benches). Idempotent.
 */
export function pinTickObject(): void {
  if (pinned) return;
  pinned = {};
  process.nextTick(() => (pinned = executionAsyncResource()));
}
