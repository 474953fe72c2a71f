import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Sandbox, SandboxLimits, SandboxResult, SandboxRun } from '../../core/ports/sandbox.js';

/** A sandbox under test, with a place for workspaces. */
export interface SandboxUnderTest {
  sandbox: Sandbox;
  /** A fresh, empty workspace directory on the host. */
  workspace(name: string): string;
  cleanup(): Promise<void>;
  /** Whether it gives served releases a unix socket (SandboxService.socket). */
  socket?: boolean;
}

export const limits: SandboxLimits = {
  timeMs: 30_000,
  memoryMb: 256,
  processes: 128,
  outputBytes: 1_000_000,
  diskMb: 64,
};

/** The body of GET / through the unix socket `socket` ('' when nothing answers). */
function getVia(socket: string): Promise<string> {
  return new Promise((resolve) => {
    const req = http.get({ socketPath: socket, path: '/', timeout: 2000 }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d)).on('end', () => resolve(body));
    });
    req.on('timeout', () => req.destroy()).on('error', () => resolve(''));
  });
}

/** Runs `command` and returns its result with the lines it printed. */
export async function runIn(
  sandbox: Sandbox,
  workspace: string,
  command: string,
  more: Partial<SandboxRun> = {},
): Promise<SandboxResult & { lines: string[] }> {
  const lines: string[] = [];
  const result = await sandbox.run({
    command,
    workspace,
    env: {},
    network: 'none',
    limits,
    log: (l) => lines.push(l),
    ...more,
  });
  return { ...result, lines };
}

/** The behaviour every Sandbox plugin must have (core/ports/sandbox.ts). */
export function sandboxContract(name: string, make: () => Promise<SandboxUnderTest>): void {
  const t = suite<{ s: SandboxUnderTest }>(`Sandbox contract: ${name}`);
  let n = 0;
  const ws = (ctx: { s: SandboxUnderTest }) => ctx.s.workspace(`ws-${++n}`);
  t.before(async (ctx) => {
    ctx.s = await make();
  });
  t.after(async (ctx) => {
    await ctx.s?.cleanup();
  });

  t(
    'a command runs in its workspace with exactly its environment; its exit code and lines come back',
    async ({ s }) => {
      const dir = ws({ s });
      writeFileSync(join(dir, 'in.txt'), 'from the host\n');
      process.env.HOIST_CONTRACT_MARKER = 'hoist-private-marker';
      const r = await runIn(
        s.sandbox,
        dir,
        'pwd; cat in.txt; echo "A=$A"; env | grep -c HOIST_ || true; echo made > out.txt; echo err >&2; exit 7',
        {
          env: { A: 'given' },
        },
      );
      assert.equal(r.reason, 'exited');
      assert.is(r.exitCode, 7);
      // Each stream's lines in their order; the two streams are two pipes, so one may overtake the other.
      assert.equal(
        r.lines.filter((l) => l !== 'err'),
        ['/app', 'from the host', 'A=given', '0'],
      );
      assert.ok(r.lines.includes('err'), 'stderr lines come back too');
      assert.is(readFileSync(join(dir, 'out.txt'), 'utf8'), 'made\n');
    },
  );

  t('the process is not root and not Hoist; HOME and /tmp are its own and start empty', async ({ s }) => {
    const a = ws({ s });
    const first = await runIn(
      s.sandbox,
      a,
      'id -u; echo x > "$HOME/h"; echo y > /tmp/t; ls -A "$HOME" /tmp | tr "\\n" " "',
    );
    assert.is(first.reason, 'exited');
    assert.is.not(first.lines[0], '0');
    const second = await runIn(s.sandbox, ws({ s }), '(ls -A "$HOME"; ls -A /tmp) | wc -w');
    assert.is(second.lines[0].trim(), '0', "a second run sees none of the first run's HOME or /tmp");
  });

  t('a time limit, a cancel and the output budget stop the run, with the reason', async ({ s }) => {
    const dir = ws({ s });
    const slow = await runIn(s.sandbox, dir, 'sleep 60', { limits: { ...limits, timeMs: 500 } });
    assert.is(slow.reason, 'timeout');
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const canceled = await runIn(s.sandbox, dir, 'sleep 60 & wait', { signal: ac.signal });
    assert.is(canceled.reason, 'canceled');
    const loud = await runIn(s.sandbox, dir, 'yes hoist', { limits: { ...limits, outputBytes: 100_000 } });
    assert.is(loud.reason, 'output');
    assert.ok(loud.lines.length < 100_000 / 6 + 1000, 'output past the budget is not kept');
  });

  t('a cancel that comes while the run is being set up stops it too', async ({ s }) => {
    const ac = new AbortController();
    // Aborted once run() is under way (after its first check), while it prepares: the time limit must not be the end.
    const running = runIn(s.sandbox, ws({ s }), 'sleep 60', {
      signal: ac.signal,
      limits: { ...limits, timeMs: 20_000 },
    });
    await Promise.resolve();
    ac.abort();
    assert.is((await running).reason, 'canceled');
  });

  t('memory, disk and processes are limited', async ({ s }) => {
    const dir = ws({ s });
    const hog = await runIn(s.sandbox, dir, 'node -e "const a=[]; for(;;) a.push(Buffer.alloc(1<<20).fill(1))"', {
      limits: { ...limits, memoryMb: 128 },
    });
    assert.ok(
      hog.reason === 'memory' || (hog.reason === 'exited' && hog.exitCode !== 0),
      `memory hog: ${JSON.stringify(hog)}`,
    );
    const big = await runIn(s.sandbox, dir, 'head -c 200000000 /dev/zero > big || echo refused; wc -c < big', {
      limits: { ...limits, diskMb: 32 },
    });
    assert.ok(
      big.reason === 'disk' || big.lines.includes('refused'),
      `one file past the disk limit: ${JSON.stringify(big)}`,
    );
    assert.ok(!existsSync(join(dir, 'big')) || statSync(join(dir, 'big')).size <= 32 * 1024 * 1024);
    const many = await runIn(
      s.sandbox,
      dir,
      'i=0; while [ $i -lt 100 ]; do head -c 4000000 /dev/zero > "f$i"; i=$((i+1)); done; sleep 20',
      { limits: { ...limits, diskMb: 32 } },
    );
    assert.is(many.reason, 'disk', 'many files past the disk limit stop the run');
    const bomb = await runIn(s.sandbox, dir, 'i=0; while [ $i -lt 400 ]; do sleep 5 & i=$((i+1)); done; wait', {
      limits: { ...limits, processes: 32, timeMs: 20_000 },
    });
    assert.ok(
      bomb.lines.some((l) => /fork|resource/i.test(l)),
      `the process limit refused forks: ${bomb.lines.join(' | ')}`,
    );
  });

  t('network none reaches nothing; egress reaches the npm registry', async ({ s }) => {
    const dir = ws({ s });
    const probe = (url: string) =>
      `node -e "fetch('${url}').then(r => console.log('status', r.status), e => ` +
      `console.log('refused', e.cause?.code ?? e.message))"`;
    const env: Record<string, string> = process.env.NODE_EXTRA_CA_CERTS
      ? { NODE_EXTRA_CA_CERTS: process.env.NODE_EXTRA_CA_CERTS }
      : {};
    const none = await runIn(s.sandbox, dir, probe('https://registry.npmjs.org/is-number'), { env });
    assert.match(none.lines.join('\n'), /refused/);
    const egress = await runIn(s.sandbox, dir, probe('https://registry.npmjs.org/is-number'), {
      env,
      network: 'egress',
    });
    assert.match(egress.lines.join('\n'), /status 200/);
  });

  t('serve publishes the port for the host, reports the exit and stops', async ({ s }) => {
    const dir = ws({ s });
    writeFileSync(
      join(dir, 'app.js'),
      "require('http').createServer((q, r) => r.end('served ' + process.env.WHO)).listen(Number(process.env.PORT));",
    );
    const lines: string[] = [];
    const service = await s.sandbox.serve({
      command: 'node app.js',
      workspace: dir,
      env: { WHO: 'me' },
      network: 'egress',
      port: 8080,
      limits,
      log: (l) => lines.push(l),
    });
    let body = '';
    for (let i = 0; i < 100 && !body; i++) {
      body = await fetch(service.url, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.text(),
        () => '',
      );
      if (!body) await new Promise((r) => setTimeout(r, 100));
    }
    assert.is(body, 'served me');
    assert.is(!!service.socket, !!s.socket, 'a socket is given when the sandbox gives one');
    if (service.socket) assert.is(await getVia(service.socket), 'served me');
    await service.stop();
    const ended = await service.exited;
    assert.ok(['canceled', 'exited'].includes(ended.reason));
    // Its socket goes with it.
    for (let i = 0; i < 50 && service.socket && existsSync(service.socket); i++)
      await new Promise((r) => setTimeout(r, 20));
    if (service.socket) assert.not.ok(existsSync(service.socket), 'the socket is removed');
    assert.is(
      await fetch(service.url, { signal: AbortSignal.timeout(2000) }).then(
        () => 'answered',
        () => 'gone',
      ),
      'gone',
    );

    const crash = await s.sandbox.serve({
      command: 'echo bye; exit 3',
      workspace: dir,
      env: {},
      network: 'egress',
      port: 8080,
      limits,
      log: (l) => lines.push(l),
    });
    const r = await crash.exited;
    assert.equal([r.reason, r.exitCode], ['exited', 3]);
    assert.ok(lines.includes('bye'));
  });

  t('serve reaches an app that listens on the loopback only, as on the host', async ({ s }) => {
    const dir = ws({ s });
    writeFileSync(
      join(dir, 'app.js'),
      "require('http').createServer((q, r) => r.end('loopback')).listen(Number(process.env.PORT), '127.0.0.1');",
    );
    const service = await s.sandbox.serve({
      command: 'node app.js',
      workspace: dir,
      env: {},
      network: 'egress',
      port: 3000,
      limits,
      log: () => {},
    });
    let body = '';
    for (let i = 0; i < 100 && !body; i++) {
      body = await fetch(service.url, { signal: AbortSignal.timeout(1000) }).then(
        (r) => r.text(),
        () => '',
      );
      if (!body) await new Promise((r) => setTimeout(r, 100));
    }
    // Through the release's socket too, when the sandbox gives one (the edge's way in).
    const viaSocket = service.socket ? await getVia(service.socket) : 'loopback';
    await service.stop();
    assert.is(body, 'loopback');
    assert.is(viaSocket, 'loopback');
  });

  t('a served release holds no descriptor but its standard streams', async ({ s }) => {
    const lines: string[] = [];
    const service = await s.sandbox.serve({
      command: 'ls /proc/self/fd',
      workspace: ws({ s }),
      env: {},
      network: 'egress',
      port: 8080,
      limits,
      log: (l) => lines.push(l),
    });
    await service.exited;
    // 3 is the folder `ls` reads.
    assert.equal(lines.map(Number).sort(), [0, 1, 2, 3], lines.join(' '));
  });

  t('a served release cannot write its release directory', async ({ s }) => {
    const dir = ws({ s });
    const lines: string[] = [];
    const service = await s.sandbox.serve({
      command: 'echo x > written 2>/dev/null && echo WROTE || echo refused',
      workspace: dir,
      env: {},
      network: 'none',
      port: 8080,
      limits,
      log: (l) => lines.push(l),
    });
    await service.exited;
    assert.ok(lines.includes('refused') && !lines.includes('WROTE'), lines.join('\n'));
    assert.not.ok(existsSync(join(dir, 'written')));
  });

  t.run();
}
