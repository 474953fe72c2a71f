import { RequestContext, type EntityManager } from '@mikro-orm/core';
import { AsyncLocalStorage } from 'node:async_hooks';

const scopes = new AsyncLocalStorage<{ root: EntityManager; fork?: EntityManager }>();

/**
 * Runs `fn` as one request: the entity manager core's code resolves is a fork of `root`, as RequestContext.create
 * gives, but made on its first use and kept for the rest of the request. A request answered from memory forks
 * nothing: the fork cost more than the rest of such an answer.
 */
export function inRequestScope<T>(root: EntityManager, fn: () => T): T {
  return scopes.run({ root }, fn);
}

/** MikroORM's `context` option: a RequestContext's entity manager, else the request scope's (see inRequestScope). */
export function resolveContext(name: string): EntityManager | undefined {
  const explicit = RequestContext.getEntityManager(name);
  if (explicit) return explicit;
  const scope = scopes.getStore();
  // Forked from `root` itself: the fork's own context resolution would come back here.
  return scope && (scope.fork ??= scope.root.fork({ disableContextResolution: true }));
}
