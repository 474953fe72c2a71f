// CPU of the reads and writes a deployment's stages and event streams make, per call, on the embedded database
// (SQLite) or, with HOIST_DB=postgres, a fresh database of the test PostgreSQL: MikroORM's findOne, against loadById
// (one plain query and the ORM's mapping of its row, core/entities/plain-sql.ts) and the plain query alone, through
// MikroORM's execute (values written into the SQL) and queryRows (values bound); nativeUpdate against updateRows.
// Each call names another of 100 projects, as a deployment's statements name its own rows.
// Run: node --import tsx bench/orm-reads.ts [calls]   Prints figures; never fails on the clock.
import { mkdtempSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { boot } from '../adapters/kernel.js';
import { loadConfig } from '../config/load.js';
import { loadById, queryRows, updateRows } from '../core/entities/plain-sql.js';
import { Project } from '../core/entities/project.js';
import { freshPgDatabase } from '../test/helpers/kernel.js';

const CALLS = Number(process.argv[2] ?? 2000);
const dataDir = mkdtempSync(join(tmpdir(), 'hoist-bench-orm-'));
const db = process.env.HOIST_DB === 'postgres' ? await freshPgDatabase() : null;
const env = db ? { HOIST_DB: 'postgres', HOIST_DATABASE_URL: db.url } : {};
const config = loadConfig(env, { dataDir, port: 0, edgePort: 0, logLevel: 'silent' });
const kernel = await boot(config);
try {
  const ids: string[] = [];
  for (let i = 0; i < 100; i++) {
    const project = Object.assign(new Project(), {
      accountId: '00000000-0000-0000-0000-000000000001',
      name: 'bench',
      slug: `bench-orm-${i}`,
      settings: { build_command: 'npm run build' },
      createdAt: new Date(),
      updatedAt: new Date(),
    });
    await kernel.orm.em.fork().persistAndFlush(project);
    ids.push(project.id);
  }
  let n = 0;
  const id = () => ids[n++ % ids.length]!;
  const sql = 'select * from projects where id = ?';
  const renamed = () => ({ name: `bench ${n}`, updatedAt: new Date() });
  const reads: [string, () => Promise<unknown>][] = [
    ['findOne', () => kernel.orm.em.fork().findOne(Project, { id: id() })],
    ['loadById', () => loadById(kernel.orm.em.fork(), Project, id())],
    ['execute', () => kernel.orm.em.getConnection().execute(sql, [id()])],
    ['queryRows', () => queryRows(kernel.orm.em.fork(), sql, [id()])],
    ['nativeUpdate', () => kernel.orm.em.fork().nativeUpdate(Project, { id: id() }, renamed())],
    ['updateRows', () => updateRows(kernel.orm.em.fork(), Project, { id: id() }, renamed())],
  ];
  const load0 = loadavg()[0];
  console.log(`a project read or renamed by its id, ${CALLS} calls each after 300 to warm up, database ${config.db}`);
  console.log(`${'call'.padEnd(14)} ${'CPU µs'.padStart(8)} ${'wall µs'.padStart(8)}`);
  for (const [name, read] of reads) {
    for (let i = 0; i < 300; i++) await read();
    const cpu = process.cpuUsage();
    const t = performance.now();
    for (let i = 0; i < CALLS; i++) await read();
    const used = process.cpuUsage(cpu);
    const wallUs = (performance.now() - t) * 1000;
    const perCall = (n: number) => (n / CALLS).toFixed(0).padStart(8);
    console.log(`${name.padEnd(14)} ${perCall(used.user + used.system)} ${perCall(wallUs)}`);
  }
  console.log(
    `load average ${load0.toFixed(1)} at start, ${loadavg()[0].toFixed(1)} at end (${availableParallelism()} cores)`,
  );
} finally {
  await kernel.stop();
  await db?.drop();
  rmSync(dataDir, { recursive: true, force: true });
}
