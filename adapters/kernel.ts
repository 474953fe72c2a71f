import 'reflect-metadata';
import { MikroORM } from '@mikro-orm/core';
import { container as root, instanceCachingFactory, type DependencyContainer } from 'tsyringe';
import type { HoistConfig } from '../config/schema.js';
import type { Lifecycle, PluginContext, PluginDefinition, SinglePort } from '../core/plugin.js';
import { CLOCK, systemClock } from '../core/ports/clock.js';
import { CONFIG, ENTITY_MANAGER, LOGGER } from '../core/tokens.js';
import { secureDataDir } from './data-dir.js';
import { openDatabase } from './db/orm.js';
import { createLogger, type Logger } from './logger.js';
import { plugins as allPlugins } from './plugins.js';
import { services } from './services.js';

/** A start-up failure; the message names the plugin id or configuration key at fault. */
export class KernelError extends Error {
  override name = 'KernelError';
}

/** Single-binding ports and the configuration key that picks each one's plugin (fixed when absent). */
const choices: Record<SinglePort, keyof HoistConfig | null> = {
  // Ports other plugins depend on come first: each plugin is built after what it resolves.
  hasher: null,
  tokens: null,
  archive: null,
  cipher: null,
  dns: null,
  mailer: 'mailer',
  sandbox: 'sandbox',
  storage: 'storage',
  queue: 'queue',
  deployer: 'deployer',
};

/** A booted Hoist: its bindings and the hooks to stop it. */
export interface Kernel {
  config: HoistConfig;
  orm: MikroORM;
  log: Logger;
  /** Resolves a binding by token (only entry points and tests call this). */
  get<T>(token: symbol): T;
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

/**
 * Boots Hoist: creates the data directory or corrects its modes (data-dir.ts), opens the database
 * (applying migrations), registers the chosen plugin for every single-binding port and every
 * multi-bound plugin, registers core services, and runs start hooks.
 */
export async function boot(config: HoistConfig, options: { plugins?: PluginDefinition[]; log?: Logger } = {}): Promise<Kernel> {
  const log = options.log ?? createLogger(config.logLevel);
  const plugins = options.plugins ?? allPlugins;
  const c: DependencyContainer = root.createChildContainer();
  const ctx: PluginContext = { config, get: <T>(t: symbol) => c.resolve<T>(t) };

  const chosen: PluginDefinition[] = [];
  for (const [port, key] of Object.entries(choices) as [SinglePort, keyof HoistConfig | null][]) {
    const candidates = plugins.filter((p) => p.port === port);
    if (candidates.length === 0) continue;
    const want = key ? String(config[key]) : candidates[0].name;
    const plugin = candidates.find((p) => p.name === want);
    if (!plugin) {
      throw new KernelError(`unknown ${port} plugin ${JSON.stringify(want)} (config key ${String(key)}); known: ${candidates.map((p) => p.name).join(', ')}`);
    }
    chosen.push(plugin);
  }
  const multi = plugins.filter((p) => p.port === 'analyzer' || p.port === 'builder');

  try {
    secureDataDir(config.dataDir);
  } catch (err) {
    throw new KernelError(`data directory ${config.dataDir} (dataDir): ${(err as Error).message}`, { cause: err });
  }
  let orm: MikroORM;
  try {
    orm = await openDatabase(config);
  } catch (err) {
    throw new KernelError(`db plugin ${config.db}: ${(err as Error).message}`, { cause: err });
  }

  c.register(CONFIG, { useValue: config });
  c.register(LOGGER, { useValue: log });
  c.register(ENTITY_MANAGER, { useValue: orm.em });
  c.register(CLOCK, { useValue: systemClock });

  const started: Lifecycle[] = [];
  const instances: { id: string; instance: unknown }[] = [];
  for (const plugin of chosen) {
    let instance: unknown;
    try {
      instance = await plugin.create(ctx);
    } catch (err) {
      await orm.close();
      throw new KernelError(`plugin ${plugin.id} is misconfigured: ${(err as Error).message}`, { cause: err });
    }
    c.register(plugin.token, { useValue: instance });
    instances.push({ id: plugin.id, instance });
  }
  for (const port of ['analyzer', 'builder'] as const) {
    const list: unknown[] = [];
    for (const plugin of multi.filter((p) => p.port === port)) {
      const instance = await plugin.create(ctx);
      list.push(instance);
      instances.push({ id: plugin.id, instance });
    }
    const token = multi.find((p) => p.port === port)?.token;
    if (token) c.register(token, { useValue: list });
  }
  for (const s of services) {
    c.register(s.token, { useFactory: instanceCachingFactory((dc) => s.create((t) => dc.resolve(t))) });
  }

  const stop = async () => {
    for (const l of started.reverse()) await l.stop?.().catch((err) => log.error({ err }, 'stop hook failed'));
    await orm.close();
  };
  try {
    for (const { id, instance } of instances) {
      const l = instance as Lifecycle;
      if (typeof l.start === 'function') {
        try {
          await l.start();
        } catch (err) {
          throw new KernelError(`plugin ${id} failed to start: ${(err as Error).message}`, { cause: err });
        }
      }
      if (typeof l.stop === 'function' || typeof l.start === 'function') started.push(l);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const ready = async (): Promise<Readiness> => {
    const parts: [string, () => Promise<unknown>][] = [['database', () => orm.em.getConnection().execute('select 1')]];
    for (const { id, instance } of instances) {
      const l = instance as Lifecycle;
      if (typeof l.check === 'function') parts.push([id, () => l.check!()]);
    }
    const results = await Promise.all(parts.map(([, check]) => withTimeout(check(), 5000).then(() => 'ok', (err: Error) => err.message || String(err))));
    const checks = Object.fromEntries(parts.map(([id], i) => [id, results[i]]));
    return { ok: results.every((r) => r === 'ok'), checks };
  };
  log.debug({ plugins: instances.map((i) => i.id) }, 'kernel booted');
  return { config, orm, log, get: <T>(t: symbol) => c.resolve<T>(t), stop, ready };
}

/** Rejects when `p` has not settled within `ms`. */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}
