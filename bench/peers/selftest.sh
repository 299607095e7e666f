#!/usr/bin/env bash
# Checks every peer runner against a float64 NumPy reference on small shapes
# (GQA, causal, N=1, odd N, D=8 and 64) with --budget-s 0 --min-runs 1.
# Only ort-webgpu-mha may answer with an "error" JSON (no usable adapter).
#
#   bench/peers/selftest.sh            # from any directory
#   KEEP=1 bench/peers/selftest.sh     # keep the temp dir
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

PY=/usr/bin/python3
tmp=$(mktemp -d "${TMPDIR:-/tmp}/attn-peers-selftest.XXXXXX")
if [[ -z "${KEEP:-}" ]]; then trap 'rm -rf "$tmp"' EXIT; else echo "keeping $tmp"; fi

impls=(ort-cpu-mha ort-webgpu-mha torch-naive torch-sdpa numpy-naive ggml-cpu ggml-vulkan)
runner() {
  case $1 in
    ort-*) echo node ort.mjs ;;
    ggml-*) echo "$PY" ggml_peer.py ;;
    *) echo "$PY" torch_peer.py ;;
  esac
}

# B H KVH N D causal
shapes=(
  "1 2 2 1 8 0"
  "1 2 1 7 8 1"
  "1 2 2 7 64 0"
  "2 4 2 64 64 1"
  "2 4 4 64 8 0"
  "1 4 1 7 64 0"
  "2 4 2 1 64 1"
  "1 3 3 64 64 1"
  "2 4 1 64 8 1"
)
scale=0.3

echo "== probes"
for impl in "${impls[@]}"; do
  $(runner "$impl") --probe --impl "$impl" | tail -n 1
done

fail=0
i=0
for shape in "${shapes[@]}"; do
  read -r B H KVH N D C <<<"$shape"
  dir="$tmp/p$i"
  i=$((i + 1))
  mkdir -p "$dir"
  "$PY" - "$dir" "$B" "$H" "$KVH" "$N" "$D" "$i" <<'EOF'
import sys, numpy as np
d, b, h, kvh, n, dd, seed = sys.argv[1], *map(int, sys.argv[2:])
rng = np.random.default_rng(seed)
np.save(f"{d}/q.npy", rng.standard_normal((b, h, n, dd), dtype=np.float32))
np.save(f"{d}/k.npy", rng.standard_normal((b, kvh, n, dd), dtype=np.float32))
np.save(f"{d}/v.npy", rng.standard_normal((b, kvh, n, dd), dtype=np.float32))
EOF
  echo "== B=$B H=$H KVH=$KVH N=$N D=$D causal=$C scale=$scale"
  for impl in "${impls[@]}"; do
    rm -f "$dir/o-$impl.npy"
    rc=0
    $(runner "$impl") --impl "$impl" --dir "$dir" --b "$B" --h "$H" --kvh "$KVH" --n "$N" \
      --d "$D" --causal "$C" --scale "$scale" --budget-s 0 --min-runs 1 --threads 2 \
      >"$dir/stdout-$impl" 2>"$dir/stderr-$impl" || rc=$?
    line=$(tail -n 1 "$dir/stdout-$impl")
    if [[ $rc -ne 0 ]]; then
      echo "FAIL $impl: exit $rc: $(tail -c 600 "$dir/stderr-$impl")"
      fail=1
      continue
    fi
    if ! "$PY" - "$dir" "$impl" "$B" "$H" "$KVH" "$N" "$D" "$C" "$scale" "$line" <<'EOF'; then
import json, sys, numpy as np
d, impl = sys.argv[1], sys.argv[2]
b, h, kvh, n, dd, c = map(int, sys.argv[3:9])
scale, line = float(sys.argv[9]), sys.argv[10]
try:
    res = json.loads(line)
except ValueError:
    sys.exit(f"FAIL {impl}: last stdout line is not JSON: {line!r}")
if res.get("impl") != impl or not res.get("version"):
    sys.exit(f"FAIL {impl}: bad impl/version in {line}")
if "error" in res:
    if impl == "ort-webgpu-mha":
        print(f"ok   {impl}: error accepted: {res['error'][:150]}")
        sys.exit(0)
    sys.exit(f"FAIL {impl}: {res['error']}")
times = res.get("times_s")
if not isinstance(times, list) or len(times) < 1 or not isinstance(res.get("warmup_s"), (int, float)):
    sys.exit(f"FAIL {impl}: want warmup_s and >= 1 times_s: {line}")
q = np.load(f"{d}/q.npy").astype(np.float64)
k = np.load(f"{d}/k.npy").astype(np.float64)
v = np.load(f"{d}/v.npy").astype(np.float64)
g = h // kvh
k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
s = scale * q @ np.swapaxes(k, -1, -2)
if c:
    s = np.where(np.triu(np.ones((n, n), bool), 1), -np.inf, s)
s = np.exp(s - s.max(-1, keepdims=True))
ref = (s / s.sum(-1, keepdims=True)) @ v
o = np.load(f"{d}/o-{impl}.npy")
if o.dtype != np.float32 or o.shape != ref.shape or not o.flags.c_contiguous:
    sys.exit(f"FAIL {impl}: output {o.dtype} {o.shape}, want float32 {ref.shape}")
err = np.abs(o.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30)
if not err < 1e-4:
    sys.exit(f"FAIL {impl}: max abs error {err:.3g} of max|O|")
print(f"ok   {impl}: rel err {err:.2e}, warmup {res['warmup_s']:.4f}s, {len(times)} run(s)")
EOF
      fail=1
    fi
  done
done

if [[ $fail -ne 0 ]]; then
  echo "selftest: FAIL"
  exit 1
fi
echo "selftest: PASS"
