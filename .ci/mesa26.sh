#!/usr/bin/env bash
# A Debian trixie root with Mesa 26's lavapipe (trixie-backports), whose
# Vulkan device offers VK_KHR_cooperative_matrix (8×8×8 tiles, f16 A and
# B, f16 or f32 C) where bookworm's Mesa 22.3 and Mesa 25.0 offer none.
# Mesa 26 needs glibc 2.39, so it cannot be unpacked beside bookworm's
# loader as bench/peers/mesa25.sh does Mesa 25: it lives in a root of its
# own, and a program built here (cgo against bookworm's glibc 2.36) runs
# in it under chroot. Needs root (chroot) and deb.debian.org; debootstrap
# is unpacked from apt's own .deb when the system has none, so nothing
# is installed on the host.
#
#   root=$(bash .ci/mesa26.sh)                 # prints the root's path
#   go build -o "$root/root/attn" ./cmd/attn
#   chroot "$root" /root/attn devices          # cooperative matrices: offered, ...
#
# ATTN_MESA26_ROOT picks the directory (default /var/tmp/attn-mesa26);
# a root already made is reused. Progress goes to stderr.
set -euo pipefail
root=${ATTN_MESA26_ROOT:-/var/tmp/attn-mesa26}
mirror=${ATTN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
log() { echo "mesa26.sh: $*" >&2; }

[[ $(id -u) == 0 ]] || { log "needs root (debootstrap, chroot)"; exit 1; }
[[ $(uname -m) == x86_64 ]] || { log "amd64 only (uname -m: $(uname -m))"; exit 1; }
if [[ -f $root/.ready ]]; then
	echo "$root"
	exit 0
fi

boot=debootstrap
if ! command -v debootstrap >/dev/null; then
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	# apt-get download takes no lock, so the other lane's installs go on.
	(cd "$tmp" && apt-get download -qq debootstrap >/dev/null 2>&1) ||
		{ log "apt-get download debootstrap failed (apt-get update first?)"; exit 1; }
	deb=$(cd "$tmp" && ls debootstrap_*.deb)
	dpkg-deb -x "$tmp/$deb" "$tmp/x"
	export DEBOOTSTRAP_DIR="$tmp/x/usr/share/debootstrap"
	boot="$tmp/x/usr/sbin/debootstrap"
fi

rm -rf "$root"
log "debootstrap trixie into $root"
"$boot" --variant=minbase trixie "$root" "$mirror" >"$root.log" 2>&1 ||
	{ tail -20 "$root.log" >&2; log "debootstrap failed"; exit 1; }
echo "deb $mirror trixie-backports main" >"$root/etc/apt/sources.list.d/backports.list"
log "mesa-vulkan-drivers from trixie-backports"
chroot "$root" sh -c 'apt-get update -qq &&
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t trixie-backports mesa-vulkan-drivers' >>"$root.log" 2>&1 ||
	{ tail -20 "$root.log" >&2; log "apt-get in the root failed"; exit 1; }
version=$(chroot "$root" dpkg-query -W -f '${Version}' mesa-vulkan-drivers)
case $version in
26.*) log "Mesa $version's lavapipe in $root" ;;
*) log "trixie-backports has Mesa $version, not 26"; exit 1 ;;
esac
touch "$root/.ready"
echo "$root"
