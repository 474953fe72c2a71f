import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { lchown, mkdir, readdir, rm } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import {
  HOME_DIR as HOME,
  SANDBOX_WORKSPACE,
  SandboxError,
  type Sandbox,
  type SandboxResult,
  type SandboxRun,
  type SandboxServe,
  type SandboxService,
} from '../../core/ports/sandbox.js';
import { overDisk, watchDisk } from '../shared/sandbox/disk-watch.js';
import { registryAddresses, registryPort } from '../shared/sandbox/registry-addresses.js';
import { watchRun } from '../shared/sandbox/watch-run.js';
import { detectCgroups, runCgroup, type CgroupMode, type RunCgroup } from './cgroup.js';
import { INSIDE_ID, mountArgs, writeSandboxEtc } from './mounts.js';
import { INGRESS_FD, openIngress, type Ingress } from './ingress.js';
import { closeInheritedDescriptors } from './inherited-fds.js';
import {
  GUEST,
  attachSlirp,
  deniedRanges,
  denyRuleset,
  runHelper,
  type RegistryAllowance,
  type SlirpNetwork,
} from './network.js';
import { preflight } from './preflight.js';
import { releaseUid, takeUid } from './uids.js';

export interface BwrapSandboxOptions {
  /** Hoist's data directory: the sandbox keeps its synthetic /etc and API sockets in `<dataDir>/sandbox`. */
  dataDir: string;
  /** First host uid of the runs when Hoist runs as root. */
  uidBase: number;
  /** Ranges sandboxes never reach besides the built-in ones. */
  denyCidrs: string[];
  /** The npm registry builds install from: reachable even on a private address. */
  npmRegistry?: string;
  /** CPU of a served release, thousandths of a CPU (releaseCpuMillis); a run gets RUN_CPU_MILLIS. */
  serveCpuMillis: number;
}

/** CPU of a run (an install or build command), thousandths of a CPU: one CPU, as sandbox-docker gives it. */
const RUN_CPU_MILLIS = 1000;

const SIGNALS: Record<number, string> = { 9: 'SIGKILL', 25: 'SIGXFSZ' };
/** Where a served release's shell says it has begun (a pipe to Hoist): bubblewrap's setup is over. */
const BEGAN_FD = 6;
/**
 * The socket the run's environment comes through, read by the sandbox's first shell. The host's helpers (setpriv,
 * prlimit, bubblewrap, run as Hoist's user, root on CI) start with PATH alone: a tenant's LD_PRELOAD,
 * LD_LIBRARY_PATH, GCONV_PATH or the like in their environment would have had the host's dynamic loader run tenant
 * code outside the sandbox. Not in argv either, which any user of the host can read.
 */
const ENV_FD = 7;
/** The host helpers' whole environment. */
const HOST_ENV = { PATH: '/usr/local/bin:/usr/bin:/bin' };
/** A name a shell can export. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** How long `serve` waits for a release's shell to begin before it answers all the same. */
const SETUP_WAIT_MS = 10_000;
/** Where a served release's relay listens, on the guest's address. */
const RELAY_PORT = 49151;

/** How long a failed setup waits for the rest of what bubblewrap says (its stderr closing) before it reports. */
const STDERR_WAIT_MS = 2000;
/** A line of bubblewrap's own on its stderr. */
const BWRAP_SAID = /^bwrap: /m;

/**
 * bubblewrap failed its own setup of a sandbox before the command began (it said so on its stderr): a run or a release
 * whose launch throws it is launched again, three times at most.
 */
class BwrapSetupError extends SandboxError {}

/** What `launch` hands back: the run's end, whether its command began, how to stop it, and its published port. */
type Launched = Awaited<ReturnType<BwrapSandbox['launch']>>;

const shellQuote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/** Writes `env` as `export NAME='value'` lines to the run's ENV_FD pipe, which its first shell sources. */
function handEnvironment(child: ChildProcess, env: Record<string, string>): void {
  const pipe = (child.stdio as unknown[])[ENV_FD] as NodeJS.WritableStream;
  // A run that ended before reading it (its setup failed) closed the pipe: nothing to tell.
  pipe.on('error', () => {});
  const lines = Object.entries(env).filter(([name]) => ENV_NAME.test(name));
  pipe.end(lines.map(([name, value]) => `export ${name}=${shellQuote(value)}\n`).join(''));
}

/**
 * A Node.js one-liner that relays RELAY_PORT of the guest's address, and the ingress socket at INGRESS_FD when the
 * sandbox got one, to the app's port on the loopback.
 */
function relayCommand(appPort: number, ingress: boolean): string {
  const js = [
    "const net=require('net');",
    `const relay=c=>{const u=net.connect(${appPort},'127.0.0.1');const end=()=>{c.destroy();u.destroy()};`,
    "c.on('error',end).on('close',end);u.on('error',end).on('close',end);c.pipe(u).pipe(c)};",
    `net.createServer(relay).listen(${RELAY_PORT},'${GUEST}');`,
    ingress ? `net.createServer(relay).listen({fd:${INGRESS_FD}});` : '',
  ].join('');
  return `${process.execPath} -e ${shellQuote(js)}`;
}

/**
 * Runs tenant code under bubblewrap: new user, pid, ipc, uts, cgroup, mount and network namespaces,
 * no capabilities, `--die-with-parent` and `--new-session`. When Hoist runs as root every run gets
 * its own host uid/gid (never 0, never Hoist's) from `uidBase` up, with rlimits on its processes,
 * file size and core dumps, and a cgroup (v2, or v1 as root) for memory and processes where one can
 * be made, and for CPU where it has the cpu controller too (without a cgroup, or without that controller, CPU is not
 * limited: no rlimit caps a long-running process's share of the CPU). `egress` attaches slirp4netns with the host's
 * loopback disabled, and an nftables ruleset in the sandbox's own namespace refuses the host's addresses, link-local
 * ranges and the configured ones; a served release's port is published on the host's loopback through slirp4netns'
 * API, and reached by the edge through a unix socket the sandbox inherits (ingress.ts). No other descriptor of
 * Hoist's reaches a run: the ones Hoist itself inherited open across exec are closed as the sandbox is prepared
 * (inherited-fds.ts).
 */
export class BwrapSandbox implements Sandbox {
  readonly id = 'sandbox-bwrap';
  private cgroups: CgroupMode = null;
  private readonly root = process.getuid?.() === 0;
  private readonly dir: string;
  private registry: RegistryAllowance = { addresses: [], port: null };
  private prepared: Promise<void> | null = null;

  constructor(private readonly opts: BwrapSandboxOptions) {
    this.dir = join(opts.dataDir, 'sandbox');
  }

  prepare(): Promise<void> {
    this.prepared ??= (async () => {
      await preflight();
      closeInheritedDescriptors();
      await mkdir(this.dir, { recursive: true, mode: 0o711 });
      writeSandboxEtc(join(this.dir, 'etc'));
      this.cgroups = await detectCgroups();
      this.registry = {
        addresses: await registryAddresses(this.opts.npmRegistry),
        port: registryPort(this.opts.npmRegistry),
      };
    })().catch((err) => {
      this.prepared = null;
      throw err;
    });
    return this.prepared;
  }

  async run(spec: SandboxRun): Promise<SandboxResult> {
    for (let attempt = 1; ; attempt++) {
      // bubblewrap's own failures while it sets the sandbox up (a netlink call of the kernel's
      // failing for a moment under load) come before any line of the command: such a run is
      // made again, up to three times, instead of failing the tenant's build.
      const held: string[] = [];
      let commandSpoke = false;
      const log = (line: string) => {
        if (!commandSpoke && line.startsWith('bwrap: ')) return void held.push(line);
        if (!commandSpoke) held.splice(0).forEach(spec.log);
        commandSpoke = true;
        spec.log(line);
      };
      let started: Launched;
      try {
        started = await this.launch({ ...spec, log }, false, spec.limits.timeMs);
      } catch (err) {
        // The same failure of bubblewrap's, seen by Hoist's part of the setup (the sandbox gone under it).
        if (err instanceof BwrapSetupError && attempt < 3) continue;
        throw err;
      }
      // The workspace (and HOME) are host folders: their size is watched while the run lasts, and measured once more
      // at its end (what it wrote after the last check, or all of a run shorter than one, counts too).
      const volumes = [spec.workspace, ...(spec.home ? [spec.home] : [])];
      const diskBytes = spec.limits.diskMb * 1024 * 1024;
      const stopWatching = watchDisk(volumes, diskBytes, () => started.stop('disk'));
      const result = await started.done.finally(stopWatching);
      const setupFailed = !commandSpoke && held.length > 0 && result.reason === 'exited' && result.exitCode === 1;
      if (setupFailed && attempt < 3) continue;
      held.forEach(spec.log);
      if (result.reason === 'exited' && (await overDisk(volumes, diskBytes)))
        return { reason: 'disk', exitCode: null, signal: null };
      return result;
    }
  }

  async serve(spec: SandboxServe): Promise<SandboxService> {
    const env = { ...spec.env, PORT: String(spec.port), HOST: '0.0.0.0' };
    // bubblewrap's own failure while it sets the sandbox up (as in `run`) ends it before the command has begun: the
    // release is started again, up to three times, instead of failing its deploy. It shows as an exit 1 before the
    // shell said it began, or (the sandbox gone while Hoist attached its network) as a BwrapSetupError.
    // A setup that hangs is left to the caller's health check, as before: serve answers within SETUP_WAIT_MS.
    const began = (s: Launched) => Promise.race([s.began, delay(SETUP_WAIT_MS, true, { ref: false })]);
    let started: Launched;
    for (let attempt = 1; ; attempt++) {
      try {
        started = await this.launch({ ...spec, env }, true, undefined, spec.port);
      } catch (err) {
        if (err instanceof BwrapSetupError && attempt < 3) continue;
        throw err;
      }
      if (attempt >= 3 || (await began(started))) break;
      const result = await started.done;
      if (result.reason !== 'exited' || result.exitCode !== 1) break;
    }
    return {
      url: `http://127.0.0.1:${started.hostPort}`,
      ...(started.socket && { socket: started.socket }),
      exited: started.done,
      stop: async () => {
        started.stop('canceled');
        await started.done;
      },
    };
  }

  private async launch(
    spec: Omit<SandboxRun, 'limits'> & { limits: Omit<SandboxRun['limits'], 'timeMs'> },
    readOnly: boolean,
    timeMs: number | undefined,
    /** A served release's port: published on the host's loopback, and behind an ingress socket (ingress.ts). */
    appPort?: number,
  ) {
    await this.prepare();
    const cwd = posix.join(SANDBOX_WORKSPACE, spec.cwd ?? '.');
    if (cwd !== SANDBOX_WORKSPACE && !cwd.startsWith(`${SANDBOX_WORKSPACE}/`))
      throw new SandboxError(`cwd ${JSON.stringify(spec.cwd)} leaves the workspace`);
    const name = `run-${randomBytes(6).toString('hex')}`;
    const uid = this.root ? takeUid(this.opts.uidBase) : null;
    const release = () => uid !== null && releaseUid(uid);
    let cgroup: RunCgroup | null = null;
    let net: SlirpNetwork | null = null;
    let ingress: Ingress | null = null;
    const publish = appPort === undefined ? undefined : RELAY_PORT;
    const cleanup = async () => {
      net?.close();
      await ingress?.close();
      await cgroup?.remove();
      await rm(join(this.dir, name), { recursive: true, force: true });
      release();
    };
    try {
      if (uid !== null && !readOnly) await chownTree(spec.workspace, uid);
      if (uid !== null && spec.home) await chownTree(spec.home, uid);
      const asUser =
        uid !== null
          ? ['/usr/bin/setpriv', `--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', '--inh-caps=-all']
          : [];
      let command = spec.command;
      if (appPort !== undefined) {
        await mkdir(join(this.dir, name), { mode: 0o700 });
        if (uid !== null) await lchown(join(this.dir, name), uid, uid);
        ingress = await openIngress(join(this.dir, name, 'http.sock'));
        // slirp4netns forwards to the guest's own address, not to its loopback: a relay there reaches
        // the app wherever it listens (127.0.0.1, as many apps do, or every interface).
        // The app itself does not keep the socket's descriptor (the relay accepts on it). The shell's first act
        // tells Hoist the command has begun (BEGAN_FD), and closes that descriptor.
        command =
          `printf . >&${BEGAN_FD}; exec ${BEGAN_FD}>&-; ${relayCommand(appPort, !!ingress)} & ` +
          `exec /bin/sh -c ${shellQuote(spec.command)} ${INGRESS_FD}>&-`;
      }
      const disk = spec.limits.diskMb * 1024 * 1024;
      const rlimits = ['/usr/bin/prlimit', `--nproc=${spec.limits.processes}`, `--fsize=${disk}`, '--core=0'];
      if (!this.cgroups) rlimits.push(`--data=${spec.limits.memoryMb * 1024 * 1024}`);
      const bwrap = [
        '/usr/bin/bwrap',
        '--unshare-user',
        '--unshare-pid',
        '--unshare-ipc',
        '--unshare-uts',
        '--unshare-cgroup-try',
        '--unshare-net',
        '--uid',
        String(INSIDE_ID),
        '--gid',
        String(INSIDE_ID),
        '--hostname',
        'sandbox',
        '--die-with-parent',
        '--new-session',
        '--cap-drop',
        'ALL',
        '--info-fd',
        '3',
        '--block-fd',
        '4',
        ...mountArgs({
          workspace: spec.workspace,
          readOnlyWorkspace: readOnly,
          home: spec.home ?? null,
          etcDir: join(this.dir, 'etc'),
          network: spec.network,
          diskBytes: disk,
          cwd,
        }),
        '--',
        '/bin/sh',
        '-c',
        // The environment first, read from ENV_FD (a socket: read, not opened), then closed; a shell that cannot read
        // it runs nothing.
        `hoist_env=$(cat <&${ENV_FD}) || exit 125; exec ${ENV_FD}<&-; eval "$hoist_env" || exit 125; ` +
          `unset hoist_env; ${command}`,
      ];
      const argv = [...asUser, ...rlimits, ...bwrap];
      const env = { ...HOST_ENV, HOME, TMPDIR: '/tmp', ...spec.env };
      const served: (number | 'ignore' | 'pipe')[] = appPort !== undefined ? [ingress?.fd ?? 'ignore', 'pipe'] : [];
      const child: ChildProcess = spawn(argv[0], argv.slice(1), {
        env: HOST_ENV,
        detached: true,
        // A served release's ingress socket, if any, at INGRESS_FD (5), and the pipe its shell says it has begun on,
        // at BEGAN_FD (6); the environment at ENV_FD (7): bubblewrap passes inherited descriptors on.
        stdio: [
          'ignore',
          'pipe',
          'pipe',
          'pipe',
          'pipe',
          ...(served.length ? served : ['ignore', 'ignore']),
          'pipe',
        ] as StdioOptions,
      });
      handEnvironment(child, env);
      // Whether the command began (its shell wrote to BEGAN_FD) before bubblewrap ended: a served release's only.
      const began = new Promise<boolean>((resolve) => {
        const pipe = (child.stdio as unknown[])[BEGAN_FD] as NodeJS.ReadableStream | undefined;
        if (!pipe) return resolve(true);
        pipe.once('data', () => resolve(true));
        pipe.once('close', () => resolve(false));
        pipe.once('error', () => resolve(false));
      });
      await ingress?.handOver();
      // bubblewrap closes its info and block descriptors when done with them.
      for (const fd of [child.stdio[3], child.stdio[4]]) fd?.on('error', () => {});
      const kill = () => {
        try {
          if (child.pid) process.kill(-child.pid, 'SIGKILL');
        } catch {
          // already gone
        }
      };
      // What bubblewrap says while the run is set up, for the error when the setup fails: from its start, as it may
      // give up before its info document is read.
      let setupErr = '';
      const onSetupErr = (d: Buffer) => (setupErr += d);
      child.stderr!.on('data', onSetupErr);
      let hostPort = 0;
      try {
        const sandboxPid = await readChildPid(child);
        if (this.cgroups) {
          cgroup = await runCgroup(
            this.cgroups,
            name,
            {
              memoryMb: spec.limits.memoryMb,
              processes: spec.limits.processes,
              cpuMillis: appPort === undefined ? RUN_CPU_MILLIS : this.opts.serveCpuMillis,
            },
            spec.tenant,
          );
          await cgroup.add(child.pid!);
          await cgroup.add(sandboxPid);
        }
        if (spec.network === 'egress' || publish !== undefined) {
          net = await attachSlirp(
            sandboxPid,
            asUser,
            publish !== undefined ? join(this.dir, name, 'slirp.sock') : null,
          );
          const enter = this.root
            ? ['/usr/bin/nsenter', '-t', String(sandboxPid), '-n']
            : ['/usr/bin/nsenter', '-t', String(sandboxPid), '-U', '-n', '--preserve-credentials'];
          await runHelper(
            [...enter, '/usr/sbin/nft', '-f', '-'],
            denyRuleset(deniedRanges(this.opts.denyCidrs), this.registry),
          );
        }
        hostPort = publish !== undefined ? await net!.publish(publish) : 0;
      } catch (err) {
        kill();
        // Its last words may still be on their way as the failure shows here.
        await stderrClosed(child, STDERR_WAIT_MS);
        const said = setupErr.trim();
        const known = (err as Error).message;
        const message = said && !known.includes(said) ? `${known} (bubblewrap: ${said})` : known;
        // The command waits on the block descriptor until the setup is over: a `bwrap:` line now is bubblewrap's own
        // failure (it gave up before Hoist read its sandbox's pid, or its sandbox ended under Hoist's setup: a netlink
        // call of the kernel's failing under load), not Hoist's; `run` and `serve` make such a sandbox again.
        if (BWRAP_SAID.test(said)) throw new BwrapSetupError(message, { cause: err });
        throw message !== known ? new SandboxError(message, { cause: err }) : err;
      } finally {
        child.stderr!.off('data', onSetupErr);
      }
      // Said while Hoist set the sandbox up, before any line of the command (it waits on the block descriptor): a
      // failure of bubblewrap's own that Hoist's part did not notice, which `run` and `serve` find first in the log.
      for (const line of setupErr.split('\n')) if (line.trim()) spec.log(line);
      const watch = watchRun(child, {
        timeMs,
        outputBytes: spec.limits.outputBytes,
        signal: 'signal' in spec ? (spec as SandboxRun).signal : undefined,
        log: spec.log,
        kill,
        explain: (code, sig) => {
          const signal = sig ?? (code !== null && code > 128 ? SIGNALS[code - 128] : undefined);
          if (signal === 'SIGXFSZ') return 'disk';
          return null;
        },
      });
      (child.stdio[4] as NodeJS.WritableStream).write('go');
      const done = watch.done.then(async (result) => {
        const signal =
          result.signal ?? (result.exitCode !== null && result.exitCode > 128 ? SIGNALS[result.exitCode - 128] : null);
        const oom = result.reason === 'exited' && signal === 'SIGKILL' && (await cgroup?.oomKilled());
        // The group goes once the kernel has reaped its last process; nobody waits for that. The cleanup
        // does not throw in practice (the group's removal gives up quietly, the folder's is forced).
        void cleanup().catch(() => {});
        return oom ? { reason: 'memory' as const, exitCode: null, signal: 'SIGKILL' } : result;
      });
      return { done, began, stop: watch.stop, hostPort, socket: ingress?.path };
    } catch (err) {
      await cleanup();
      throw err instanceof SandboxError
        ? err
        : new SandboxError(`the sandbox could not start: ${(err as Error).message}`, { cause: err });
    }
  }
}

/** Resolves once `child`'s stderr has closed (all it said was read), or after `ms`. */
function stderrClosed(child: ChildProcess, ms: number): Promise<void> {
  const stderr = child.stderr!;
  if (stderr.closed || stderr.destroyed) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    stderr.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/** Reads bubblewrap's info document (written once the namespaces exist) and returns the sandbox's pid. */
function readChildPid(child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    let text = '';
    let err = '';
    const onErr = (d: Buffer) => (err += d);
    child.stderr!.on('data', onErr);
    const info = child.stdio[3] as NodeJS.ReadableStream;
    const done = (fn: () => void) => {
      child.stderr!.off('data', onErr);
      child.off('exit', onExit);
      fn();
    };
    const onExit = (code: number | null) =>
      done(() =>
        reject(
          new SandboxError(`bubblewrap exited (${code}) before the sandbox started: ${err.trim() || 'no message'}`),
        ),
      );
    child.once('exit', onExit);
    child.once('error', (e) => done(() => reject(new SandboxError(`bubblewrap could not start: ${e.message}`))));
    info.on('data', (d: Buffer) => {
      text += d;
      const pid = /"child-pid":\s*(\d+)/.exec(text)?.[1];
      if (pid) done(() => resolve(Number(pid)));
    });
  });
}

/** Gives a tree to the run's uid (lchown: links are not followed). */
async function chownTree(dir: string, uid: number): Promise<void> {
  await lchown(dir, uid, uid);
  for (const e of await readdir(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) await chownTree(p, uid);
    else await lchown(p, uid, uid);
  }
}
