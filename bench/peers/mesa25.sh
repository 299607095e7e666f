#!/usr/bin/env bash
# A private copy of Mesa 25's lavapipe (Vulkan on the CPU) from Debian
# bookworm-backports, for ORT's WebGPU EP (Dawn refuses bookworm's Mesa 22.3
# lavapipe: "Vulkan shaderUniform*ArrayDynamicIndexing required") and for
# attn's GPU backend on the same adapter. The system's Mesa is not touched:
# the .deb is fetched with curl, checked against a pinned sha256, unpacked
# with dpkg -x into bench/peers/.mesa25/ (git-ignored by a .gitignore of its
# own), and an ICD json with an absolute library path is written next to
# it. Safe to run again: it only downloads what is missing or wrong.
#
#   eval "$(bench/peers/mesa25.sh)"          # exports VK_ICD_FILENAMES, VK_DRIVER_FILES
#   bench/peers/mesa25.sh >/dev/null; . bench/peers/.mesa25/env   # the same, from a file
#   go run ./cmd/attn devices                # driver: llvmpipe (Mesa 25.0.7-2~bpo12+1 ...)
#
# Only the exports go to stdout; progress goes to stderr.
#
# Dependencies: the system's Vulkan loader (libvulkan1) and LLVM 15
# (libllvm15, which bookworm's Mesa 22.3 needs too). The backport's package
# asks for libdrm >= 2.4.121, but lavapipe only calls libdrm functions that
# bookworm's 2.4.114 has (checked below), so no LD_LIBRARY_PATH is needed.
# ATTN_MESA25_DIR overrides the directory.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
dir="${ATTN_MESA25_DIR:-$here/.mesa25}"

# Pinned: file in Debian's pool and its sha256 (as in bookworm-backports'
# signed Packages index, fetched 2026-11-21). A backport leaves
# deb.debian.org when a newer one is uploaded; snapshot.debian.org keeps
# every file under its sha1.
version='25.0.7-2~bpo12+1'
pool='pool/main/m/mesa/mesa-vulkan-drivers_25.0.7-2~bpo12+1_amd64.deb'
sha256='3899f1800424c60a05df5d6913076a526ca8fdbabec43672cd397563d1ca3263'
sha1='690815f474701be97646657f06069dcd3d56f644'
urls=(
  "${ATTN_DEBIAN_MIRROR:-http://deb.debian.org/debian}/$pool"
  "http://snapshot.debian.org/file/$sha1"
)

log() { echo "mesa25.sh: $*" >&2; }

[[ $(uname -m) == x86_64 ]] || { log "only amd64 is pinned here (uname -m: $(uname -m))"; exit 1; }
for tool in curl dpkg-deb sha256sum; do
  command -v "$tool" >/dev/null || { log "$tool not found"; exit 1; }
done

mkdir -p "$dir/debs"
[[ -f $dir/.gitignore ]] || echo '*' >"$dir/.gitignore"

deb="$dir/debs/${pool##*/}"
if [[ ! -f $deb ]] || ! echo "$sha256  $deb" | sha256sum -c --status; then
  rm -f "$deb"
  for url in "${urls[@]}"; do
    log "fetching $url"
    if curl -fsSL --retry 2 -m 300 -o "$deb.part" "$url"; then
      if echo "$sha256  $deb.part" | sha256sum -c --status; then
        mv "$deb.part" "$deb"
        break
      fi
      log "sha256 mismatch for $url"
    fi
    rm -f "$deb.part"
  done
  [[ -f $deb ]] || { log "could not fetch mesa-vulkan-drivers $version"; exit 1; }
fi

root="$dir/root"
lib="$root/usr/lib/x86_64-linux-gnu/libvulkan_lvp.so"
stamp="$root/.unpacked-$sha256"
if [[ ! -f $stamp || ! -f $lib ]]; then
  log "unpacking mesa-vulkan-drivers $version into $root"
  rm -rf "$root"
  mkdir -p "$root"
  dpkg-deb -x "$deb" "$root"
  touch "$stamp"
fi

# Shared libraries the system lacks, and libdrm functions its libdrm lacks.
if command -v ldd >/dev/null; then
  missing=$(ldd "$lib" | awk '/not found/{print $1}')
  [[ -z $missing ]] || { log "libvulkan_lvp.so needs, not found: $missing (apt-get install libllvm15 ...)"; exit 1; }
  sysdrm=$(ldd "$lib" | awk '$1=="libdrm.so.2"{print $3}')
  if [[ -n $sysdrm ]] && command -v nm >/dev/null; then
    lack=$(comm -23 <(nm -D --undefined-only "$lib" | awk '$2 ~ /^drm/{print $2}' | sort -u) \
      <(nm -D --defined-only "$sysdrm" | awk '{print $3}' | sort -u))
    [[ -z $lack ]] || { log "$sysdrm lacks $lack: unpack libdrm2 2.4.123-1~bpo12+1 too and set LD_LIBRARY_PATH"; exit 1; }
  fi
fi

icd="$dir/lvp_icd.json"
cat >"$icd.tmp" <<EOF
{
    "ICD": {
        "api_version": "1.4.305",
        "library_path": "$lib"
    },
    "file_format_version": "1.0.0"
}
EOF
mv "$icd.tmp" "$icd"

# VK_ICD_FILENAMES for loaders before 1.3.207 (bookworm's is 1.3.239, Dawn
# and wgpu use the system loader), VK_DRIVER_FILES for newer ones.
env="$dir/env"
printf 'export VK_ICD_FILENAMES=%q VK_DRIVER_FILES=%q\n' "$icd" "$icd" >"$env"
log "Mesa $version lavapipe ready: $icd"
cat "$env"
