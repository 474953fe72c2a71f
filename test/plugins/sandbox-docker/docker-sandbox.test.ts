import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import Docker from 'dockerode';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { plugins } from '../../../adapters/plugins.js';
import { loadConfig } from '../../../config/load.js';
import type { SandboxLimits, SandboxRun } from '../../../core/ports/sandbox.js';
import { LABEL } from '../../../plugins/sandbox-docker/box.js';
import {
  DockerSandbox,
  GVISOR_THREADS,
  type DockerSandboxOptions,
} from '../../../plugins/sandbox-docker/docker-sandbox.js';
import { EGRESS_NETWORK } from '../../../plugins/sandbox-docker/networks.js';
import { testDocker } from '../../helpers/docker.js';

const config = loadConfig(process.env, {});
const docker = testDocker();
const up = await Promise.race([
  docker.ping().then(() => true),
  new Promise<boolean>((r) => setTimeout(() => r(false), 5000)),
]).catch(() => false);

const dirs: string[] = [];
const workspace = (files: Record<string, string> = {}) => {
  const d = mkdtempSync(join(tmpdir(), 'hoist-sbx-'));
  dirs.push(d);
  for (const [name, body] of Object.entries(files)) writeFileSync(join(d, name), body);
  return d;
};
const limits: SandboxLimits = { timeMs: 30_000, memoryMb: 256, processes: 64, outputBytes: 1 << 20, diskMb: 64 };
const options = (o: Partial<DockerSandboxOptions> = {}): DockerSandboxOptions => ({
  image: config.dockerBaseImage,
  dockerHost: config.dockerHost,
  runtime: config.dockerRuntime,
  denyCidrs: [],
  serveCpuMillis: 500,
  warn: (m) => warnings.push(m),
  ...o,
});
const warnings: string[] = [];
const ownContainers = (owner: string, kind?: string) =>
  docker.listContainers({
    all: true,
    filters: { label: [`${LABEL.owner}=${owner}`, ...(kind ? [`${LABEL.kind}=${kind}`] : [])] },
  });
const ownVolumes = async (owner: string) =>
  (await docker.listVolumes({ filters: { label: [`${LABEL.owner}=${owner}`] } })).Volumes ?? [];

if (!up) console.log(`! skip: sandbox-docker tests: no Docker engine answers at ${config.dockerHost}`);
else {
  if (
    !(await docker
      .getImage(config.dockerBaseImage)
      .inspect()
      .then(
        () => true,
        () => false,
      ))
  )
    execFileSync('bash', ['scripts/docker-base-image.sh', config.dockerBaseImage], { stdio: 'inherit' });
  const sandbox = new DockerSandbox(docker, options());
  await sandbox.prepare();
  // gVisor's own threads count against the process limit, which is raised for them.
  const extra = config.dockerRuntime?.includes('runsc') ? GVISOR_THREADS : 0;

  /** Runs `command` in a fresh workspace holding `files`; resolves the result and the lines it printed. */
  const run = async (command: string, o: Partial<SandboxRun> & { files?: Record<string, string> } = {}) => {
    const lines: string[] = [];
    const ws = o.workspace ?? workspace(o.files);
    const result = await sandbox.run({
      command,
      workspace: ws,
      env: {},
      network: 'none',
      limits,
      log: (l) => lines.push(l),
      ...o,
    });
    return { result, lines, ws };
  };
  /** The JSON a command printed as its last line. */
  const json = (lines: string[]) => JSON.parse(lines.at(-1)!);

  test(
    'a run is the tenant user in /app with exactly its environment (plus HOME and ' +
      'PATH), and ends with its exit code',
    async () => {
      const { result, lines } = await run(
        `node -e "console.log(JSON.stringify({uid: process.getuid(), gid: ` +
          `process.getgid(), cwd: process.cwd(), env: process.env}))"; echo to-stderr >&2; ` +
          `exit 7`,
        {
          env: { GREETING: 'hi', NODE_OPTIONS: '--no-warnings' },
        },
      );
      assert.equal(result, { reason: 'exited', exitCode: 7, signal: null });
      const seen = JSON.parse(lines.find((l) => l.startsWith('{'))!);
      assert.not.equal(seen.uid, 0);
      assert.not.equal(seen.gid, 0);
      assert.is(seen.cwd, '/app');
      assert.equal(
        Object.keys(seen.env)
          .filter((k) => k !== 'PWD')
          .sort(),
        ['GREETING', 'HOME', 'NODE_OPTIONS', 'PATH'],
      );
      assert.is(seen.env.HOME, '/home/sandbox');
      assert.ok(lines.includes('to-stderr'));
    },
  );

  test('cwd is a folder of the workspace; one outside it is refused', async () => {
    const ws = workspace();
    execFileSync('mkdir', ['-p', join(ws, 'web/app')]);
    const { lines } = await run('node -p "process.cwd()"', { workspace: ws, cwd: 'web/app' });
    assert.equal(lines, ['/app/web/app']);
    const err = await run('true', { cwd: '../etc' }).then(
      () => null,
      (e: Error) => e,
    );
    assert.is(err?.name, 'SandboxError');
  });

  test(
    'the workspace is copied in and back: new, changed and deleted files, links ' +
      'inside; links outside are refused and said',
    async () => {
      const script = `
      const fs = require('fs');
      console.log(fs.readFileSync('in.txt', 'utf8'));
      fs.writeFileSync('in.txt', 'changed'); fs.unlinkSync('gone.txt');
      fs.mkdirSync('dist/assets', { recursive: true }); fs.writeFileSync('dist/assets/app.js', 'js');
      fs.symlinkSync('dist/assets/app.js', 'rel-link'); fs.symlinkSync('/app/dist', 'abs-link');
      fs.symlinkSync('/etc/passwd', 'passwd-link'); fs.symlinkSync('../../..', 'dist/up-link');`;
      const { result, lines, ws } = await run('node script.js', {
        files: { 'in.txt': 'original', 'gone.txt': 'x', 'script.js': script },
      });
      assert.is(result.reason, 'exited');
      assert.is(lines[0], 'original');
      assert.is(readFileSync(join(ws, 'in.txt'), 'utf8'), 'changed');
      assert.not.ok(existsSync(join(ws, 'gone.txt')));
      assert.is(readFileSync(join(ws, 'dist/assets/app.js'), 'utf8'), 'js');
      assert.is(readlinkSync(join(ws, 'rel-link')), 'dist/assets/app.js');
      assert.is(readlinkSync(join(ws, 'abs-link')), 'dist');
      assert.not.ok(existsSync(join(ws, 'passwd-link')));
      assert.not.ok(existsSync(join(ws, 'dist/up-link')));
      assert.ok(
        lines.some((l) => l.includes('/app/passwd-link') && l.includes('not copied back')),
        lines.join('\n'),
      );
      assert.ok(
        lines.some((l) => l.includes('/app/dist/up-link')),
        lines.join('\n'),
      );
    },
  );

  test('a HOME folder is copied in and back like the workspace; without one HOME is an empty tmpfs', async () => {
    const home = workspace({ '.npmrc': 'cache=x' });
    const { lines } = await run(
      `node -e "const fs=require('fs'); console.log(fs.readFileSync(process.env.HOME + ` +
        `'/.npmrc', 'utf8')); fs.writeFileSync(process.env.HOME + '/new', 'n')"`,
      { home },
    );
    assert.equal(lines, ['cache=x']);
    assert.is(readFileSync(join(home, 'new'), 'utf8'), 'n');
    const bare = await run(`node -p "require('fs').readdirSync(process.env.HOME).length"`);
    assert.equal(bare.lines, ['0']);
  });

  test(
    'the container is hardened: read-only root, no capabilities, no-new-privileges, ' +
      'limits, labels, no host path, runtime',
    async () => {
      const pending = run(`node -e "setTimeout(() => {}, 4000)"`, {
        limits: { ...limits, memoryMb: 200, processes: 50, diskMb: 32 },
      });
      let info: Docker.ContainerInspectInfo | null = null;
      for (let i = 0; i < 100 && !info; i++) {
        const [c] = await ownContainers(sandbox.owner, 'run');
        if (c?.State === 'running') info = await docker.getContainer(c.Id).inspect();
        else await new Promise((r) => setTimeout(r, 100));
      }
      await pending;
      assert.ok(info, 'the run container was seen running');
      const h = info!.HostConfig;
      assert.is(h.ReadonlyRootfs, true);
      assert.equal(h.CapDrop, ['ALL']);
      assert.equal(h.SecurityOpt, ['no-new-privileges']);
      assert.is(h.Privileged, false);
      assert.is(h.PidsLimit, 50 + extra);
      assert.is(h.Memory, 200 * 1024 * 1024);
      assert.is(h.MemorySwap, 200 * 1024 * 1024);
      assert.is(h.NanoCpus, 1_000_000_000);
      assert.equal(h.Ulimits, [{ Name: 'fsize', Soft: 32 * 1024 * 1024, Hard: 32 * 1024 * 1024 }]);
      assert.is(h.NetworkMode, 'none');
      assert.is(h.Runtime, config.dockerRuntime ?? 'runc');
      assert.ok(h.Tmpfs?.['/tmp']?.includes('size=32m'));
      assert.is(h.Binds, null);
      assert.ok(
        info!.Mounts.every((m) => m.Type === 'volume' || m.Type === 'tmpfs'),
        JSON.stringify(info!.Mounts),
      );
      assert.not.ok(info!.Mounts.some((m) => m.Source?.includes('docker.sock')));
      assert.is(info!.Config.User, '10001:10001');
      assert.is(info!.Config.Labels['hoist.managed'], 'true');
      assert.is(info!.Config.Labels['hoist.sandbox'], 'run');
      const { lines } = await run(
        `node -e "const s=require('fs').readFileSync('/proc/self/status','utf8'); ` +
          `console.log(/CapEff:\\s*(\\w+)/.exec(s)[1], (/NoNewPrivs:\\s*(\\d)/.exec(s) || ` +
          `[0, 'unknown'])[1])"; { echo x > /etc/hoist-test; } 2>/dev/null || echo ` +
          `read-only`,
      );
      // gVisor's /proc does not show NoNewPrivs.
      assert.equal(lines, [extra ? lines[0] : '0000000000000000 1', 'read-only']);
      assert.match(lines[0], extra ? /^0000000000000000 (1|unknown)$/ : /^0000000000000000 1$/);
    },
  );

  test('every object of a run is removed afterwards', async () => {
    await run('exit 0');
    assert.equal(
      (await ownContainers(sandbox.owner)).map((c) => c.Labels[LABEL.kind]),
      ['owner'],
    );
    assert.equal(await ownVolumes(sandbox.owner), []);
  });

  test('a run past its time is stopped: timeout', async () => {
    const began = Date.now();
    const { result } = await run(`node -e "setInterval(() => {}, 1000)"`, { limits: { ...limits, timeMs: 1500 } });
    assert.equal(result, { reason: 'timeout', exitCode: null, signal: 'SIGKILL' });
    assert.ok(Date.now() - began < 10_000);
  });

  test('a run past its memory is killed: memory', async () => {
    const { result } = await run(`node -e "const a = []; for (;;) a.push(Buffer.alloc(1 << 20, 1))"`, {
      limits: { ...limits, memoryMb: 96 },
    });
    assert.equal(result, { reason: 'memory', exitCode: null, signal: 'SIGKILL' });
  });

  test('a run cannot start more processes than its limit', async () => {
    const script = `
      const { spawn } = require('child_process');
      let ok = 0, failed = 0;
      for (let i = 0; i < 100; i++) {
        try {
          const c = spawn('/bin/sh', ['-c', 'read _'], { stdio: ['pipe', 'ignore', 'ignore'] });
          c.on('error', () => failed++);
          c.on('spawn', () => ok++);
        } catch { failed++; }
      }
      setTimeout(() => { console.log(JSON.stringify({ ok, failed })); process.exit(0); }, 1500);`;
    const { lines, result } = await run('node spawn.js', {
      files: { 'spawn.js': script },
      limits: { ...limits, processes: 32 },
    });
    if (extra && !lines.length) {
      // gVisor's Sentry panics when it cannot make a host thread: the whole sandbox ends.
      assert.is(result.reason, 'exited');
      assert.not.equal(result.exitCode, 0);
      return;
    }
    const { ok, failed } = json(lines);
    assert.ok(ok > 0 && ok < 32 + extra, `${ok} processes started`);
    assert.ok(failed > 0, `${failed} refused`);
  });

  test('a run printing past its output limit is stopped: output; what it printed up to there is logged', async () => {
    const { result, lines } = await run(
      `node -e "const l = 'x'.repeat(999); for (let i = 0; i < 10000; i++) console.log(l)"`,
      { limits: { ...limits, outputBytes: 50_000 } },
    );
    assert.equal(result, { reason: 'output', exitCode: null, signal: 'SIGKILL' });
    assert.ok(lines.length > 0 && lines.length <= 50, `${lines.length} lines`);
  });

  test(
    'disk: a file past the limit cannot be written, /tmp fills up, a larger workspace ' + 'is not copied back',
    async () => {
      const small = { ...limits, diskMb: 16 };
      const big = await run(
        `node -e "try { require('fs').writeFileSync('/tmp/big', Buffer.alloc(20 << 20)) } ` +
          `catch (e) { console.log(e.code) }"`,
        { limits: small },
      );
      assert.ok(big.lines.includes('EFBIG'), big.lines.join('\n'));
      const shell = await run(`printf '%20000000s' x > /tmp/big`, { limits: small });
      assert.equal(shell.result, { reason: 'disk', exitCode: null, signal: 'SIGXFSZ' });
      const full = await run(
        `node -e "const fs=require('fs'); try { for (let i = 0; i < 3; i++) ` +
          `fs.writeFileSync('/tmp/f' + i, Buffer.alloc(10 << 20)) } catch (e) { ` +
          `console.log(e.code) }"`,
        { limits: small },
      );
      assert.equal(full.lines, ['ENOSPC']);
      const ws = await run(
        `node -e "for (let i = 0; i < 3; i++) require('fs').writeFileSync('f' + i, Buffer.alloc(10 << 20))"`,
        { limits: small },
      );
      assert.is(ws.result.reason, 'disk');
      // Measured while it runs (the engine is local here): a run that keeps writing is stopped.
      const began = Date.now();
      const filler = await run('i=0; while :; do head -c 4000000 /dev/zero > "f$i"; i=$((i+1)); sleep 0.2; done', {
        limits: small,
      });
      assert.equal(filler.result, { reason: 'disk', exitCode: null, signal: 'SIGKILL' });
      assert.ok(Date.now() - began < 15_000);
    },
  );

  test('a canceled run is stopped at once: canceled; one canceled before it starts never starts', async () => {
    const ac = new AbortController();
    let began = 0;
    const log = (line: string) => {
      if (line !== 'started') return;
      began = Date.now();
      setTimeout(() => ac.abort(), 300);
    };
    const result = await sandbox.run({
      command: `echo started; node -e "setInterval(() => {}, 1000)"`,
      workspace: workspace(),
      env: {},
      network: 'none',
      limits,
      signal: ac.signal,
      log,
    });
    assert.equal(result, { reason: 'canceled', exitCode: null, signal: 'SIGKILL' });
    assert.ok(Date.now() - began < 5000);
    const early = await run('exit 0', { signal: AbortSignal.abort() });
    assert.is(early.result.reason, 'canceled');
  });

  /** Tries TCP connections from a run on `network` to each `host:port`; resolves what each did. */
  const probe = async (network: 'none' | 'egress', targets: string[]) => {
    const script = `
      const net = require('net');
      const one = (t) => new Promise((resolve) => {
        const [host, port] = t.split(':');
        const s = net.connect({ host, port: Number(port), timeout: 3000 });
        s.on('connect', () => { s.destroy(); resolve('connected'); });
        s.on('timeout', () => { s.destroy(); resolve('timeout'); });
        s.on('error', (e) => resolve(e.code));
      });
      Promise.all(process.argv.slice(2).map(one)).then((r) => console.log(JSON.stringify(r)));`;
    const { lines } = await run(`node probe.js ${targets.join(' ')}`, { files: { 'probe.js': script }, network });
    return Object.fromEntries(targets.map((t, i) => [t, json(lines)[i]]));
  };

  /** A TCP server on `host` of this machine, counting connections. */
  const server = async (host: string) => {
    let connections = 0;
    const s = net.createServer((c) => {
      connections++;
      c.end('hello');
    });
    await new Promise<void>((r) => s.listen(0, host, r));
    return {
      port: (s.address() as net.AddressInfo).port,
      connections: () => connections,
      close: () => new Promise((r) => s.close(r)),
    };
  };

  const hostAddresses = () =>
    Object.values(networkInterfaces())
      .flat()
      .filter((a) => a && a.family === 'IPv4' && !a.internal)
      .map((a) => a!.address);

  test('network none: loopback only', async () => {
    const { lines } = await run(`node -p "Object.keys(require('os').networkInterfaces()).join(',')"`);
    assert.equal(lines, ['lo']);
    const r = await probe('none', ['1.1.1.1:53', '172.17.0.1:2375']);
    assert.ok(
      Object.values(r).every((v) => v !== 'connected'),
      JSON.stringify(r),
    );
  });

  test(
    'egress reaches neither this host (any of its addresses, its loopback) nor ' +
      'metadata nor private ranges, and reaches out when the host does',
    async () => {
      const open = await server('0.0.0.0');
      const local = await server('127.0.0.1');
      const gateway = (await docker.getNetwork(EGRESS_NETWORK).inspect()).IPAM?.Config?.[0]?.Gateway;
      // The host (its every address, its loopback), metadata, and private ranges where Hoist's services live.
      const targets = [
        `${gateway}:${open.port}`,
        ...hostAddresses().map((a) => `${a}:${open.port}`),
        `127.0.0.1:${local.port}`,
        `${gateway}:${local.port}`,
        '169.254.169.254:80',
        '10.0.2.2:5432',
        '192.168.1.1:4222',
        '172.17.0.1:2375',
      ];
      const enforced = process.getuid?.() === 0 && existsSync(`/sys/class/net/${EGRESS_NETWORK}`);
      try {
        const r = await probe('egress', targets);
        if (enforced) {
          assert.ok(
            Object.values(r).every((v) => v !== 'connected'),
            JSON.stringify(r),
          );
          assert.is(open.connections() + local.connections(), 0);
        } else
          assert.ok(
            warnings.some((w) => w.includes('can reach this host')),
            warnings.join('\n'),
          );
      } finally {
        await open.close();
        await local.close();
      }
      const hostOut = await new Promise<boolean>((resolve) => {
        const s = net.connect(
          { host: 'registry.npmjs.org', port: 443, timeout: 5000 },
          () => (s.destroy(), resolve(true)),
        );
        s.on('error', () => resolve(false)).on('timeout', () => (s.destroy(), resolve(false)));
      });
      if (hostOut)
        assert.equal(await probe('egress', ['registry.npmjs.org:443']), { 'registry.npmjs.org:443': 'connected' });
      else console.log('! this host cannot reach registry.npmjs.org: the egress positive check is skipped');
    },
  );

  const serverScript = `
    const http = require('http'), fs = require('fs'), net = require('net');
    http.createServer((req, res) => {
      if (req.url.startsWith('/probe/')) {
        const [host, port] = req.url.slice(7).split(':');
        const s = net.connect({ host, port: Number(port), timeout: 2000 });
        const done = (r) => { s.destroy(); res.end(r); };
        s.on('connect', () => done('connected')).on('timeout', () => done('timeout')).on('error', (e) => done(e.code));
        return;
      }
      let write = 'ok';
      try { fs.writeFileSync('/app/x', 'x') } catch (e) { write = e.code }
      res.end(JSON.stringify({ uid: process.getuid(), port: process.env.PORT, write }));
    }).listen(process.env.PORT, () => console.log('listening'));`;

  const answer = async (url: string) => {
    for (let i = 0; i < 100; i++) {
      // A try that gets no answer in 5 s is given up (undici would wait 300 s for the headers).
      const r = await fetch(url, { signal: AbortSignal.timeout(5000) }).then(
        (x) => x.text(),
        () => null,
      );
      if (r !== null) return r;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${url} did not answer`);
  };

  test(
    'serve: the release answers at its address on the sandbox network, read-only ' +
      '/app, PORT; stop ends it and removes everything',
    async () => {
      const lines: string[] = [];
      const service = await sandbox.serve({
        command: 'node server.js',
        workspace: workspace({ 'server.js': serverScript }),
        env: {},
        network: 'egress',
        port: 3000,
        limits,
        log: (l) => lines.push(l),
      });
      assert.match(
        service.url,
        /^http:\/\/\d+\.\d+\.\d+\.\d+:65080$/,
        'its address on the sandbox network, through the relay',
      );
      const seen = JSON.parse(await answer(service.url));
      assert.equal(seen, { uid: 10001, port: '3000', write: 'EROFS' });
      assert.ok(lines.includes('listening'));
      const [c] = await ownContainers(sandbox.owner, 'serve');
      assert.ok(c, 'the container carries hoist.sandbox=serve and its owner');
      // Another sandbox on the same network cannot reach it (no inter-container traffic).
      const other = await probe('egress', [service.url.slice(7)]);
      assert.not.equal(Object.values(other)[0], 'connected');
      await service.stop();
      await service.stop();
      const result = await service.exited;
      assert.is(result.reason, 'canceled');
      assert.equal((await ownContainers(sandbox.owner, 'serve')).length, 0);
      assert.equal(await ownVolumes(sandbox.owner), []);
    },
  );

  test(
    'serve: a process that exits settles exited with its code; network none still ' +
      'answers this host but reaches nothing',
    async () => {
      const quit = await sandbox.serve({
        command: 'exit 3',
        workspace: workspace(),
        env: {},
        network: 'none',
        port: 3000,
        limits,
        log: () => {},
      });
      assert.equal(await quit.exited, { reason: 'exited', exitCode: 3, signal: null });
      const service = await sandbox.serve({
        command: 'node server.js',
        workspace: workspace({ 'server.js': serverScript }),
        env: {},
        network: 'none',
        port: 3001,
        limits,
        log: () => {},
      });
      try {
        assert.is(JSON.parse(await answer(service.url)).port, '3001');
        assert.not.equal(await answer(`${service.url}/probe/1.1.1.1:443`), 'connected');
      } finally {
        await service.stop();
      }
    },
  );

  test('a crashed owner: its containers die with it, and the next start removes what it left', async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'test/plugins/sandbox-docker/crash-owner.ts'], {
      stdio: ['ignore', 'pipe', 'inherit'],
      env: process.env,
    });
    const owner = await new Promise<string>((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`crash-owner exited (${code})`)));
      createInterface({ input: child.stdout! }).once('line', resolve);
    });
    assert.is((await ownContainers(owner, 'serve'))[0]?.State, 'running');
    child.kill('SIGKILL');
    let state = 'running';
    for (let i = 0; i < 50 && state === 'running'; i++) {
      await new Promise((r) => setTimeout(r, 200));
      state = (await ownContainers(owner, 'serve'))[0]?.State ?? 'gone';
    }
    assert.not.equal(state, 'running', 'the service died with its owner');
    assert.ok((await ownVolumes(owner)).length > 0, 'its volume is left until the next start');
    // A dead owner that left objects without any presence, and a live one (this file's sandbox), side by side.
    await docker.createVolume({
      Name: 'hoist-sandbox-test-orphan',
      Labels: { [LABEL.owner]: 'gone-owner', [LABEL.kind]: 'files' },
    });
    const next = new DockerSandbox(docker, options());
    await next.prepare();
    try {
      assert.equal(await ownContainers(owner), []);
      assert.equal(await ownVolumes(owner), []);
      assert.equal(await ownVolumes('gone-owner'), []);
      assert.equal(
        (await ownContainers(sandbox.owner)).map((c) => c.Labels[LABEL.kind]),
        ['owner'],
        'a live owner keeps its objects',
      );
    } finally {
      await next.stop();
    }
  });

  test(
    'start fails naming what to fix: no engine (HOIST_DOCKER_HOST), no image ' +
      '(scripts/docker-base-image.sh), unknown runtime (HOIST_DOCKER_RUNTIME)',
    async () => {
      const fail = (d: Docker, o: Partial<DockerSandboxOptions>) =>
        new DockerSandbox(d, options(o)).prepare().then(
          () => null,
          (e: Error) => e,
        );
      const noEngine = await fail(new Docker({ host: '127.0.0.1', port: 1, protocol: 'http' }), {
        dockerHost: 'tcp://127.0.0.1:1',
      });
      assert.match(String(noEngine?.message), /HOIST_DOCKER_HOST/);
      assert.match(
        String((await fail(docker, { image: 'hoist-no-such-image:none' }))?.message),
        /scripts\/docker-base-image\.sh/,
      );
      assert.match(String((await fail(docker, { runtime: 'no-such-runtime' }))?.message), /HOIST_DOCKER_RUNTIME/);
    },
  );

  test(
    'the plugin is chosen by sandbox=docker and refuses a sandboxDenyCidrs that is ' + 'not a list of ranges',
    async () => {
      const plugin = plugins.find((p) => p.port === 'sandbox' && p.name === 'docker')!;
      assert.is(plugin.id, 'sandbox-docker');
      const get = (() => ({ warn: () => {} })) as never;
      const made = (await plugin.create({
        config: loadConfig({ HOIST_SANDBOX: 'docker', HOIST_SANDBOX_DENY_CIDRS: '10.9.0.0/16, 192.0.2.7' }),
        get,
      })) as DockerSandbox;
      assert.is(made.id, 'sandbox-docker');
      const err = await Promise.resolve()
        .then(() =>
          plugin.create({
            config: loadConfig({ HOIST_SANDBOX: 'docker', HOIST_SANDBOX_DENY_CIDRS: '10.9.0.0/99' }),
            get,
          }),
        )
        .then(
          () => null,
          (e: Error) => e,
        );
      assert.match(String(err?.message), /sandboxDenyCidrs/);
    },
  );

  test.after(async () => {
    await sandbox.stop();
    dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
  });
  test.run();
}
