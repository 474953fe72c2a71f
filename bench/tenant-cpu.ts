// CPU shared between accounts, not between runs: account A serves 4 busy Node.js releases, account B one, each
// within its own CPU limit (HOIST_RELEASE_CPU_MILLIS), on a host with fewer CPUs than that asks for. Run once with
// each run its own tenant (how every run was shared before) and once with the runs' accounts as their tenants
// (SandboxRun.tenant), and print the CPU each account got. Needs root and the cgroup cpu controller (bwrap).
// Run: node --import tsx bench/tenant-cpu.ts [seconds]   Prints figures; never fails on the clock.
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { mkdirSync, writeFileSync } from 'node:fs';
import { benchSandbox } from './bench-hoist.js';

const SECONDS = Number(process.argv[2] ?? 5);
const { dataDir, config, sandbox } = await benchSandbox('hoist-bench-tenant-cpu-');
// Spins for SECONDS, then says how much CPU it had (µs), and idles until stopped.
const busy =
  `const end = Date.now() + ${SECONDS * 1000}; while (Date.now() < end); ` +
  "const u = process.cpuUsage(); console.log('CPU ' + (u.user + u.system)); setInterval(() => {}, 1e6);";

/** Serves the busy releases of `tenants` at once; the CPU each tenant's releases had together, in CPUs. */
async function round(tenants: (string | undefined)[], names: string[]): Promise<Map<string, number>> {
  const used = new Map<string, number>();
  const services = await Promise.all(
    tenants.map(async (tenant, i) => {
      const workspace = join(dataDir, `w-${names[i]}-${i}-${Math.random().toString(36).slice(2)}`);
      mkdirSync(workspace, { mode: 0o755 });
      writeFileSync(join(workspace, 'busy.js'), busy);
      let said: (cpuUs: number) => void;
      const cpu = new Promise<number>((resolve) => (said = resolve));
      const service = await sandbox.serve({
        command: 'node busy.js',
        workspace,
        env: {},
        network: 'none',
        port: 3000,
        tenant,
        limits: { memoryMb: 256, processes: 64, outputBytes: 1e6, diskMb: 64 },
        log: (line) => line.startsWith('CPU ') && said(Number(line.slice(4))),
      });
      return { service, cpu, name: names[i] };
    }),
  );
  for (const s of services) {
    const cpus = (await s.cpu) / 1e6 / SECONDS;
    used.set(s.name, (used.get(s.name) ?? 0) + cpus);
  }
  await Promise.all(services.map((s) => s.service.stop()));
  return used;
}

const accounts = ['A', 'A', 'A', 'A', 'B'];
console.log(
  `${availableParallelism()} CPUs; each release limited to ${config.releaseCpuMillis / 1000} CPU; ` +
    `A runs 4 busy releases, B one, for ${SECONDS} s (sandbox ${config.sandbox})`,
);
const flat = await round(
  accounts.map(() => undefined),
  accounts,
);
const grouped = await round(accounts, accounts);
const row = (label: string, m: Map<string, number>) =>
  console.log(`${label.padEnd(34)} A ${m.get('A')!.toFixed(2)} CPU   B ${m.get('B')!.toFixed(2)} CPU`);
row('each run its own tenant (before)', flat);
row('tenant = account (now)', grouped);
process.exit(0);
