#!/usr/bin/env bash
# Builds the base image of Docker releases (deployer-docker, deployer-pulumi) from this machine's own
# Node.js, since no image registry may be reachable: a minimal root filesystem with node, npm, sh,
# env, the shared libraries they need, CA certificates, /tmp and a non-root user `hoist` (10001),
# imported with `docker import`. Idempotent: does nothing when the image exists.
# Usage: scripts/docker-base-image.sh [tag]   (default: hoist-node-base:local, the default of HOIST_DOCKER_BASE_IMAGE)
set -euo pipefail
tag="${1:-hoist-node-base:local}"
if docker image inspect "$tag" >/dev/null 2>&1; then
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
cp -a "$npm_dir" "$root/usr/lib/node_modules/npm"
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$root/usr/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$root/usr/bin/npx"
# Every shared library the binaries load, at the path the loader looks for it.
for lib in $(ldd "$node" "$sh_bin" "$env_bin" | grep -v ":$" | grep -o "/[^ ]*" | sort -u); do
  mkdir -p "$root$(dirname "$lib")"
  cp -L "$lib" "$root$lib"
done
[ -f /etc/ssl/certs/ca-certificates.crt ] && cp /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/bin/sh\nhoist:x:10001:10001:hoist:/tmp:/bin/sh\n' >"$root/etc/passwd"
printf 'root:x:0:\nhoist:x:10001:\n' >"$root/etc/group"
printf 'hosts: files dns\n' >"$root/etc/nsswitch.conf"

tar -C "$root" -c . | docker import \
  --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' \
  --change 'ENV NODE_ENV=production' \
  --change 'USER 10001:10001' \
  --change 'WORKDIR /app' \
  --change 'CMD ["node"]' \
  - "$tag" >/dev/null
echo "docker-base-image: built $tag"
