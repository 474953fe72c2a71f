import type { HoistConfig } from '../config/schema.js';

/** Ports with exactly one plugin chosen by configuration (the key of the same name). */
export type SinglePort = 'storage' | 'queue' | 'deployer' | 'mailer' | 'hasher' | 'tokens' | 'archive' | 'cipher' | 'dns' | 'sandbox';
/** Ports where every registered plugin takes part. */
export type MultiPort = 'analyzer' | 'builder';

/** What a plugin's factory gets: the configuration and the other bindings. */
export interface PluginContext {
  config: HoistConfig;
  /** Resolves another binding by its token (a port or a core service). */
  get<T>(token: symbol): T;
}

/** Optional lifecycle a plugin instance may implement; the kernel calls these. */
export interface Lifecycle {
  /** Called once after every binding is registered, in registration order. */
  start?(): Promise<void>;
  /** Called once at shutdown, in reverse order. */
  stop?(): Promise<void>;
  /** Throws when the backend this plugin needs cannot be reached now; readiness (`/readyz`) calls it. */
  check?(): Promise<void>;
}

/**
 * A plugin, as exported by `plugins/<id>/index.ts`. `id` is fixed and capability first
 * (`mailer-outbox`); `name` is the value that selects it in configuration (`outbox`).
 */
export interface PluginDefinition<T = unknown> {
  id: string;
  port: SinglePort | MultiPort;
  name: string;
  /** The port's injection token. */
  token: symbol;
  /** Builds the instance; throws an Error saying what is misconfigured. */
  create(ctx: PluginContext): T | Promise<T>;
}
