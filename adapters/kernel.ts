// tsyringe refuses to load without the Reflect metadata API, though Hoist uses no decorators.
import 'reflect-metadata';
import { MikroORM } from '@mikro-orm/core';
import { container as root, type DependencyContainer } from 'tsyringe';
import type { HoistConfig } from '../config/schema.js';
import {
  PORT_TOKENS,
  type Lifecycle,
  type MultiPort,
  type PluginDefinition,
  type Port,
  type SinglePort,
} from '../core/plugin.js';
import { CLOCK, systemClock } from '../core/ports/clock.js';
import { CONFIG, ENTITY_MANAGER, LOGGER, type Token } from '../core/tokens.js';
import { secureDataDir } from './data-dir.js';
import { openDatabase } from './db/orm.js';
import { dependencyOrder, tokenName, type Binding } from './dependency-order.js';
import { KernelError } from './kernel-error.js';
import { createLogger, type Logger } from './logger.js';
import { loadPlugins } from './plugin-loader.js';
import { entitiesOf, plugins as shippedPlugins } from './plugins.js';
import { services } from './services.js';
import { withTimeout } from '../core/with-timeout.js';

export { KernelError };

/** Single-binding ports that configuration picks by the key of the same name; the others have one plugin. */
const chosenBy: Partial<Record<SinglePort, keyof HoistConfig>> = {
  storage: 'storage',
  queue: 'queue',
  deployer: 'deployer',
  mailer: 'mailer',
  sandbox: 'sandbox',
  changes: 'changes',
};
const multiPorts: MultiPort[] = ['analyzer', 'builder'];

/** A booted Hoist: its bindings and the hooks to stop it. */
export interface Kernel {
  config: HoistConfig;
  orm: MikroORM;
  log: Logger;
  /** Resolves a binding by token (only entry points and tests call this). */
  get<T>(token: Token<T>): T;
  /** Runs stop hooks in reverse start order, then closes the database. */
  stop(): Promise<void>;
  /** Checks that the database and every plugin's backend answer now: `ok` and, per part, `ok` or why not. */
  ready(): Promise<Readiness>;
}

/** What `Kernel.ready` found: each part (`database`, then plugin ids) with `ok` or the reason it is not. */
export interface Readiness {
  ok: boolean;
  checks: Record<string, string>;
}

/** A binding the kernel builds: a plugin, a multi port's list or a core service. */
interface Part extends Binding {
  plugin?: PluginDefinition;
  create(deps: Record<string, unknown>): unknown;
}

/**
 * The plugin configuration picks for every single-binding port, and every plugin of a multi port.
 * Throws a KernelError for an unknown choice or two plugins where nothing chooses between them.
 */
function choosePlugins(config: HoistConfig, plugins: PluginDefinition[]): PluginDefinition[] {
  const chosen: PluginDefinition[] = [];
  for (const port of Object.keys(PORT_TOKENS) as Port[]) {
    const candidates = plugins.filter((p) => p.port === port);
    if (multiPorts.includes(port as MultiPort)) {
      chosen.push(...candidates);
      continue;
    }
    if (candidates.length === 0) continue;
    const key = chosenBy[port as SinglePort];
    if (!key && candidates.length > 1)
      throw new KernelError(`plugins ${candidates.map((p) => p.id).join(' and ')} both provide ${port}; keep one`);
    const want = key ? chosenName(config, key) : candidates[0].name;
    const plugin = candidates.find((p) => p.name === want);
    if (!plugin) {
      const known = candidates.map((p) => p.name).join(', ');
      throw new KernelError(`unknown ${port} plugin ${JSON.stringify(want)} (config key ${key}); known: ${known}`);
    }
    chosen.push(plugin);
  }
  return chosen;
}

/** The plugin name config key `key` picks; `changes: auto` follows the database (postgres, else memory). */
function chosenName(config: HoistConfig, key: keyof HoistConfig): string {
  if (key === 'changes' && config.changes === 'auto') return config.db === 'postgres' ? 'postgres' : 'memory';
  return String(config[key]);
}

/** The bindings to build: the chosen plugins, each multi port's list of its plugins, and the core services. */
function partsOf(chosen: PluginDefinition[]): Part[] {
  const parts: Part[] = chosen.map((plugin) => ({
    // A multi port's plugins each get a token of their own; the port's token resolves to their list.
    token: multiPorts.includes(plugin.port as MultiPort) ? Symbol(plugin.id) : PORT_TOKENS[plugin.port],
    label: `plugin ${plugin.id}`,
    deps: plugin.deps,
    plugin,
    create: async (deps) => {
      try {
        return await plugin.create(deps);
      } catch (err) {
        throw new KernelError(`plugin ${plugin.id} is misconfigured: ${(err as Error).message}`, { cause: err });
      }
    },
  }));
  for (const port of multiPorts) {
    const members = parts.filter((p) => p.plugin?.port === port);
    parts.push({
      token: PORT_TOKENS[port],
      label: `the ${port} list`,
      deps: Object.fromEntries(members.map((p) => [p.plugin!.id, p.token])),
      create: (deps) => members.map((p) => deps[p.plugin!.id]),
    });
  }
  for (const s of services) parts.push({ token: s.provides, label: `service ${tokenName(s.provides)}`, ...s });
  return parts;
}

/**
 * Boots Hoist: loads the plugins the `plugins` setting names beside the shipped ones, creates the data
 * directory or corrects its modes (data-dir.ts), opens the database with core's entities and the
 * plugins' (applying migrations), then builds every binding (the chosen plugin of each single-binding
 * port, every multi-bound plugin, the core services) after its `deps`, and starts them in that order.
 */
export async function boot(
  config: HoistConfig,
  options: { plugins?: PluginDefinition[]; log?: Logger } = {},
): Promise<Kernel> {
  const log = options.log ?? createLogger(config.logLevel, config.logFormat);
  const known = options.plugins ?? shippedPlugins;
  // Plugins from outside come first: a builder of theirs is asked before the shipped ones.
  const plugins = [...(await loadPlugins(config.plugins, known)), ...known];
  let orm: MikroORM | undefined;
  const given = (token: symbol, label: string, value: () => unknown): Part => ({
    token,
    label,
    deps: {},
    create: value,
  });
  const parts = dependencyOrder([
    given(CONFIG, 'the configuration', () => config),
    given(LOGGER, 'the logger', () => log),
    given(CLOCK, 'the clock', () => systemClock),
    given(ENTITY_MANAGER, 'the entity manager', () => orm!.em),
    ...partsOf(choosePlugins(config, plugins)),
  ]);

  try {
    secureDataDir(config.dataDir);
  } catch (err) {
    throw new KernelError(`data directory ${config.dataDir} (dataDir): ${(err as Error).message}`, { cause: err });
  }
  try {
    // Every registered plugin's tables, chosen or not: the schema does not change with the configuration.
    orm = await openDatabase(config, entitiesOf(plugins));
  } catch (err) {
    throw new KernelError(`db plugin ${config.db}: ${(err as Error).message}`, { cause: err });
  }

  const db = orm;
  const c: DependencyContainer = root.createChildContainer();
  const built: { part: Part; instance: unknown }[] = [];
  try {
    for (const part of parts) {
      const deps = Object.fromEntries(Object.entries(part.deps).map(([k, t]) => [k, c.resolve(t)]));
      const instance = await part.create(deps);
      c.register(part.token, { useValue: instance });
      built.push({ part, instance });
    }
  } catch (err) {
    await db.close();
    throw err;
  }

  const started: Lifecycle[] = [];
  const stop = async () => {
    for (const l of started.reverse()) await l.stop?.().catch((err) => log.error({ err }, 'stop hook failed'));
    await db.close();
  };
  try {
    // Plugins have lifecycles; core services are plain objects (a `start` of theirs is a use case).
    for (const { part, instance } of built.filter((b) => b.part.plugin)) {
      const l = instance as Lifecycle;
      if (typeof l.start === 'function') {
        try {
          await l.start();
        } catch (err) {
          throw new KernelError(`${part.label} failed to start: ${(err as Error).message}`, { cause: err });
        }
      }
      if (typeof l.stop === 'function' || typeof l.start === 'function') started.push(l);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const checked = built.filter(
    ({ part, instance }) => part.plugin && typeof (instance as Lifecycle).check === 'function',
  );
  const ready = async (): Promise<Readiness> => {
    const parts: [string, () => Promise<unknown>][] = [
      ['database', () => db.em.getConnection().execute('select 1')],
      ...checked.map(({ part, instance }): [string, () => Promise<unknown>] => [
        part.plugin!.id,
        () => (instance as Lifecycle).check!(),
      ]),
    ];
    const results = await Promise.all(
      parts.map(([, check]) =>
        withTimeout(check(), 5000).then(
          () => 'ok',
          (err: Error) => err.message || String(err),
        ),
      ),
    );
    const checks = Object.fromEntries(parts.map(([id], i) => [id, results[i]]));
    return { ok: results.every((r) => r === 'ok'), checks };
  };
  log.debug({ order: built.map((b) => b.part.label) }, 'kernel booted');
  return { config, orm: db, log, get: <T>(t: Token<T>) => c.resolve<T>(t), stop, ready };
}
