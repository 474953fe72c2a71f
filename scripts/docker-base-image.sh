#!/usr/bin/env bash
# Builds the base image of Docker releases and sandboxes (deployer-docker, deployer-pulumi,
# sandbox-docker) from this machine's own Node.js, since no image registry may be reachable: a
# minimal root filesystem with node, npm, sh, the everyday commands build scripts call (coreutils,
# grep, sed, find, tar ...), the C and C++ runtime libraries, CA certificates, /tmp and a non-root
# user `hoist` (10001), imported with `docker import`. Idempotent: does nothing when the image exists
# and is of this script's version (its `hoist.base` label); an older one is replaced.
# Usage: scripts/docker-base-image.sh [tag]   (default: hoist-node-base:local, the default of HOIST_DOCKER_BASE_IMAGE)
set -euo pipefail
tag="${1:-hoist-node-base:local}"
version=3
if [ "$(docker image inspect -f '{{index .Config.Labels "hoist.base"}}' "$tag" 2>/dev/null)" = "$version" ]; then
  echo "docker-base-image: $tag exists"
  exit 0
fi

root="$(mktemp -d)"
trap 'rm -rf "$root"' EXIT
node="$(readlink -f "$(command -v node)")"
npm_dir="$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")"
sh_bin="$(readlink -f /bin/sh)"
env_bin="$(readlink -f /usr/bin/env)"

mkdir -p "$root"/{bin,usr/bin,usr/lib/node_modules,etc/ssl/certs,tmp,app,hoist}
chmod 1777 "$root/tmp"
cp "$node" "$root/usr/bin/node"
cp "$sh_bin" "$root/bin/sh"
cp "$env_bin" "$root/usr/bin/env"
tools=""
for t in cat ls id pwd grep sed tr wc head tail sleep yes cp mv rm mkdir rmdir ln chmod touch date dirname basename \
  sort uniq cut find xargs true false printf echo test readlink realpath stat du df mktemp tee expr seq uname which tar gzip; do
  p="$(command -v "$t" || true)"
  case "$p" in /*) [ -e "$root/usr/bin/$t" ] || { cp "$(readlink -f "$p")" "$root/usr/bin/$t"; tools="$tools $root/usr/bin/$t"; } ;; esac
done
cp -a "$npm_dir" "$root/usr/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/bin/npx"
# Every shared library the binaries load, at the path the loader looks for it.
# shellcheck disable=SC2086
for lib in $( (ldd "$node" "$sh_bin" "$env_bin" $tools 2>/dev/null || true) | grep -v ":$" | grep -o "/[^ ]*" | sort -u); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
# The C and C++ runtime libraries whole (librt, libdl, libstdc++ ...): the native modules of npm
# packages (rollup, sharp ...) load more of them than node does.
if command -v dpkg >/dev/null; then
  for lib in $(dpkg -L libc6 libgcc-s1 libstdc++6 2>/dev/null | grep -E '\.so[.0-9]*$' | grep -v gconv); do
    mkdir -p "$root$(dirname "$lib")"
    [ -e "$root$lib" ] || cp -L "$lib" "$root$lib"
  done
fi
[ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/bin/sh\nhoist:x:10001:10001:hoist:/tmp:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nhoist:x:10001:\n' >"$root/etc/group"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"

tar -C "$root" -c . | docker import \
  --change "LABEL hoist.base=$version" \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  --change 'ENV NODE_ENV=production' \
  --change 'USER 10001:10001' \
  --change 'WORKDIR /app' \
  --change 'CMD ["node"]' \
  - "$tag" >/dev/null
echo "docker-base-image: built $tag"
