import type { EntityManager } from '@mikro-orm/core';
import type { HoistConfig } from '../config/schema.js';

declare const resolvesTo: unique symbol;

/**
 * An injection token: a symbol that carries the type of what it resolves to, as Backstage's
 * `createServiceRef` does. Resolving `Token<Storage>` gives a `Storage`, checked by the compiler.
 */
export type Token<T> = symbol & { readonly [resolvesTo]?: T };

/**
 * The token named `id`. It is `Symbol.for(id)`, so two copies of this module (Hoist run from source and
 * an external plugin built against the compiled plugin API) agree on every token.
 */
export function token<T>(id: string): Token<T> {
  return Symbol.for(id) as Token<T>;
}

/** What a definition needs, by the name its factory gets each one under. */
export type Deps = Record<string, Token<unknown>>;

/** The values a definition's factory gets for its `deps`. */
export type Resolved<D extends Deps> = { [K in keyof D]: D[K] extends Token<infer T> ? T : never };

/** A core service: the token it provides, its dependencies, and the factory the kernel calls once. */
export interface ServiceDefinition<T = unknown, D extends Deps = Deps> {
  provides: Token<T>;
  deps: D;
  create(deps: Resolved<D>): T;
}

/** A service definition, with its types inferred from `provides` and `deps`. */
export function defineService<T, D extends Deps>(definition: ServiceDefinition<T, D>): ServiceDefinition<T, D> {
  return definition;
}

/** The process logger as plugins and core see it (pino's logger is one). */
export interface Logger {
  debug(msg: string): void;
  debug(obj: object, msg?: string): void;
  info(msg: string): void;
  info(obj: object, msg?: string): void;
  warn(msg: string): void;
  warn(obj: object, msg?: string): void;
  error(msg: string): void;
  error(obj: object, msg?: string): void;
}

export const CONFIG = token<HoistConfig>('hoist.Config');
export const ENTITY_MANAGER = token<EntityManager>('hoist.EntityManager');
export const LOGGER = token<Logger>('hoist.Logger');
