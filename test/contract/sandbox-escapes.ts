import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { networkInterfaces } from 'node:os';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox, SandboxService } from '../../core/ports/sandbox.js';
import { limits, runIn } from './sandbox.js';

/** What the escape suite attacks: a sandbox and a data directory holding Hoist's secrets. */
export interface EscapeTarget {
  sandbox: Sandbox;
  /** A data directory as Hoist keeps it (jwt.key, master-keys.json, hoist.sqlite, work/). */
  dataDir: string;
  /** A fresh workspace under `<dataDir>/work`. */
  workspace(name: string): string;
  cleanup(): Promise<void>;
}

const SECRET = 'hoist-escape-secret-7f3a';

/**
 * A node -e program (no double quotes in it) that connects to every target at once, prints `ESCAPED connect
 * host:port` for each that answers, and exits when each has connected, failed or timed out (1.5 s).
 */
function connectAll(targets: (readonly [string, number])[]): string {
  const list = targets.map(([h, p]) => `['${h}',${p}]`).join(',');
  return (
    `let n=${targets.length};const done=()=>{if(--n===0)process.exit(0)};` +
    `for(const [h,p] of [${list}]){const s=require('net').connect(p,h);s.setTimeout(1500);` +
    `s.on('connect',()=>{console.log('ESCAPED connect '+h+':'+p);s.destroy();done()});` +
    `s.on('error',done);s.on('timeout',()=>{s.destroy();done()})}`
  );
}

/**
 * A shell script that tries every way out the issue lists and prints `ESCAPED <what>` for each
 * that works. `ports` are host ports to connect to (Hoist's services), `dataDir` the host path, `sockets` unix
 * sockets of Hoist's (another release's ingress socket).
 */
export function escapeScript(dataDir: string, otherWorkspace: string, ports: number[], sockets: string[] = []): string {
  // The host's loopback, slirp's gateway to it, and every address of the host's own interfaces.
  const own = Object.values(networkInterfaces()).flatMap((l) =>
    (l ?? []).filter((a) => a.family === 'IPv4').map((a) => a.address),
  );
  const hostAddresses = [...new Set(['127.0.0.1', '10.0.2.2', '172.17.0.1', ...own])];
  return [
    `for f in ${dataDir}/jwt.key ${dataDir}/master-keys.json ${dataDir}/hoist.sqlite ` +
      `${otherWorkspace}/secret.txt /root/.bashrc /var/run/docker.sock ` +
      `/run/docker.sock ${sockets.join(' ')}; do`,
    `  if [ -e "$f" ]; then echo "ESCAPED sees $f"; fi; cat "$f" 2>/dev/null | grep ` +
      `-q ${SECRET} && echo "ESCAPED read $f"; done`,
    `ls ${dataDir} >/dev/null 2>&1 && echo "ESCAPED lists the data directory"`,
    `cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -q ${SECRET} && echo "ESCAPED read Hoist's environment"`,
    `for f in /usr/escape /etc/escape ${dataDir}/escape /escape; do (echo x > "$f") ` +
      `2>/dev/null && echo "ESCAPED wrote $f"; done`,
    // Every connection at once from one node process: one node start per address and port took longer than the
    // run's time limit on a loaded machine.
    `node -e "${connectAll(hostAddresses.flatMap((h) => ports.map((p) => [h, p] as const)))}"`,
    ...sockets.map(
      (path) =>
        `node -e "const s=require('net').connect('${path}');s.on('error',()=>{});` +
        `s.on('connect',()=>{console.log('ESCAPED connect ${path}');s.destroy()})"`,
    ),
    // Last, and after the report: it ends every process of the run, this shell's parents included.
    'echo attempts-done',
    `kill -9 -1 2>/dev/null; true`,
  ].join('\n');
}

/** The ingress socket of another tenant's release, when the sandbox gives one. */
const socketsOf = (release: SandboxService | null) => (release?.socket ? [release.socket] : []);

/** Escape attempts every Sandbox plugin must stop, as a run and as a served release. */
export function sandboxEscapes(name: string, make: () => Promise<EscapeTarget>): void {
  const t = suite<{
    e: EscapeTarget;
    servers: net.Server[];
    ports: number[];
    other: string;
    release: SandboxService | null;
  }>(`Sandbox escapes: ${name}`);
  t.before(async (ctx) => {
    process.env.HOIST_ESCAPE_MARKER = SECRET;
    ctx.e = await make();
    for (const f of ['jwt.key', 'master-keys.json', 'hoist.sqlite'])
      writeFileSync(join(ctx.e.dataDir, f), `${SECRET}\n`, { mode: 0o600 });
    ctx.other = ctx.e.workspace('other-project');
    writeFileSync(join(ctx.other, 'secret.txt'), `${SECRET}\n`);
    // Stand-ins for Hoist's API and worker on the host's loopback and on every address.
    ctx.servers = [];
    ctx.ports = [5432, 4222, 2375];
    for (const host of ['127.0.0.1', '0.0.0.0']) {
      const server = net.createServer((c) => c.end(`${SECRET}\n`));
      await new Promise<void>((r) => server.listen(0, host, r));
      ctx.servers.push(server);
      ctx.ports.push((server.address() as net.AddressInfo).port);
    }
    // Another tenant's release, published for the edge.
    const rel = ctx.e.workspace('other-release');
    writeFileSync(
      join(rel, 'app.js'),
      `require('http').createServer((q, r) => r.end('${SECRET}')).listen(Number(process.env.PORT));`,
    );
    ctx.release = await ctx.e.sandbox.serve({
      command: 'node app.js',
      workspace: rel,
      env: {},
      network: 'egress',
      port: 8080,
      limits,
      log: () => {},
    });
    ctx.ports.push(Number(new URL(ctx.release.url).port));
  });
  t.after(async (ctx) => {
    await ctx.release?.stop();
    for (const s of ctx.servers ?? []) s.close();
    await ctx.e?.cleanup();
  });

  const check = (lines: string[]) => {
    const escaped = lines.filter((l) => l.startsWith('ESCAPED') || l.includes(SECRET));
    assert.equal(escaped, [], `escaped:\n${escaped.join('\n')}`);
  };

  t(
    'a build command (egress) reaches no secret, no host path and no service of Hoist or another tenant',
    async ({ e, ports, other, release }) => {
      const script = escapeScript(e.dataDir, other, ports, socketsOf(release));
      const r = await runIn(e.sandbox, e.workspace('build'), script, {
        network: 'egress',
      });
      check(r.lines);
      assert.ok(r.lines.includes('attempts-done'), r.lines.join('\n'));
      for (const f of ['/usr/escape', '/etc/escape', join(e.dataDir, 'escape'), '/escape'])
        assert.not.ok(existsSync(f), f);
    },
  );

  t('an npm preinstall script is held the same way', async ({ e, ports, other, release }) => {
    const dir = e.workspace('npm');
    const script = escapeScript(e.dataDir, other, ports, socketsOf(release));
    writeFileSync(join(dir, 'escape.sh'), script);
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ name: 'escape', version: '1.0.0', scripts: { preinstall: 'sh escape.sh' } }),
    );
    const env = {
      npm_config_cache: '/tmp/npm',
      npm_config_update_notifier: 'false',
      npm_config_audit: 'false',
      npm_config_fund: 'false',
    };
    const r = await runIn(e.sandbox, dir, 'npm install --foreground-scripts', { network: 'egress', env });
    check(r.lines);
    assert.ok(
      r.lines.some((l) => l.includes('attempts-done')),
      r.lines.join('\n'),
    );
  });

  t(
    'a running release is held the same way, and kill -9 -1 in it harms nothing outside',
    async ({ e, ports, other, release }) => {
      const dir = e.workspace('release');
      writeFileSync(join(dir, 'escape.sh'), escapeScript(e.dataDir, other, ports, socketsOf(release)));
      const lines: string[] = [];
      const service = await e.sandbox.serve({
        command: 'sh escape.sh',
        workspace: dir,
        env: {},
        network: 'egress',
        port: 8080,
        limits,
        log: (l) => lines.push(l),
      });
      await service.exited;
      check(lines);
      assert.ok(lines.includes('attempts-done'), lines.join('\n'));
      assert.is(await fetch(release!.url).then((r) => r.text()), SECRET, 'the other release still serves');
    },
  );

  t(
    "a run's environment reaches no host process: a host library named by LD_PRELOAD loads only where it is",
    async ({ e }) => {
      // A library that leaves a mark, by its process's pid, wherever it is loaded: on the host it names a host path
      // the sandbox cannot see, so a mark means a host process (a helper that starts the sandbox) ran tenant code.
      const dir = e.workspace('preload');
      const marks = join(dir, 'marks');
      mkdirSync(marks);
      const source = join(dir, 'mark.c');
      writeFileSync(
        source,
        '#include <stdio.h>\n#include <unistd.h>\n' +
          `__attribute__((constructor)) static void mark(void) { char p[4096]; ` +
          `snprintf(p, sizeof p, "${marks}/%d", (int)getpid()); FILE *f = fopen(p, "w"); if (f) fclose(f); }\n`,
      );
      const library = join(dir, 'mark.so');
      try {
        execFileSync('cc', ['-shared', '-fPIC', '-o', library, source]);
      } catch {
        return console.log('! skip: no C compiler to build the library');
      }
      const env = { LD_PRELOAD: library, LD_LIBRARY_PATH: dir, GCONV_PATH: dir, SEEN: 'inside' };
      const r = await runIn(e.sandbox, e.workspace('preload-run'), 'echo "$SEEN $LD_PRELOAD"', { env });
      assert.ok(r.lines.includes(`inside ${library}`), `the command has its environment: ${r.lines.join('\n')}`);
      assert.equal(readdirSync(marks), [], 'no process outside the sandbox loaded the library');
    },
  );

  t(
    'a fork bomb, a memory hog, a disk filler and an endless loop are stopped while others go on',
    async ({ e, release }) => {
      const dir = (n: number) => e.workspace(`bomb-${n}`);
      const results = await Promise.all([
        runIn(e.sandbox, dir(1), 'b() { b | b & }; b; sleep 30', {
          limits: { ...limits, processes: 64, timeMs: 5_000 },
        }),
        runIn(e.sandbox, dir(2), 'node -e "const a=[]; for(;;) a.push(Buffer.alloc(1<<20).fill(1))"', {
          limits: { ...limits, memoryMb: 128 },
        }),
        runIn(e.sandbox, dir(3), 'i=0; while :; do i=$((i+1)); cat /dev/zero > "f$i"; done 2>/dev/null', {
          limits: { ...limits, diskMb: 16 },
        }),
        runIn(e.sandbox, dir(4), 'while :; do :; done', { limits: { ...limits, timeMs: 1_000 } }),
      ]);
      assert.ok(
        ['timeout', 'exited'].includes(results[0].reason),
        `the fork bomb ended: ${JSON.stringify(results[0])}`,
      );
      assert.ok(
        ['memory', 'exited'].includes(results[1].reason) && results[1].exitCode !== 0,
        JSON.stringify(results[1]),
      );
      assert.is(results[2].reason, 'disk');
      assert.is(results[3].reason, 'timeout');
      assert.is(await fetch(release!.url).then((r) => r.text()), SECRET, 'the other release still serves');
    },
  );

  t.run();
}
