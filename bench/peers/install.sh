#!/usr/bin/env bash
# Installs what the peer runners need; safe to run again. Works from any
# directory.
#   - onnxruntime-node (exact version from package-lock.json) via npm ci,
#     with ONNXRUNTIME_NODE_INSTALL=skip: its post-install step downloads
#     CUDA files from a host that may be unreachable, and the CPU and
#     WebGPU providers are in the npm package itself.
#   - ggml's prebuilt libraries (llama.cpp's attention, the ggml-cpu and
#     ggml-vulkan peers) from npm's @node-llama-cpp/linux-x64-vulkan, an
#     optional dependency in package-lock.json: npm skips it off
#     linux-x64, and ggml_peer.py then says the peers are unavailable.
#   - Debian's python3-torch, python3-numpy, python3-onnx for
#     /usr/bin/python3, and libopenblas0-pthread: without it Debian's
#     libblas.so.3 is the reference BLAS and numpy/torch matmul run ~10x
#     slower than OpenBLAS.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"

PY=/usr/bin/python3
debs=(python3-torch python3-numpy python3-onnx libopenblas0-pthread)

ggml=node_modules/@node-llama-cpp/linux-x64-vulkan/package.json
if [[ ! -f node_modules/onnxruntime-node/package.json || ( ! -f $ggml && $(uname -sm) == "Linux x86_64" ) ]]; then
  command -v npm >/dev/null || { echo "install.sh: npm not found (apt-get install -y nodejs npm, node >= 20)" >&2; exit 1; }
  echo "install.sh: npm ci (onnxruntime-node, ggml's libraries)"
  ONNXRUNTIME_NODE_INSTALL=skip npm ci --no-audit --no-fund
fi

missing=()
if [[ ! -x $PY ]]; then
  missing=(python3 "${debs[@]}")
else
  for mod in torch:python3-torch numpy:python3-numpy onnx:python3-onnx; do
    "$PY" -c "import ${mod%%:*}" 2>/dev/null || missing+=("${mod#*:}")
  done
fi
if ! ls /usr/lib/*/openblas-pthread/libblas.so.3 >/dev/null 2>&1; then
  missing+=(libopenblas0-pthread)
fi

if ((${#missing[@]})); then
  cmd="apt-get update && apt-get install -y ${missing[*]}"
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    echo "install.sh: $cmd"
    apt-get update
    DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
  else
    echo "install.sh: missing ${missing[*]}; as root run:" >&2
    echo "  $cmd" >&2
    exit 1
  fi
fi

for impl in ort-cpu-mha ort-webgpu-mha; do node ort.mjs --probe --impl "$impl"; done
for impl in torch-naive torch-sdpa numpy-naive; do "$PY" torch_peer.py --probe --impl "$impl"; done
for impl in ggml-cpu ggml-vulkan; do "$PY" ggml_peer.py --probe --impl "$impl"; done
