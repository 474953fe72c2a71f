#!/usr/bin/env bash
# Installs what Hoist needs on a fresh clone: the sandbox's tools from Debian (bubblewrap,
# slirp4netns, nftables; util-linux's setpriv, prlimit and nsenter are there already) when they are
# missing, then the npm packages from the lockfile (npm ci, whose `prepare` builds dist/). Tenant code
# never runs unsandboxed by default, so `npm start` needs these; HOIST_SANDBOX=docker needs a Docker
# engine instead.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
for tool in bwrap:bubblewrap slirp4netns:slirp4netns nft:nftables; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${tool%%:*}" ] || missing+=("${tool##*:}")
done
if [ "${#missing[@]}" -gt 0 ] && [ "$(uname -s)" = Linux ]; then
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]} (the sandbox tenant code runs in)"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -q "${missing[@]}" >/dev/null || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q "${missing[@]}" >/dev/null; }
fi

# The sandbox's network (slirp4netns, run as the sandbox's own uid) opens the TUN device, which some
# images create as 0600; Debian's udev makes it 0666.
if [ -c /dev/net/tun ] && [ "$(stat -c %a /dev/net/tun)" != 666 ] && [ "$(uname -s)" = Linux ]; then
  echo "setup: making /dev/net/tun usable by the sandbox (chmod 0666)"
  ${sudo:-$([ "$(id -u)" = 0 ] || echo sudo)} chmod 0666 /dev/net/tun
fi

npm ci --no-audit --no-fund
# The example plugin's own packages (markdown-it, and hoist linked from here): its e2e test loads it by path.
npm ci --prefix examples/plugin-markdown-site --no-audit --no-fund
