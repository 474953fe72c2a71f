import { createRequire } from 'node:module';
import type { FastifyServerOptions } from 'fastify';

type Compile = (route: object) => (data: unknown) => unknown;
type Build = (externalSchemas: unknown, options: unknown) => Compile;

// fastify's own default compilers: the copies fastify itself loads, resolved from where it is installed.
const fromFastify = createRequire(createRequire(import.meta.url).resolve('fastify'));
const validators = (fromFastify('@fastify/ajv-compiler') as () => Build)();
const serializers = (fromFastify('@fastify/fast-json-stringify-compiler') as () => Build)();

/** The compiles no request has needed yet. */
const pending = new Set<() => unknown>();

/**
 * Compiles every schema no request has needed yet and returns how many; throws as the start would have
 * when one does not compile (a test calls it, so a broken schema cannot wait for its first request).
 */
export function compilePendingSchemas(): number {
  const all = [...pending];
  for (const force of all) force();
  return all.length;
}

/**
 * fastify's default validators (Ajv) and serializers (fast-json-stringify), each compiled on its route's
 * first use instead of when the server starts: compiling every route's schemas was a fifth of the API's start-up.
 * (fastify then passes header schemas as they are written: name headers in lower case.)
 */
export function lazySchemas(): FastifyServerOptions['schemaController'] {
  const lazy =
    (build: Build, copyErrors: boolean): Build =>
    (externalSchemas, options) => {
      const compile = build(externalSchemas, options);
      return (route) => {
        let compiled: ((data: unknown) => unknown) & { errors?: unknown };
        const force = () => {
          pending.delete(force);
          return (compiled ??= compile(route));
        };
        pending.add(force);
        const run = (data: unknown) => {
          if (!compiled) force();
          const result = compiled(data);
          // fastify reads a validator's errors from the function it was given.
          if (copyErrors) run.errors = compiled.errors;
          return result;
        };
        run.errors = undefined as unknown;
        return run;
      };
    };
  return {
    compilersFactory: {
      buildValidator: lazy(validators, true) as never,
      buildSerializer: lazy(serializers, false) as never,
    },
  };
}
