// Authenticated API reads against a bare fastify that answers the same JSON body after checking the
// Authorization header: GET /api/v1/operations/{id} (a finished deploy's) and GET /api/v1/me,
// `wrk -t2 -c50 -d5s`, Hoist and fastify alternating, each pair run ROUNDS times (median kept).
// Embedded defaults; HOIST_DB=postgres runs Hoist on a fresh database of the test PostgreSQL instead.
// Run: node --import tsx bench/api-vs-fastify.ts [rounds]   Prints figures; never fails on the clock.
import Fastify from 'fastify';
import { loadavg } from 'node:os';
import { freshPgDatabase } from '../test/helpers/kernel.js';
import { httpRequest, sideBySide, startBenchHoist, type WrkTarget } from './bench-hoist.js';

const ROUNDS = Number(process.argv[2] ?? 2);
const TARGET = 0.5;

const postgres = process.env.HOIST_DB === 'postgres';
const db = postgres ? await freshPgDatabase() : null;
const load0 = loadavg()[0];
const hoist = await startBenchHoist(db ? { HOIST_DB: 'postgres', HOIST_DATABASE_URL: db.url } : {});
const bare = Fastify({ logger: false });
try {
  const deployed = await hoist.deploy({ name: 'bench api' }, { 'index.html': '<p>bench</p>' });
  const paths = [`/api/v1/operations/${deployed.operationId}`, '/api/v1/me'];
  // The bodies Hoist answers, served as they are by the bare fastify.
  const bodies = new Map<string, string>();
  for (const path of paths) {
    const res = await httpRequest(`${hoist.api}${path}`, { headers: hoist.auth });
    if (res.status !== 200) throw new Error(`${path}: ${res.status} ${res.body}`);
    bodies.set(path, res.body);
  }
  const expected = hoist.auth.authorization;
  for (const [path, body] of bodies)
    bare.get(path, async (req, reply) => {
      if (req.headers.authorization !== expected) return reply.code(401).send({ error: { code: 'unauthorized' } });
      return reply.type('application/json; charset=utf-8').send(body);
    });
  const bareOrigin = (await bare.listen({ port: 0, host: '127.0.0.1' })).replace('localhost', '127.0.0.1');

  const cases = paths.map((path) => ({
    name: `GET ${path.replace(deployed.operationId, '{id}')}`,
    hoist: [`${hoist.api}${path}`, hoist.auth] as WrkTarget,
    others: [{ label: 'bare fastify', at: [`${bareOrigin}${path}`, hoist.auth] as WrkTarget, target: TARGET }],
  }));
  const on = postgres ? 'PostgreSQL' : 'embedded defaults, SQLite';
  await sideBySide(`API vs a bare fastify answering the same body (${on})`, cases, ROUNDS, load0);
} finally {
  await bare.close();
  await hoist.close();
  await db?.drop();
}
