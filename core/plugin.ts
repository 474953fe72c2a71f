import type { EntitySchema } from '@mikro-orm/core';
import { ANALYZERS, type Analyzer } from './ports/analyzer.js';
import { ARCHIVE, type Archive } from './ports/archive.js';
import { BUILDERS, type Builder } from './ports/builder.js';
import { CHANGE_FEED, type ChangeFeed } from './ports/change-feed.js';
import { CIPHER, type Cipher } from './ports/cipher.js';
import { DEPLOYER, type Deployer } from './ports/deployer.js';
import { DNS_RESOLVER, type DnsResolver } from './ports/dns-resolver.js';
import { MAILER, type Mailer } from './ports/mailer.js';
import { PASSWORD_HASHER, type PasswordHasher } from './ports/password-hasher.js';
import { QUEUE, type Queue } from './ports/queue.js';
import { SANDBOX, type Sandbox } from './ports/sandbox.js';
import { STORAGE, type Storage } from './ports/storage.js';
import { TOKEN_SERVICE, type TokenService } from './ports/token-service.js';
import { WEBHOOK_SENDER, type WebhookSender } from './ports/webhook-sender.js';
import type { Deps, Resolved, Token } from './tokens.js';

export type { HoistConfig } from '../config/schema.js';
export { atMost } from './at-most.js';
export { deleteRows, insertRow, queryRows, updateRows } from './entities/plain-sql.js';
export { CLOCK, type Clock } from './ports/clock.js';
export { CONFIG, ENTITY_MANAGER, LOGGER, token, type Deps, type Logger, type Resolved, type Token } from './tokens.js';

/**
 * The plugin API version this Hoist implements. A plugin states the version it was written for
 * (`apiVersion`); the kernel refuses one it does not support. Raise it when a change to the ports,
 * the tokens or this file would break a plugin written for the previous one.
 */
export const PLUGIN_API_VERSION = 1;
/** Every plugin API version this Hoist can load. */
export const SUPPORTED_PLUGIN_API_VERSIONS: readonly number[] = [PLUGIN_API_VERSION];

/** What a plugin of each port provides. */
export interface PortTypes {
  storage: Storage;
  queue: Queue;
  deployer: Deployer;
  mailer: Mailer;
  hasher: PasswordHasher;
  tokens: TokenService;
  archive: Archive;
  cipher: Cipher;
  dns: DnsResolver;
  sandbox: Sandbox;
  changes: ChangeFeed;
  webhooks: WebhookSender;
  analyzer: Analyzer;
  builder: Builder;
}
export type Port = keyof PortTypes;
/** Ports where every registered plugin takes part; on the others, configuration picks one. */
export type MultiPort = 'analyzer' | 'builder';
/** Ports with exactly one plugin chosen by configuration (the key of the same name, when there is one). */
export type SinglePort = Exclude<Port, MultiPort>;

/** The token each port is bound to: one instance for a single port, the list of every plugin's for a multi port. */
export const PORT_TOKENS: { [P in SinglePort]: Token<PortTypes[P]> } & {
  [P in MultiPort]: Token<PortTypes[P][]>;
} = {
  storage: STORAGE,
  queue: QUEUE,
  deployer: DEPLOYER,
  mailer: MAILER,
  hasher: PASSWORD_HASHER,
  tokens: TOKEN_SERVICE,
  archive: ARCHIVE,
  cipher: CIPHER,
  dns: DNS_RESOLVER,
  sandbox: SANDBOX,
  changes: CHANGE_FEED,
  webhooks: WEBHOOK_SENDER,
  analyzer: ANALYZERS,
  builder: BUILDERS,
};

/** Optional lifecycle a plugin instance may implement; the kernel calls these. */
export interface Lifecycle {
  /** Called once every instance is built, after the start of everything it depends on. */
  start?(): Promise<void>;
  /** Called once at shutdown, before the stop of everything it depends on. */
  stop?(): Promise<void>;
  /** Throws when the backend this plugin needs cannot be reached now; readiness (`/readyz`) calls it. */
  check?(): Promise<void>;
}

/**
 * A plugin: the default export of `plugins/<id>/index.ts`, or of a package named in the `plugins`
 * setting. `id` is fixed and capability first (`mailer-outbox`); `name` is the value that selects it
 * in configuration (`outbox`). `deps` names the tokens `create` gets, resolved; the kernel builds and
 * starts each plugin after everything it depends on, and stops it before them.
 */
export interface PluginDefinition<P extends Port = Port, D extends Deps = Deps> {
  /** The plugin API version the plugin was written for (PLUGIN_API_VERSION when it was). */
  apiVersion: number;
  id: string;
  port: P;
  name: string;
  deps: D;
  /** MikroORM entity schemas of the tables this plugin owns; the database opens with them. */
  entities?: EntitySchema[];
  /** Builds the instance; throws an Error saying what is misconfigured. */
  create(deps: Resolved<D>): PortTypes[P] | Promise<PortTypes[P]>;
}

/**
 * A plugin definition, with the types of `create`'s argument inferred from `deps`, and its result
 * checked against `port` (and kept, so a test of the plugin sees the instance's own type).
 */
export function definePlugin<
  P extends Port,
  D extends Deps,
  R extends PortTypes[P] | Promise<PortTypes[P]> = PortTypes[P] | Promise<PortTypes[P]>,
>(definition: DefinedPlugin<P, D, R>): DefinedPlugin<P, D, R> {
  return definition;
}

/** A PluginDefinition whose `create` returns `R`. */
export type DefinedPlugin<P extends Port, D extends Deps, R> = Omit<PluginDefinition<P, D>, 'create'> & {
  create(deps: Resolved<D>): R;
};
