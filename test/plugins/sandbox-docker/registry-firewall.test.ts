import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { loadConfig } from '../../../config/load.js';
import { DockerSandbox } from '../../../plugins/sandbox-docker/docker-sandbox.js';
import { EGRESS_NETWORK } from '../../../plugins/sandbox-docker/networks.js';
import { GUARD_CHAIN } from '../../../plugins/shared/docker/firewall.js';
import { testDocker } from '../../helpers/docker.js';

const config = loadConfig(process.env, {});
const docker = testDocker();
const up = await Promise.race([
  docker.ping().then(() => true),
  new Promise<boolean>((r) => setTimeout(() => r(false), 5000)),
]).catch(() => false);

// A machine of the private network (a network namespace behind a veth pair) that serves the npm registry on
// REGISTRY_PORT and, on OTHER_PORT, something of Hoist's (PostgreSQL's port).
const NS = 'hoist-test-reg';
const HOST_SIDE = 'hoist-treg-h';
const LAN_HOST = '10.213.77.2';
const REGISTRY_PORT = 4873;
const OTHER_PORT = 5432;
const SECRET = 'hoist-registry-host-secret';

const sh = (...argv: string[]) => execFileSync(argv[0], argv.slice(1), { stdio: 'pipe' }).toString();
const quiet = (...argv: string[]) => {
  try {
    sh(...argv);
  } catch {
    // Already gone.
  }
};
const chainRules = () => sh('iptables', '-w', '-S', GUARD_CHAIN);
const dropAllows = () => {
  for (const line of chainRules()
    .split('\n')
    .filter((l) => l.includes(` -d ${LAN_HOST}/32 `)))
    quiet('iptables', '-w', ...line.replace(/^-A /, '-D ').split(' '));
};

const enforced = process.getuid?.() === 0 && existsSync('/usr/sbin/ip') && up;
if (!enforced) console.log('! skip: the registry firewall test needs root, ip and a local Docker engine');
else {
  let listener: ChildProcess | null = null;
  test.before(async () => {
    quiet('ip', 'netns', 'del', NS);
    quiet('ip', 'link', 'del', HOST_SIDE);
    sh('ip', 'netns', 'add', NS);
    sh('ip', 'link', 'add', HOST_SIDE, 'type', 'veth', 'peer', 'name', 'hoist-treg-l');
    sh('ip', 'link', 'set', 'hoist-treg-l', 'netns', NS);
    sh('ip', 'addr', 'add', '10.213.77.1/30', 'dev', HOST_SIDE);
    sh('ip', 'link', 'set', HOST_SIDE, 'up');
    sh('ip', 'netns', 'exec', NS, 'ip', 'addr', 'add', `${LAN_HOST}/30`, 'dev', 'hoist-treg-l');
    sh('ip', 'netns', 'exec', NS, 'ip', 'link', 'set', 'hoist-treg-l', 'up');
    sh('ip', 'netns', 'exec', NS, 'ip', 'route', 'add', 'default', 'via', '10.213.77.1');
    listener = spawn(
      'ip',
      [
        ...['netns', 'exec', NS, process.execPath, '-e'],
        `for (const [p, s] of [[${REGISTRY_PORT}, 'registry'], [${OTHER_PORT}, '${SECRET}']]) ` +
          `require('net').createServer((c) => c.end(s + '\\n')).listen(p, '${LAN_HOST}', () => console.log(p));`,
      ],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    // Both ports listen.
    await new Promise<void>((resolve) => {
      let n = 0;
      listener!.stdout!.on('data', (d: Buffer) => (n += String(d).trim().split('\n').length) >= 2 && resolve());
    });
    // What Hoist up to now added for a registry: every port of its host let through. Preparing removes it.
    quiet('iptables', '-w', '-N', GUARD_CHAIN);
    sh('iptables', '-w', '-I', GUARD_CHAIN, '1', '-d', LAN_HOST, '-j', 'RETURN');
  });
  test.after(() => {
    listener?.kill();
    quiet('ip', 'netns', 'del', NS);
    quiet('ip', 'link', 'del', HOST_SIDE);
    dropAllows();
  });

  test('a private npm registry is reached from egress on its port only, not the other ports of its host', async () => {
    const sandbox = new DockerSandbox(docker, {
      image: config.dockerBaseImage,
      dockerHost: config.dockerHost,
      runtime: config.dockerRuntime,
      denyCidrs: [],
      npmRegistry: `http://${LAN_HOST}:${REGISTRY_PORT}/`,
      serveCpuMillis: 500,
      warn: () => {},
    });
    const workspace = mkdtempSync(join(tmpdir(), 'hoist-sbx-reg-'));
    try {
      await sandbox.prepare();
      assert.ok(existsSync(`/sys/class/net/${EGRESS_NETWORK}`), 'the egress bridge is on this machine');
      const rules = chainRules();
      assert.not.match(rules, new RegExp(`-d ${LAN_HOST}/32 -j RETURN`), 'the every-port rule is gone');
      assert.match(rules, new RegExp(`-d ${LAN_HOST}/32 -p tcp -m tcp --dport ${REGISTRY_PORT} -j RETURN`));
      const lines: string[] = [];
      const probe =
        `for (const p of [${REGISTRY_PORT}, ${OTHER_PORT}]) { const s = require('net').connect(p, '${LAN_HOST}'); ` +
        "s.setTimeout(3000); s.on('data', (d) => console.log(p, String(d).trim())); " +
        "s.on('error', (e) => console.log(p, e.code)); " +
        "s.on('timeout', () => (console.log(p, 'timeout'), s.destroy())); }";
      const result = await sandbox.run({
        command: `node -e "${probe}"`,
        workspace,
        env: {},
        network: 'egress',
        limits: { timeMs: 30_000, memoryMb: 256, processes: 64, outputBytes: 1 << 20, diskMb: 64 },
        log: (l) => lines.push(l),
      });
      assert.is(result.reason, 'exited', lines.join('\n'));
      assert.equal(lines.sort(), [`${REGISTRY_PORT} registry`, `${OTHER_PORT} ECONNREFUSED`]);
      assert.not.ok(lines.some((l) => l.includes(SECRET)));
    } finally {
      await sandbox.stop();
      rmSync(workspace, { recursive: true, force: true });
    }
  });
}

test.run();
