import { existsSync, lstatSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { HOME_DIR as HOME } from '../../core/ports/sandbox.js';
import { SLIRP_DNS } from './network.js';

/** The uid and gid tenant code has inside the namespace (outside it is the run's own host uid). */
export const INSIDE_ID = 1000;

// System paths a run sees read-only: the tools (/usr, with /bin, /lib... wherever they are real
// directories) and the few files of /etc that programs read to run and to reach the network.
const SYSTEM = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32'];
const ETC = [
  'ssl',
  'ca-certificates',
  'alternatives',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'nsswitch.conf',
  'localtime',
  'os-release',
  'debian_version',
  'gai.conf',
  'host.conf',
  'mime.types',
  'protocols',
  'services',
  'profile',
];

/**
 * Writes the synthetic files of a sandbox's /etc (passwd and group naming only the sandbox user,
 * hosts, and resolv.conf for each network policy) into `dir`, readable by every sandbox uid.
 */
export function writeSandboxEtc(dir: string): void {
  for (const policy of ['none', 'egress']) mkdirSync(join(dir, policy), { recursive: true, mode: 0o755 });
  for (const policy of ['none', 'egress']) {
    const at = join(dir, policy);
    writeFileSync(
      join(at, 'passwd'),
      'root:x:0:0:root:/root:/usr/sbin/nologin\n' +
        `sandbox:x:${INSIDE_ID}:${INSIDE_ID}:sandbox:${HOME}:/bin/sh\n` +
        'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n',
      { mode: 0o644 },
    );
    writeFileSync(join(at, 'group'), `root:x:0:\nsandbox:x:${INSIDE_ID}:\nnogroup:x:65534:\n`, { mode: 0o644 });
    writeFileSync(join(at, 'hosts'), '127.0.0.1 localhost sandbox\n::1 localhost ip6-localhost\n', { mode: 0o644 });
    writeFileSync(join(at, 'resolv.conf'), policy === 'egress' ? `nameserver ${SLIRP_DNS}\n` : '', { mode: 0o644 });
  }
}

/** What one run mounts. */
export interface MountPlan {
  workspace: string;
  readOnlyWorkspace: boolean;
  home: string | null;
  etcDir: string;
  network: 'none' | 'egress';
  diskBytes: number;
  cwd: string;
}

/**
 * bubblewrap's arguments for the root of one run: read-only system directories, its workspace, its own HOME, /tmp and
 * /proc.
 */
export function mountArgs(plan: MountPlan): string[] {
  const args: string[] = [];
  for (const p of SYSTEM) {
    if (!existsSync(p)) continue;
    const st = lstatSync(p);
    if (st.isSymbolicLink()) args.push('--symlink', `usr${p}`, p);
    else args.push('--ro-bind', p, p);
  }
  // Node.js itself, when it lives outside the system directories (nvm, /opt).
  const nodePrefix = dirname(dirname(process.execPath));
  if (!SYSTEM.some((p) => process.execPath.startsWith(`${p}/`))) args.push('--ro-bind', nodePrefix, nodePrefix);
  for (const f of ETC) if (existsSync(`/etc/${f}`)) args.push('--ro-bind', `/etc/${f}`, `/etc/${f}`);
  for (const f of ['passwd', 'group', 'hosts', 'resolv.conf'])
    args.push('--ro-bind', join(plan.etcDir, plan.network, f), `/etc/${f}`);
  args.push('--proc', '/proc');
  // Single devices rather than --dev: --dev would make bubblewrap nest a second user namespace,
  // which slirp4netns could not join.
  for (const d of ['null', 'zero', 'full', 'random', 'urandom']) args.push('--dev-bind', `/dev/${d}`, `/dev/${d}`);
  args.push('--symlink', '/proc/self/fd', '/dev/fd', '--symlink', '/proc/self/fd/0', '/dev/stdin');
  args.push('--symlink', '/proc/self/fd/1', '/dev/stdout', '--symlink', '/proc/self/fd/2', '/dev/stderr');
  const size = String(plan.diskBytes);
  args.push('--size', size, '--tmpfs', '/dev/shm', '--size', size, '--tmpfs', '/tmp');
  if (plan.home) args.push('--bind', plan.home, HOME);
  else args.push('--size', size, '--tmpfs', HOME);
  args.push(plan.readOnlyWorkspace ? '--ro-bind' : '--bind', plan.workspace, '/app', '--chdir', plan.cwd);
  // The root itself (bubblewrap's own tmpfs, holding the mount points) is read-only too.
  args.push('--remount-ro', '/');
  return args;
}
