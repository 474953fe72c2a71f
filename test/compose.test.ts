import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { loadConfig } from '../config/load.js';
import { settings } from '../config/schema.js';
import { hoistBin } from './helpers/cli.js';

// docker-compose.yml cannot be started here (no image registry): this keeps it correct by reading.
const compose = parse(readFileSync('docker-compose.yml', 'utf8'), { merge: true });
const roles = ['api', 'worker', 'edge'] as const;
const knownEnv = new Set<string>(Object.values(settings).map((s) => s.env));

/** What `npx hoist secrets --env >> .env` writes, as compose reads it from .env. */
const dotEnv = (): Record<string, string> => {
  const out = execFileSync(process.execPath, [hoistBin, 'secrets', '--env'], { encoding: 'utf8' });
  return Object.fromEntries(
    out
      .trim()
      .split('\n')
      .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
  );
};
const generated = dotEnv();

/**
 * A service's environment as compose interpolates it with the variables of `dotenv`: `${VAR:-default}`
 * is VAR or the default; `${VAR:?message}` is VAR, and without it compose stops with the message.
 */
const envOf = (service: string, dotenv: Record<string, string> = generated): Record<string, string> =>
  Object.fromEntries(
    Object.entries<string>(compose.services[service].environment ?? {}).map(([k, v]) => [
      k,
      String(v).replace(
        /\$\{([A-Z_]+)(?::([-?])([^}]*))?\}/g,
        (_, name: string, kind: string | undefined, rest: string) => {
          if (dotenv[name] !== undefined && dotenv[name] !== '') return dotenv[name];
          if (kind === '?') throw new Error(`required variable ${name} is missing a value: ${rest}`);
          return kind === '-' ? rest : '';
        },
      ),
    ]),
  );

/** What the production plugins need in every role; the values that pick the plugins are fixed. */
const needed = {
  HOIST_DB: 'postgres',
  HOIST_DATABASE_URL: null,
  HOIST_QUEUE: 'nats',
  HOIST_NATS_URL: null,
  HOIST_STORAGE: 'minio',
  HOIST_S3_ENDPOINT: null,
  HOIST_S3_ACCESS_KEY: null,
  HOIST_S3_SECRET_KEY: null,
  HOIST_S3_BUCKET: null,
  HOIST_DEPLOYER: 'docker',
  HOIST_DOCKER_HOST: null,
  HOIST_DOCKER_NETWORK: null,
  HOIST_DOCKER_BASE_IMAGE: null,
  // Shared between processes: a token one API signs, another checks; a value the API encrypts, a worker decrypts.
  HOIST_JWT_SECRET: null,
  HOIST_MASTER_KEY: null,
  HOIST_HOST: '0.0.0.0',
  HOIST_DATA_DIR: null,
  HOIST_PUBLIC_URL: null,
  HOIST_APPS_DOMAIN: null,
} as Record<string, string | null>;

test('the api, worker and edge roles run as separate services of one image', () => {
  for (const role of roles) {
    const s = compose.services[role];
    assert.ok(s, `service ${role}`);
    assert.equal(s.command, [role], `${role} runs \`hoist ${role}\``);
    assert.is(s.build, '.');
  }
  for (const backend of ['postgres', 'nats', 'minio']) assert.ok(compose.services[backend], `service ${backend}`);
  assert.ok(compose.services.nats.command.includes('-js'), 'NATS runs with JetStream');
});

test('every role names every variable the production configuration needs', () => {
  for (const role of roles) {
    const env = envOf(role);
    for (const [name, value] of Object.entries(needed)) {
      assert.ok(env[name], `${role} sets ${name}`);
      if (value !== null) assert.is(env[name], value, `${role}: ${name}=${value}`);
    }
  }
});

test("every variable named is one Hoist reads, and each role's configuration loads", () => {
  for (const role of roles) {
    const env = envOf(role);
    for (const name of Object.keys(env)) assert.ok(knownEnv.has(name), `${role}: ${name} is a configuration variable`);
    const config = loadConfig(env);
    assert.is(config.db, 'postgres');
    assert.is(config.queue, 'nats');
  }
});

test('every process shares the secrets and the backends', () => {
  const [first, ...rest] = roles.map((role) => envOf(role));
  for (const env of rest) {
    for (const name of [
      'HOIST_JWT_SECRET',
      'HOIST_MASTER_KEY',
      'HOIST_DATABASE_URL',
      'HOIST_NATS_URL',
      'HOIST_S3_ENDPOINT',
      'HOIST_S3_BUCKET',
    ]) {
      assert.is(env[name], first[name], `${name} is the same in every role`);
    }
  }
});

test(
  'the shared secrets come only from .env: compose refuses to start without them, ' +
    'naming the command that makes them',
  () => {
    const source = readFileSync('docker-compose.yml', 'utf8');
    assert.not.match(source, /change-me/i, 'no placeholder secret is shipped');
    for (const role of roles) {
      for (const name of ['HOIST_JWT_SECRET', 'HOIST_MASTER_KEY']) {
        assert.match(
          String(compose.services[role].environment[name]),
          new RegExp(`^\\$\\{${name}:\\?[^}]*npx hoist secrets --env >> \\.env\\}$`),
          `${role}: ${name} is required, with no default`,
        );
        const { [name]: _, ...without } = generated;
        try {
          envOf(role, without);
          assert.unreachable(`${role} starts without ${name}`);
        } catch (err) {
          assert.match(
            (err as Error).message,
            `${name} is missing a value: is not set; run npx hoist secrets --env >> .env`,
          );
        }
      }
    }
    assert.match(source, 'npx hoist secrets --env >> .env', 'the header says how to make them');
  },
);

test('`hoist secrets --env` writes a good .env: fresh random values each time that the configuration accepts', () => {
  const again = dotEnv();
  assert.equal(Object.keys(generated).sort(), ['HOIST_JWT_SECRET', 'HOIST_MASTER_KEY']);
  for (const name of Object.keys(generated)) assert.is.not(again[name], generated[name], `${name} is new each time`);
  assert.ok(Buffer.byteLength(generated.HOIST_JWT_SECRET) >= 32);
  const [id, key] = generated.HOIST_MASTER_KEY.split(':');
  assert.match(id, /^[A-Za-z0-9_.-]+$/);
  assert.is(Buffer.from(key, 'base64').length, 32);
  const config = loadConfig(envOf('api'));
  assert.is(config.jwtSecret, generated.HOIST_JWT_SECRET);
  assert.is(config.masterKey, generated.HOIST_MASTER_KEY);
});

test('the worker reaches the Docker engine, and the edge joins the release network', () => {
  const network = envOf('worker').HOIST_DOCKER_NETWORK;
  const socket = envOf('worker').HOIST_DOCKER_HOST.replace(/^unix:\/\//, '');
  assert.ok(
    compose.services.worker.volumes.some((v: string) => v.startsWith(`${socket}:`)),
    'the socket is mounted',
  );
  assert.is(compose.networks.hoist.name, network);
  for (const role of ['worker', 'edge'])
    assert.ok(compose.services[role].networks.includes('hoist'), `${role} is on ${network}`);
  assert.ok(compose.services.api.ports.some((p: string) => p.endsWith(':3000')));
  assert.ok(compose.services.edge.ports.some((p: string) => p.endsWith(':8080')));
});

test.run();
