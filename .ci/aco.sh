#!/usr/bin/env bash
# AMD's ACO compiler judges attn's GPU kernels without a GPU (issue 101).
# Mesa 25.0.7's RADV (Debian trixie main's mesa-vulkan-drivers) opens a
# null RDNA3 device under RADV_FORCE_FAMILY=navi31, "Null hardware (RADV
# NAVI31)", and compiles any SPIR-V compute shader for it; Vulkan's
# VK_KHR_pipeline_executable_properties then reports what ACO did:
# VGPRs, SGPRs, spills, scratch, LDS, waves a SIMD, the instruction mix
# and ACO's latency and throughput estimates. Mesa 26 removed the
# switch (drm-shim instead, which Debian does not ship), and bookworm's
# 22.3 reports spills that 25.0.7 does not: so 25.0.7, in a Debian
# trixie root of its own, /var/tmp/attn-aco (not .ci/mesa26.sh's: CI's
# two lanes may make both at once, and this one holds no Mesa 26).
#
#   bash .ci/aco.sh                  # make the root, print its path
#   bash .ci/aco.sh -- ARGS...       # and run internal/cmd/aco -root ROOT ARGS
#
# The root: debootstrap (minbase), libvulkan1 and libvulkan-dev, trixie
# main's mesa-vulkan-drivers=25.0.7* fetched by apt-get download and
# unpacked by dpkg-deb -x into /opt/mesa-25.0.7 (its libraries' own
# dependencies installed by apt-get satisfy), and an ICD json naming that
# folder's libvulkan_radeon.so by its absolute path. acostats
# (.ci/aco/acostats.c) is built here against the root's Vulkan headers
# (it loads libvulkan.so.1 at run time, so bookworm's glibc builds it and
# trixie's runs it) into /root/acostats, run under chroot by
# /root/acostats.sh, which sets VK_ICD_FILENAMES, RADV_FORCE_FAMILY=navi31
# and no shader cache. internal/cmd/aco captures the kernels' SPIR-V on
# this machine (spirvmix, on lavapipe) and compiles it in the root.
#
# Needs root (debootstrap, chroot) and deb.debian.org; debootstrap is
# unpacked from apt's own .deb when the system has none, so nothing is
# installed on the host. ATTN_ACO_ROOT picks the directory; a root
# already made is reused. Progress goes to stderr; exit 3 means the root
# could not be made (CI reports it and skips).
set -euo pipefail
cd "$(dirname "$0")/.."
root=${ATTN_ACO_ROOT:-/var/tmp/attn-aco}
mirror=${ATTN_DEBIAN_MIRROR:-http://deb.debian.org/debian}
mesa=25.0.7
log() { echo "aco.sh: $*" >&2; }
fail() { log "$*"; exit 3; }

[[ $(id -u) == 0 ]] || fail "needs root (debootstrap, chroot)"
[[ $(uname -m) == x86_64 ]] || fail "amd64 only (uname -m: $(uname -m))"

if [[ ! -f $root/.ready ]]; then
	boot=debootstrap
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	if ! command -v debootstrap >/dev/null; then
		# apt-get download takes no lock, so the other lane's installs go on.
		(cd "$tmp" && apt-get download -qq debootstrap >/dev/null 2>&1) ||
			fail "apt-get download debootstrap failed (apt-get update first?)"
		deb=$(cd "$tmp" && ls debootstrap_*.deb)
		dpkg-deb -x "$tmp/$deb" "$tmp/x"
		export DEBOOTSTRAP_DIR="$tmp/x/usr/share/debootstrap"
		boot="$tmp/x/usr/sbin/debootstrap"
	fi
	rm -rf "$root"
	log "debootstrap trixie into $root"
	"$boot" --variant=minbase trixie "$root" "$mirror" >"$root.log" 2>&1 ||
		{ tail -20 "$root.log" >&2; fail "debootstrap failed"; }
	log "mesa-vulkan-drivers=$mesa* from trixie main into /opt/mesa-$mesa"
	# The ICD json: the loader opens the library it names, and no other
	# driver (the root installs none of its own).
	chroot "$root" sh -euc '
		export DEBIAN_FRONTEND=noninteractive
		apt-get update -qq
		apt-get install -y -qq --no-install-recommends libvulkan1 libvulkan-dev
		cd /tmp
		apt-get download -qq -t trixie "mesa-vulkan-drivers='"$mesa"'*"
		deb=$(ls mesa-vulkan-drivers_*.deb)
		dir=/opt/mesa-'"$mesa"'
		dpkg-deb -x "$deb" "$dir"
		apt-get satisfy -y -qq --no-install-recommends "$(dpkg-deb -f "$deb" Depends)"
		dpkg-deb -f "$deb" Version >"$dir/VERSION"
		rm -f "$deb"
		apt-get clean
		lib=$(find "$dir" -name libvulkan_radeon.so)
		printf "{\"file_format_version\": \"1.0.0\", \"ICD\": {\"library_path\": \"%s\", \"api_version\": \"1.4.305\"}}\n" "$lib" >"$dir/radeon_icd.json"
	' >>"$root.log" 2>&1 ||
		{ tail -20 "$root.log" >&2; fail "apt-get in the root failed (trixie main may have moved past Mesa $mesa)"; }
	touch "$root/.ready"
fi

# acostats, built on each run (a second or two): the C program may have
# changed since the root was made.
gcc -O1 -Wall -Werror -std=c11 -I"$root/usr/include" -o "$root/root/acostats" .ci/aco/acostats.c -ldl
lib=$(find "$root/opt/mesa-$mesa" -name libvulkan_radeon.so)
cat >"$root/root/acostats.sh" <<EOF
#!/bin/sh
# Runs acostats on the null NAVI31 of Mesa $mesa's RADV (.ci/aco.sh).
export VK_ICD_FILENAMES=/opt/mesa-$mesa/radeon_icd.json
export RADV_FORCE_FAMILY=navi31
export MESA_SHADER_CACHE_DISABLE=true
export HOME=/root
exec /root/acostats "\$@"
EOF
chmod +x "$root/root/acostats.sh"
[[ -n $lib ]] || fail "no libvulkan_radeon.so under $root/opt/mesa-$mesa"
dev=$(chroot "$root" /root/acostats.sh 2>&1) || true
case $dev in
*'"Null hardware (RADV NAVI31)"'*) log "Mesa $(cat "$root/opt/mesa-$mesa/VERSION" 2>/dev/null)'s RADV opens $(sed -n 's/.*"device": "\([^"]*\)".*/\1/p' <<<"$dev" | head -1)" ;;
*) log "acostats in $root opened no null NAVI31: $dev"; exit 1 ;;
esac

if [[ ${1:-} != -- ]]; then
	echo "$root"
	exit 0
fi
shift
exec go run ./internal/cmd/aco -root "$root" "$@"
