#!/usr/bin/env bash
# Installs what Hoist needs on a fresh clone: the sandbox's tools from Debian (bubblewrap,
# slirp4netns, nftables; util-linux's setpriv, prlimit and nsenter are there already) when they are
# missing, then the npm packages from the lockfile. Tenant code never runs unsandboxed by default,
# so `npm start` needs these; HOIST_SANDBOX=docker needs a Docker engine instead.
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

npm ci --no-audit --no-fund
