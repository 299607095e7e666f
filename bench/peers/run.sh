#!/usr/bin/env bash
# One command for attn and its peers side by side: installs what the peer
# runners need (install.sh, idempotent), then runs `attn bench -peers all`
# from the repository root, which measures attn and every peer on the same
# inputs, point after point, and writes one table, results.json,
# results.csv and the charts to attn-bench-peers/.
#
#   bench/peers/run.sh                      # B=1 H=8 D=64, N = 1024 … 8192, CPU
#   bench/peers/run.sh -n 4096,16384 -causal -backend cpu,gpu
#
#   ATTN_MESA25=1 bench/peers/run.sh -backend cpu,gpu
#
# Flags are attn bench's and override the defaults below. OpenBLAS (NumPy,
# PyTorch) honours OPENBLAS_CORETYPE from the environment; the report
# records its value. ATTN_MESA25=1 first fetches Mesa 25's lavapipe into
# bench/peers/.mesa25 (mesa25.sh; the system's Mesa is left alone) and
# points Vulkan at it, so that ORT's WebGPU EP, which refuses Debian 12's
# Mesa 22.3, gets an adapter, and attn's GPU backend runs on the same one.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
bash "$root/bench/peers/install.sh" >&2
if [[ ${ATTN_MESA25:-} == 1 ]]; then
  eval "$(bash "$root/bench/peers/mesa25.sh")"
fi
cd "$root"
exec go run ./cmd/attn bench -peers all -peers-dir bench/peers -backend cpu \
  -heads 8 -n 1024,2048,4096,8192 -out attn-bench-peers "$@"
