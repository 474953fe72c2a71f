import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { promisify } from 'node:util';
import { SandboxError } from '../../core/ports/sandbox.js';

/** The tools bubblewrap sandboxes need, with the Debian package of each. */
export const TOOLS: [string, string][] = [
  ['/usr/bin/bwrap', 'bubblewrap'],
  ['/usr/bin/slirp4netns', 'slirp4netns'],
  ['/usr/sbin/nft', 'nftables'],
  ['/usr/bin/prlimit', 'util-linux'],
  ['/usr/bin/setpriv', 'util-linux'],
  ['/usr/bin/nsenter', 'util-linux'],
];

/** The TUN device slirp4netns opens. */
export const TUN_DEVICE = '/dev/net/tun';

let proven: Promise<void> | null = null;

/**
 * Fails, naming the Debian package to install or the setting to choose, when bubblewrap cannot
 * make a sandbox here: a tool missing, a TUN device not usable by every user, or user namespaces
 * disabled. Proven once per process.
 */
export function preflight(tools = TOOLS, tunDevice = TUN_DEVICE): Promise<void> {
  if (tools !== TOOLS || tunDevice !== TUN_DEVICE) return prove(tools, tunDevice);
  proven ??= prove(tools, tunDevice).catch((err) => {
    proven = null;
    throw err;
  });
  return proven;
}

async function prove(tools: [string, string][], tunDevice: string): Promise<void> {
  if (process.platform !== 'linux')
    throw new SandboxError(`sandbox bwrap needs Linux; set HOIST_SANDBOX=docker (or none, for one trusted user only)`);
  const missing = tools.filter(([path]) => !existsSync(path)).map(([, pkg]) => pkg);
  if (missing.length) {
    throw new SandboxError(
      `sandbox bwrap needs ${[...new Set(missing)].join(', ')}: apt-get install ` +
        `${[...new Set(missing)].join(' ')} (or set HOIST_SANDBOX=docker)`,
    );
  }
  // slirp4netns runs as the sandbox's own uid and opens the TUN device: it must be usable by every
  // user (0666, as Debian's udev makes it).
  const tun = existsSync(tunDevice) ? statSync(tunDevice).mode & 0o006 : 0;
  if (tun !== 0o006) {
    throw new SandboxError(
      'sandbox bwrap needs /dev/net/tun readable and writable by every user for the sandbox network: ' +
        'chmod 0666 /dev/net/tun (scripts/setup.sh does it), or set HOIST_SANDBOX=docker',
    );
  }
  const asNobody =
    process.getuid?.() === 0 ? ['/usr/bin/setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'] : [];
  const argv = [
    ...asNobody,
    '/usr/bin/bwrap',
    '--unshare-all',
    '--die-with-parent',
    '--ro-bind',
    '/usr',
    '/usr',
    '--symlink',
    'usr/lib',
    '/lib',
    '--symlink',
    'usr/lib64',
    '/lib64',
    '--',
    '/usr/bin/true',
  ];
  try {
    await promisify(execFile)(argv[0], argv.slice(1), { env: {}, timeout: 10_000 });
  } catch (err) {
    const why = ((err as { stderr?: string }).stderr ?? (err as Error).message).trim();
    throw new SandboxError(
      `sandbox bwrap cannot create namespaces here (${why}). Enable unprivileged user ` +
        `namespaces (sysctl kernel.unprivileged_userns_clone=1, user.max_user_namespaces ` +
        `> 0; on Ubuntu 24.04 also kernel.apparmor_restrict_unprivileged_userns=0) or set ` +
        `HOIST_SANDBOX=docker.`,
    );
  }
}
