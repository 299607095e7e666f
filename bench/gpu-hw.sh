#!/usr/bin/env bash
# One command for a lent GPU machine: attn's GPU tests, its decoding and
# prefill sweeps and PyTorch's SDPA on the same shapes, in one report.
# Whoever gets 15 minutes on an H100 spends them measuring, not setting up:
# everything is built here, carried there in one folder, and each mode of
# `run` ends within the device tool's 10 minutes a command.
#
#   bench/gpu-hw.sh build DIR        # here (linux/amd64, cgo): DIR/attn.xz, DIR/*.test.xz,
#                                    # DIR/torchsdpa.py, and the Vulkan loader's debs
#                                    # in DIR/debs when apt-get can fetch them
#   bench/gpu-hw.sh run DIR OUT MODE # there: MODE is tests, long, bench, more, cpu, quick or tune
#   bench/gpu-hw.sh run DIR OUT tune SETTING…
#   bench/gpu-hw.sh run DIR OUT MODE[:SECONDS],MODE…   # several in one call:
#                                    # the GPU modes in turn, each within its
#                                    # SECONDS and all within GPU_HW_DEADLINE
#                                    # (560), cpu beside them on half the
#                                    # cores; OUT gets MODE.md, run.log, all.tgz
#
#   tests  the GPU backend's whole suite (TestCompile included), with
#          ATTN_LONG's tests, the conformance suite on the adapter's limits
#          and on WebGPU's defaults, and the ONNX node, cache and packed
#          tests of ./kernels on the GPU (ATTN_REQUIRE_GPU=1), in
#          GPU_HW_SHARDS (6) processes of the suite's tests beside those,
#          side by side
#   long   the ATTN_LONG cache tests of ./gpu
#   bench  one decoding step (B=1, 32 query heads over 8 KV heads, D=128,
#          Nq = 1 and 4 over 4096 and 32768 keys, f32 and f16), prefill
#          (B=1 H=8, D=64 and 128, N = 4096 and 16384: fusedloop.wgsl at
#          D = 64, fusedtile.wgsl at 128), PyTorch's SDPA on the decoding
#          shapes and the GPU's read bandwidth (x.sum()) where torch sees
#          a CUDA GPU, a model's decoding step of 32 layers beside one
#          (-layers 1,32: each layer's cache 4096 keys, recorded with one
#          wait), again submitting every 8 dispatches (step.flush=8);
#          then naga's runtime checks on and off beside the default
#          (ATTN_GPU_CHECKS=on|off, decoding f16 and prefill at D = 128)
#          and a0ce04b's kernels (attn-a0ce04b, built beside), then
#          fusedtile.wgsl at D = 128 without its loads ahead
#          (tile.ahead=1) and with its key groups meeting by subgroup
#          shuffles (tile-subgroups=on), prefill with f16 inputs, then
#          what an empty dispatch costs
#          (BenchmarkDispatch) and what recording a layer costs the host
#          (BenchmarkRecord). GPU_HW_FULL=1 adds the A/B sweeps of earlier
#          runs: fusedtile.wgsl at D = 64 (ATTN_GPU_PREFILL=tile), the
#          loops of decoding and merging kept as loops (decode.pv=1,
#          merge.unroll=1), 16 sequences of 8192 keys, and prefill and
#          decoding under the old binding (attn-gowebgpu, -tags gowebgpu);
#          always, prefill and decoding in f32 under the pure-Go binding
#          (attn-gogpu, -tags gogpu, no cgo)
#   more   the newer paths on the GPU: q8, fp8 and q4 caches decoding
#          beside f16 (B=1, 32 query heads over 8 KV heads, D=128, one
#          query over 4096 and 32768 keys), a 32-token draft tree over
#          32768 f16 keys beside the same rows as a causal chunk (-tree
#          32), the cascade (32 sequences of 8448 keys sharing 8192, f16,
#          through AttendBuffers: -prefix 8192 -buffers), a sparse step
#          beside the dense one (-topk 0,2048 over 32768 keys) and the
#          backward pass beside the forward (B=1 H=8, D=64 and 128, N =
#          4096, f32: -backward), then PyTorch's SDPA forward and
#          backward on those shapes where torch sees a CUDA GPU
#          (GPU_HW_FULL=1: q8 at D = 80 beside 64, and N = 16384 too;
#          GPU_HW_SMALL=1: small shapes, for trying it on lavapipe)
#   cpu    issue 28 on the host's CPU (an Intel Xeon on the NVIDIA
#          machines): its flags, whether the kernel grants AMX's tile
#          data (arch_prctl), the AMX tests where it lists amx_bf16,
#          fused f32 and bf16 prefill (bf16 on AMX's tiles there) against
#          the FMA peak, again on one core (GOMAXPROCS=1), f16, q8 and
#          fp8 caches' decoding beside f32's, and the shared-prefix step
#          (32 sequences of 8448 keys sharing 8192) beside the unshared
#   quick  the bench's shapes, small, and the GPU tests with -short: for
#          trying the script on lavapipe before a machine is lent
#   tune   issue 23's sizes swept: the decoding step (32 query heads over
#          8 KV heads, D=128, Nq=1, 4096 and 32768 keys, f32 and f16)
#          under each ATTN_GPU_TUNE setting of fuseddecode.wgsl, the
#          split and the merge first, then prefill (B=1 H=8, D=64 and
#          128, N=16384) under settings of fusedtile.wgsl and
#          fusedloop.wgsl, the defaults first,
#          and issue 24's 32-layer step over 4096 keys beside one layer
#          (-layers 1,32) under step.flush, the dispatches a step records
#          before submitting them without a wait (compared by wall time);
#          or the SETTINGs given, on all three (GPU_HW_TUNE_KINDS, say
#          "decode", narrows the kinds, GPU_HW_TUNE_DTYPE, say "f16",
#          the decoding points' dtype). Each setting's points, device
#          time (gpu_s), wall time and status go into one table, with the
#          fastest setting of each point against the defaults'. It stops
#          before the device tool's 10 minutes, saying where
#          (GPU_HW_SMALL=1: small shapes, for trying it on lavapipe)
#
# OUT gets MODE.md (a mode's report.md), run.log and all.tgz, which holds
# each mode's folder: its report.md
# (every table and the device; each sweep's table has the device's own
# time, gpu_s, as "GPU time" beside the median wall time, and a line
# saying how it was measured or why there is none), tests.log, and a
# NAME.json (attn bench's results.json) for each sweep (decode.json,
# prefill.json, prefill-unroll.json, …) and torch.json; more writes
# report.md, decode8.json, tree.json, cascade.json, sparse.json,
# backward.json and torch-backward.json; cpu writes report.md,
# cpu-prefill.json, cpu-prefill-8x32.json, cpu-prefill-dot.json (with
# AVX512_BF16), cpu-decode.json and cpu-decode8-N.json (rounds N = 1
# … 3 of f16, q8 and fp8); tune writes report.md and
# tune.json (each setting's results.json points).
#
# On the device tool (see its README for the loader debs):
#   run: carry [DIR], command "bash bench/gpu-hw.sh run DIR $OUT tests"
# ggml-vulkan beside attn: ATTN_GGML_LIBDIR=<a folder with libggml-base.so,
# libggml-vulkan.so and libggml*.so> and ATTN_PEER_PYTHON=<a python3 with
# numpy> make `bench` add -peers ggml-vulkan to the decoding sweep.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2; exit 2; }

build() {
	local dir=$1
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	cd "$root"
	export CGO_ENABLED=1 GOOS=linux GOARCH=amd64
	go build -ldflags="-s -w" -o "$dir/attn" ./cmd/attn
	# The old binding (go-webgpu, wgpu-native 0.17) beside v27: which of
	# the two made the H100's prefill slower (issue 59, 2026-11-26).
	go build -tags gowebgpu -ldflags="-s -w" -o "$dir/attn-gowebgpu" ./cmd/attn
	# The pure-Go binding (gogpu/wgpu, no cgo), whose naga writes no loop
	# counters and no index clamps into the SPIR-V: what wgpu-native's
	# loop bounding costs the same kernels (issue 91; f32 only, as that
	# device has no shader-f16, and timed by wall clock, as it has no
	# timestamp queries).
	CGO_ENABLED=0 go build -tags gogpu -ldflags="-s -w" -o "$dir/attn-gogpu" ./cmd/attn
	# The kernels of a0ce04b (lanedecode.wgsl, fusedtile.wgsl's shared
	# softmax, the backward's lanes, wgpu's runtime checks all on), which
	# no GPU has run, beside this tree's: issue 101's A/B.
	local old=a0ce04b olds=()
	if git -C "$root" cat-file -e "$old^{commit}" 2>/dev/null; then
		local wt
		wt=$(mktemp -d)
		git -C "$root" worktree add -q --detach "$wt" "$old"
		(cd "$wt" && go build -ldflags="-s -w" -o "$dir/attn-$old" ./cmd/attn)
		git -C "$root" worktree remove --force "$wt"
		olds=("$dir/attn-$old")
	fi
	go test -c -ldflags="-s -w" -o "$dir/gpu.test" ./gpu
	go test -c -ldflags="-s -w" -o "$dir/conformance.test" ./gpu/conformance
	go test -c -ldflags="-s -w" -o "$dir/kernels.test" ./kernels
	go test -c -ldflags="-s -w" -o "$dir/sgemm.test" ./cpu/internal/sgemm
	go test -c -ldflags="-s -w" -o "$dir/cpu.test" ./cpu
	cp bench/torchsdpa.py "$dir/"
	# xz takes the binaries from about 140 MB to about 40: what
	# travels to the device machine is at most 64 MiB, the tree included.
	rm -f "$dir"/*.xz
	xz -T0 -6 "$dir/attn" "$dir/attn-gowebgpu" "$dir/attn-gogpu" "${olds[@]}" "$dir/gpu.test" "$dir/conformance.test" "$dir/kernels.test" "$dir/sgemm.test" "$dir/cpu.test"
	# ggml-vulkan's libraries (bench/peers/install.sh), for the peer
	# beside attn's decoding sweep: about 5 MB packed.
	local ggml=$root/bench/peers/node_modules/@node-llama-cpp/linux-x64-vulkan/bins/linux-x64-vulkan
	if [[ -f $ggml/libggml-vulkan.so ]]; then
		mkdir -p "$dir/ggml"
		for f in "$ggml"/libggml-base.so "$ggml"/libggml-vulkan.so "$ggml"/libggml.*.so; do
			xz -T0 -6 -c "$f" >"$dir/ggml/$(basename "$f").xz"
		done
	fi
	# The Vulkan loader and GLVND: the device machine has NVIDIA's driver
	# and ICD but may lack libvulkan.so.1, and NVIDIA's ICD
	# (libGLX_nvidia) needs libGLdispatch.so.0 (libglvnd0): without it
	# the loader finds no device (2026-11-26).
	if command -v apt-get >/dev/null && [[ ! -d $dir/debs ]]; then
		mkdir -p "$dir/debs" /tmp/gpu-hw-apt/partial
		local o=(-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/gpu-hw-apt)
		if apt-get "${o[@]}" update >/dev/null 2>&1; then
			(cd "$dir/debs" && apt-get "${o[@]}" download libvulkan1 libglvnd0 libegl1 libgl1 libglx0 libopengl0 libgles2 >/dev/null) || echo "gpu-hw.sh: could not download libvulkan1 and GLVND; bring them yourself" >&2
		fi
	fi
	du -sh "$dir"
}

# unpack gives the binaries' folder: DIR's own, or a scratch one holding
# them unpacked from DIR/*.xz (by xz, or Python's lzma where xz is absent).
unpack() {
	local dir=$1
	if [[ -n ${GPU_HW_BIN:-} ]]; then
		echo "$GPU_HW_BIN"
		return
	fi
	[[ -f $dir/attn.xz ]] || { echo "$dir"; return; }
	local bin f
	bin=$(mktemp -d)
	mkdir -p "$bin/ggml"
	for f in "$dir"/*.xz "$dir"/ggml/*.xz; do
		[[ -e $f ]] || continue
		local to=$bin/$(basename "$f" .xz)
		[[ $f == */ggml/* ]] && to=$bin/ggml/$(basename "$f" .xz)
		if command -v xz >/dev/null; then
			xz -dc "$f" >"$to" &
		else
			python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$f" "$to" &
		fi
	done
	wait
	chmod +x "$bin"/attn* "$bin"/*.test
	echo "$bin"
}

# vulkan makes the loader and NVIDIA's ICD visible where the machine lacks
# them, and says which adapter attn sees.
vulkan() {
	local dir=$1
	[[ -n ${GPU_HW_VULKAN_DONE:-} ]] && return
	local libs
	libs=$(ldconfig -p 2>/dev/null)
	if ! grep -q 'libvulkan.so.1' <<<"$libs" || ! grep -q 'libGLdispatch.so.0' <<<"$libs"; then
		for f in "$dir"/debs/*.deb; do
			[[ -e $f ]] && dpkg -x "$f" /
		done
		ldconfig
	fi
	local icd=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
	if [[ -z ${VK_DRIVER_FILES:-}${VK_ICD_FILENAMES:-} && -f $icd ]]; then
		export VK_DRIVER_FILES=$icd
	fi
	local egl=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
	if [[ -z ${__EGL_VENDOR_LIBRARY_FILENAMES:-} && -f $egl ]]; then
		export __EGL_VENDOR_LIBRARY_FILENAMES=$egl
	fi
}

# sweep NAME ARGS… runs attn bench into a scratch folder, appends its
# table to the report and keeps its results.json as OUT/NAME.json.
sweep() {
	local name=$1 backend=${backend:-gpu}
	shift
	local tmp
	tmp=$(mktemp -d)
	{
		echo
		echo "## $name: attn bench $*"
		echo
		echo '```'
		"$bin/${attn_exe:-attn}" bench -backend "$backend" -strategy fused "$@" -out "$tmp" 2>&1 | grep -v -e '^[a-z_]*: ' -e '^\[' || true
		echo '```'
		if [[ $backend == gpu && -f $tmp/results.json ]]; then
			echo
			python3 -c 'import json, sys
for b in json.load(open(sys.argv[1]))["backends"]:
    print("Device time (gpu_s) on %s: %s" % (b["name"], b.get("device_time") or "not recorded"))' "$tmp/results.json" || true
		fi
	} >>"$out/report.md"
	[[ -f $tmp/results.json ]] && cp "$tmp/results.json" "$out/$name.json"
	rm -rf "$tmp"
}

run() {
	local dir=$1 out=$2 mode=$3
	shift 3
	dir=$(cd "$dir" && pwd)
	local bin
	bin=$(unpack "$dir")
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	vulkan "$dir"
	export ATTN_REQUIRE_GPU=1
	# ggml-vulkan's libraries where build packed them, and a python3
	# with NumPy (the device machine's first python3 has it).
	if [[ -z ${ATTN_GGML_LIBDIR:-} && -f $bin/ggml/libggml-vulkan.so ]]; then
		export ATTN_GGML_LIBDIR=$bin/ggml
		: "${ATTN_PEER_PYTHON:=$(command -v python3)}"
		export ATTN_PEER_PYTHON
	fi
	{
		echo "# attn on $(hostname), $(date -u +%FT%TZ), mode $mode"
		echo
		echo '```'
		command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv || true
		"$bin/attn" devices
		grep -m1 'model name' /proc/cpuinfo || true
		echo "cores: $(nproc)"
		echo '```'
	} >"$out/report.md"
	local short=() dec=(-n 4096,32768 -nq 1,4) batch=(-batch 16 -n 8192) pre=(-n 4096,16384) layers=(-n 4096 -layers 1,32) budget=1s
	if [[ $mode == quick ]]; then
		short=(-test.short)
		dec=(-n 256,1024 -nq 1,4) batch=(-batch 4 -n 512) pre=(-n 256) layers=(-n 256 -layers 1,4) budget=100ms
	fi
	case $mode in
	tests | long | quick)
		local t0=$SECONDS
		{
			if [[ $mode == long ]]; then
				echo "== gpu.test, ATTN_LONG"
				(cd "$root/gpu" && ATTN_LONG=1 "$bin/gpu.test" -test.timeout 9m -test.run 'TestLargeKV|TestLargePagedPool|TestParityLongN|TestSeqsPageTooLarge') && echo "gpu long: ok"
			else
				# On a GPU the whole suite runs, ATTN_LONG's tests too, verbose
				# so that a run stopped at the tool's limit still says how far
				# it got (grep line-buffered: a block-buffered grep killed at
				# the limit lost the whole log on the fourth H100 run). From a
				# cold driver cache the suite in one process did not end in
				# 180 s on the H100 (2026-11-26 and 27), compiling its
				# pipelines one at a time under the backend's lock (59 s once
				# they were cached), so the top-level tests go round-robin to
				# GPU_HW_SHARDS processes (6), run side by side with the
				# conformance suite's and ./kernels' processes: the driver
				# compiles in each at once. Each writes its own log, joined
				# into tests.log in order.
				local long=() shards=${GPU_HW_SHARDS:-6} i names=() pids=() logs=()
				[[ $mode == tests ]] && long=(env ATTN_LONG=1)
				mapfile -t names < <("$bin/gpu.test" -test.list '.*' | grep -E '^(Test|Fuzz|Example)')
				for ((i = 0; i < shards; i++)); do
					local re="" j
					for ((j = i; j < ${#names[@]}; j += shards)); do
						re+="${re:+|}${names[j]}"
					done
					[[ -n $re ]] || continue
					logs+=("$out/tests-gpu-$i.log")
					(
						echo "== gpu.test ${short[*]} ${long[*]}, shard $i of $shards: $re"
						(cd "$root/gpu" && "${long[@]}" "$bin/gpu.test" -test.timeout 6m -test.v -test.run "^($re)\$" "${short[@]}" | grep --line-buffered -E '^(--- |ok|FAIL|PASS|panic)|_test.go:') && echo "gpu shard $i: ok"
					) >"${logs[-1]}" 2>&1 &
					pids+=($!)
				done
				logs+=("$out/tests-conformance.log")
				(
					echo "== conformance.test ${short[*]}: the conformance suite (gpu/conformance)"
					(cd "$root/gpu/conformance" && "$bin/conformance.test" -test.timeout 4m -test.v "${short[@]}" | grep --line-buffered -E '^(--- FAIL|ok|FAIL|PASS|panic)|_test.go:') && echo "conformance: ok"
				) >"${logs[-1]}" 2>&1 &
				pids+=($!)
				# Every op on a device of WebGPU's default limits, as a program's
				# own device has (8 storage buffers a stage: the backward too).
				logs+=("$out/tests-conformance-default.log")
				(
					echo "== conformance.test ${short[*]} under ATTN_GPU_LIMITS=default"
					(cd "$root/gpu/conformance" && ATTN_GPU_LIMITS=default "$bin/conformance.test" -test.timeout 4m -test.v "${short[@]}" \
						-test.skip '^TestConformance/(Concurrent|Deterministic)$' | grep --line-buffered -E '^(--- FAIL|ok|FAIL|PASS|panic)|_test.go:') && echo "conformance (default limits): ok"
				) >"${logs[-1]}" 2>&1 &
				pids+=($!)
				logs+=("$out/tests-kernels.log")
				(
					echo "== kernels.test on the GPU: ONNX node tests, caches, packed"
					(cd "$root/kernels" && "$bin/kernels.test" -test.timeout 3m -test.run 'ONNX|Cache|Pool|Packed|Seqs' "${short[@]}") && echo "kernels: ok"
				) >"${logs[-1]}" 2>&1 &
				pids+=($!)
				# A stopped mode's TERM stops the test processes (on
				# 2026-11-28 they ran on through the sweeps after them, whose
				# times they spoiled) and joins their logs so far.
				trap 'pkill -TERM -f -- "$bin/" 2>/dev/null; sleep 1; cat "${logs[@]}" 2>/dev/null; exit 124' TERM
				local failed=0
				for i in "${pids[@]}"; do
					wait "$i" || failed=1
				done
				cat "${logs[@]}"
				rm -f "${logs[@]}"
				((failed == 0))
			fi
		} >"$out/tests.log" 2>&1 || echo "FAILED (see tests.log)" >>"$out/report.md"
		echo "tests took $((SECONDS - t0)) s" >>"$out/report.md"
		grep -E '^(--- FAIL|FAIL|ok|PASS|[a-z ]+: ok)' "$out/tests.log" | head -40 >>"$out/report.md" || true
		;;
	esac
	case $mode in
	bench | quick)
		local peers=()
		if [[ -n ${ATTN_GGML_LIBDIR:-} ]]; then
			peers=(-peers ggml-vulkan -peers-dir "$root/bench/peers")
		fi
		sweep decode -heads 32 -kvheads 8 -d 128 "${dec[@]}" -causal -dtype f32,f16 -budget "$budget" "${peers[@]}"
		sweep prefill -heads 8 -d 64,128 "${pre[@]}" -budget "$budget"
		# PyTorch and the model's step right after the defaults: the two
		# runs of 2026-11-26 that had them after the A/B sweeps stopped
		# before them.
		if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
			local ns=4096,32768
			[[ $mode == quick ]] && ns=256,1024
			{
				echo
				echo "## PyTorch SDPA (CUDA), the decoding shapes: python3 torchsdpa.py $ns"
				echo
				echo '```'
				python3 "$dir/torchsdpa.py" "$ns" | tee "$out/torch.json"
				echo '```'
			} >>"$out/report.md" 2>&1
		else
			echo "PyTorch with CUDA is not here: no SDPA rows" >>"$out/report.md"
		fi
		# fuseddecode.wgsl (decode.lanes=1) beside the decode sweep's
		# lanedecode.wgsl, the plan's decoding kernel with subgroups since
		# 2026-11-28, built without a GPU (docs/gpu.md).
		ATTN_GPU_PLAN=hardware ATTN_GPU_TUNE=decode.lanes=1 sweep decode-fused -heads 32 -kvheads 8 -d 128 "${dec[@]}" -causal -dtype f32,f16 -budget "$budget"
		# Issue 24: L attention calls over L caches as one step, one wait.
		sweep layers -heads 32 -kvheads 8 -d 128 "${layers[@]}" -nq 1 -causal -dtype f32,f16 -budget "$budget"
		# And submitting every 8 dispatches (4 layers) without a wait, so
		# that the device runs the first layers while the host records
		# the rest: on the fourth run (2026-11-27) the 32 layers took 2.98
		# ms of wall for 2.02 of device time, recording a layer 20 µs of
		# the host's (tune's step.flush rows were never reached).
		ATTN_GPU_PLAN=hardware ATTN_GPU_TUNE=step.flush=8 sweep layers-flush8 -heads 32 -kvheads 8 -d 128 "${layers[@]}" -nq 1 -causal -dtype f32,f16 -budget "$budget"
		# The A/B sweeps take the goals' N alone (the last of pre).
		local pre1=(-n "${pre[-1]##*,}")
		# Naga's runtime checks (ATTN_GPU_CHECKS; issue 101): the
		# default (bounds: clamps kept, loop counters gone) ran above; on
		# is what every run before 2026-11-29 had, off wgpu-native's
		# trusted modules with neither; then a0ce04b's kernels (checks
		# on), which no GPU ran, on the goals' shapes.
		ATTN_GPU_PLAN=hardware ATTN_GPU_CHECKS=on sweep decode-checks-on -heads 32 -kvheads 8 -d 128 "${dec[@]}" -causal -dtype f16 -budget "$budget"
		ATTN_GPU_PLAN=hardware ATTN_GPU_CHECKS=off sweep decode-checks-off -heads 32 -kvheads 8 -d 128 "${dec[@]}" -causal -dtype f16 -budget "$budget"
		ATTN_GPU_PLAN=hardware ATTN_GPU_CHECKS=on sweep prefill-checks-on -heads 8 -d 128 "${pre1[@]}" -dtype f32,f16 -budget "$budget"
		ATTN_GPU_PLAN=hardware ATTN_GPU_CHECKS=off sweep prefill-checks-off -heads 8 -d 128 "${pre1[@]}" -dtype f32,f16 -budget "$budget"
		if [[ -x $bin/attn-a0ce04b ]]; then
			ATTN_GPU_PLAN=hardware attn_exe=attn-a0ce04b sweep decode-a0ce04b -heads 32 -kvheads 8 -d 128 "${dec[@]}" -causal -dtype f16 -budget "$budget"
			ATTN_GPU_PLAN=hardware attn_exe=attn-a0ce04b sweep prefill-a0ce04b -heads 8 -d 128 "${pre1[@]}" -dtype f32,f16 -budget "$budget"
		fi
		# The prefill kernel the head dims did not pick: fusedtile.wgsl
		# at D = 64, where the plan runs fusedloop.wgsl written out (the
		# third run of 2026-11-26: 57.4 against 71.7 ms; at D = 128
		# fusedloop.wgsl took 343 against 127–130 ms). The hardware plan
		# is named so that quick mode runs it on lavapipe too.
		[[ -n ${GPU_HW_FULL:-} ]] && ATTN_GPU_PLAN=hardware ATTN_GPU_PREFILL=tile sweep prefill-tile -heads 8 -d 64 "${pre1[@]}" -dtype f32,f16 -budget "$budget"
		# The loops of fuseddecode.wgsl's P·V phase and of merge.wgsl
		# kept as loops (the defaults before the fourth run, 2026-11-27,
		# which wrote them out: decode.pv=64 and merge.unroll=8 took the
		# 4096-key step from 64.7 to 50.1 µs and the 32768-key one from
		# 223 to 182), beside the defaults of the decode sweep above.
		[[ -n ${GPU_HW_FULL:-} ]] && ATTN_GPU_PLAN=hardware ATTN_GPU_TUNE=decode.pv=1,merge.unroll=1 sweep decode-loops -heads 32 -kvheads 8 -d 128 "${dec[@]}" -causal -dtype f32,f16 -budget "$budget"
		# (decode.wide=1 and decode.ahead=1, swept here on 2026-11-28, and
		# decode.vwide, decode.next and merge.groups, are in docs/gpu.md's
		# tuning table: tune sweeps them again.)
		# fusedtile.wgsl without its loads ahead (tile.ahead=1: each
		# K and V tile loaded after the barrier before its use, as the
		# H200 ran it on 2026-11-28), beside the default's prefill at D
		# = 128 above.
		ATTN_GPU_PLAN=hardware ATTN_GPU_TUNE=tile.ahead=1 sweep prefill-noahead -heads 8 -d 128 "${pre1[@]}" -dtype f32,f16 -budget "$budget"
		# Its rows' key groups meeting by subgroup shuffles, not in
		# workgroup memory (tile-subgroups: off by default, untimed in
		# this form), beside the default's prefill at D = 128 above.
		ATTN_GPU_PLAN=hardware ATTN_GPU_FEATURES=tile-subgroups=on sweep prefill-tile-sg -heads 8 -d 128 "${pre1[@]}" -dtype f32 -budget "$budget"
		# Issue 59's f16 goal (f16 inputs and products).
		sweep prefill-f16 -heads 8 -d 64,128 "${pre1[@]}" -dtype f16 -budget "$budget"
		[[ -n ${GPU_HW_FULL:-} ]] && sweep batch -heads 32 -kvheads 8 -d 128 "${batch[@]}" -nq 1 -causal -dtype f32,f16 -budget "$budget"
		# The old binding (wgpu-native 0.17) on the same kernels and
		# plan: the third run of 2026-11-26 closed most of the prefill gap
		# by writing the loops out (within 4–8 %), not the decoding one
		# (0.17 took 0.62–0.78× v27's time).
		if [[ -n ${GPU_HW_FULL:-} && -x $bin/attn-gowebgpu ]]; then
			attn_exe=attn-gowebgpu sweep prefill-gowebgpu -heads 8 -d 64,128 "${pre1[@]}" -budget "$budget"
			attn_exe=attn-gowebgpu sweep decode-gowebgpu -heads 32 -kvheads 8 -d 128 "${dec[@]}" -causal -dtype f32,f16 -budget "$budget"
		fi
		# The pure-Go binding on the same plan: its SPIR-V has no loop
		# counters or index clamps (issue 91), f32 alone.
		if [[ -x $bin/attn-gogpu ]]; then
			ATTN_GPU_PLAN=hardware attn_exe=attn-gogpu sweep prefill-gogpu -heads 8 -d 64,128 "${pre1[@]}" -dtype f32 -budget "$budget"
			ATTN_GPU_PLAN=hardware attn_exe=attn-gogpu sweep decode-gogpu -heads 32 -kvheads 8 -d 128 "${dec[@]}" -causal -dtype f32 -budget "$budget"
		fi
		# What a dispatch costs with no work in it, the floor of a step,
		# and what recording a layer costs this host (issue 24: 32 layers
		# within 2 ms; not in quick mode, where lavapipe's waits between
		# the timed recordings take minutes).
		local benches='Dispatch|Record'
		[[ $mode == quick ]] && benches=Dispatch
		{
			echo
			echo "## Dispatch and recording cost: gpu.test -test.bench '$benches'"
			echo
			echo '```'
			(cd "$root/gpu" && "$bin/gpu.test" -test.run '^$' -test.bench "$benches" -test.benchtime "$budget" 2>&1 | grep -E 'Benchmark|ok|FAIL') || true
			echo '```'
		} >>"$out/report.md"
		;;
	cpu)
		{
			echo
			echo '## The host CPU'
			echo
			echo '```'
			grep -m1 -o -w -E 'amx_(tile|bf16|fp16|int8)|avx512_(bf16|fp16)|avx512f' /proc/cpuinfo | sort -u | tr '\n' ' ' || true
			echo
			amx
			echo '```'
		} >>"$out/report.md"
		# AMX's tiles where the CPU lists them: the bf16 GEMM's tests on
		# them (a refusal or a failed known-answer check fails), then bf16
		# below runs on them. A failure is reported and ends the mode with
		# a non-zero status once the sweeps below have run.
		amx_status=0
		if grep -qw amx_bf16 /proc/cpuinfo; then
			{
				echo
				echo '## AMX: cpu/internal/sgemm tests (ATTN_REQUIRE_AMX=1)'
				echo
				echo '```'
			} >>"$out/report.md"
			ATTN_REQUIRE_AMX=1 "$bin/sgemm.test" -test.run 'AMX|BF16' -test.v >"$out/amx-tests.log" 2>&1 || amx_status=$?
			# The 8-bit tile kernels' tests (cpu's Tile tests: the known-answer
			# checks, each kernel against the float64 product).
			(cd "$root/cpu" && ATTN_REQUIRE_AMX=1 "$bin/cpu.test" -test.run 'Tile' -test.v) >>"$out/amx-tests.log" 2>&1 || amx_status=$?
			# Then both packages' whole suites, as the README's test command
			# runs them on an AMX machine (issue 88: TestDotTiles and
			# TestAxpyTiles failed there and nowhere else).
			for t in sgemm:cpu/internal/sgemm cpu:cpu; do
				(cd "$root/${t#*:}" && ATTN_REQUIRE_AMX=1 "$bin/${t%%:*}.test" -test.timeout 4m) >>"$out/amx-tests.log" 2>&1 || amx_status=$?
			done
			grep -E '^(---|ok|FAIL|PASS)|amx_test|bf16_test|check' "$out/amx-tests.log" | tail -40 >>"$out/report.md" || true
			{
				echo '```'
				[ "$amx_status" = 0 ] || echo "**AMX tests FAILED (exit $amx_status): amx-tests.log**"
			} >>"$out/report.md"
		fi
		backend=cpu sweep cpu-prefill -heads 8 -d 64,128 -n 4096 -dtype f32,bf16 -budget 2s
		# Intel runs the 6×64 Sgemm kernel; 8×32 beside it, as measured on
		# the 2-core Xeon (cpu/internal/sgemm/kernel_amd64.go).
		ATTN_CPU_KERNEL=8x32 backend=cpu sweep cpu-prefill-8x32 -heads 8 -d 64,128 -n 4096 -dtype f32 -budget 2s
		# Intel widens bf16 where it has no AMX; VDPBF16PS beside it where
		# the CPU has it.
		if grep -qw avx512_bf16 /proc/cpuinfo; then
			ATTN_CPU_BF16=dot backend=cpu sweep cpu-prefill-dot -heads 8 -d 64,128 -n 4096 -dtype bf16 -budget 2s
		fi
		# Issue 59's AMX goal is on one core: bf16 beside f32 there.
		GOMAXPROCS=1 backend=cpu sweep cpu-prefill-1core -heads 8 -d 64,128 -n 2048 -dtype f32,bf16 -budget 2s
		# Issue 57 on the AMX class: each cache's decoding (q8 and fp8 on
		# AMX's tiles), and the shared-prefix step beside the unshared one.
		backend=cpu sweep cpu-decode -heads 32 -kvheads 8 -d 128 -n 32768 -nq 1 -causal -dtype f32,f16,q8,fp8 -budget 2s
		# The 8-bit caches beside f16 in three more rounds: one round put
		# q8 at 1.20× f16 on 2026-11-27 (0.87× the day before), its
		# range 741 % of its median. (The L1 and L2 prefetching twins,
		# compared here in three rounds on 2026-11-26 and 27, stayed
		# within the host's noise: Intel keeps the L1 ones.)
		# Each round with q8 off the tiles too, on the VNNI integer
		# kernels (ATTN_CPU_DECODE8=integer): on the Zen 4 they took q8
		# to 0.53–0.61× f16, where the tiles here gave 0.87–1.20×.
		local r
		for r in 1 2 3; do
			backend=cpu sweep cpu-decode8-$r -heads 32 -kvheads 8 -d 128 -n 32768 -nq 1 -causal -dtype f16,q8,fp8 -budget 2s
			ATTN_CPU_DECODE8=integer backend=cpu sweep cpu-decode8-int-$r -heads 32 -kvheads 8 -d 128 -n 32768 -nq 1 -causal -dtype q8 -budget 2s
		done
		# Batched decoding over 256-key pages (16 × 8192 keys), BHND and
		# BNHD, with the tiles and with q8 off them.
		{
			echo
			echo '## Batched decoding: kernels.test -test.bench CacheDecodeBatch (auto, then ATTN_CPU_DECODE8=integer)'
			echo
			echo '```'
			(cd "$root/kernels" && "$bin/kernels.test" -test.run '^$' -test.bench 'CacheDecodeBatch/.*/(f16|q8)$' -test.benchtime 10x 2>&1 | grep -E 'ns/op|^(ok|FAIL)') || true
			(cd "$root/kernels" && ATTN_CPU_DECODE8=integer "$bin/kernels.test" -test.run '^$' -test.bench 'CacheDecodeBatch/.*/q8$' -test.benchtime 10x 2>&1 | grep -E 'ns/op|^(ok|FAIL)') || true
			echo '```'
		} >>"$out/report.md"
		backend=cpu sweep cpu-cascade -prefix 8192 -batch 32 -n 8448 -nq 1 -heads 32 -kvheads 8 -d 128 -dtype f16 -causal -budget 2s
		if [ "$amx_status" != 0 ]; then
			echo "gpu-hw.sh: the AMX tests failed (exit $amx_status); see $out/amx-tests.log" >&2
			exit "$amx_status"
		fi
		;;
	more)
		# Issues 56–58 on the device: each sweep side by side with what
		# it is measured against, in one attn bench run.
		local dn=(-n 4096,32768) tr=(-n 32768) cas=(-prefix 8192 -batch 32 -n 8448) sp=(-n 32768 -topk 0,2048) bw=(-n 4096) mb=1s tns=4096
		[[ -n ${GPU_HW_FULL:-} ]] && bw=(-n 4096,16384) tns=4096,16384
		if [[ -n ${GPU_HW_SMALL:-} ]]; then
			dn=(-n 1024) tr=(-n 512) cas=(-prefix 256 -batch 4 -n 300) sp=(-n 2048 -topk 0,256) bw=(-n 256) mb=100ms tns=256
		fi
		sweep decode8 -heads 32 -kvheads 8 -d 128 "${dn[@]}" -nq 1 -causal -dtype f16,q8,fp8,q4 -budget "$mb"
		# The same through fuseddecode.wgsl (decode.lanes=1).
		ATTN_GPU_PLAN=hardware ATTN_GPU_TUNE=decode.lanes=1 sweep decode8-fused -heads 32 -kvheads 8 -d 128 "${dn[@]}" -nq 1 -causal -dtype f16,q8,fp8,q4 -budget "$mb"
		# A 32-token draft tree over the cache beside the same 32 rows as
		# a causal chunk (issue 79), f16.
		sweep tree -heads 32 -kvheads 8 -d 128 "${tr[@]}" -tree 32 -dtype f16 -budget "$mb"
		[[ -n ${GPU_HW_FULL:-} ]] && sweep decode8-d80 -heads 32 -kvheads 8 -d 64,80 "${dn[@]}" -nq 1 -causal -dtype q8 -budget "$mb"
		sweep cascade "${cas[@]}" -nq 1 -heads 32 -kvheads 8 -d 128 -dtype f16 -causal -buffers -budget "$mb"
		sweep sparse -heads 32 -kvheads 8 -d 128 "${sp[@]}" -nq 1 -dtype f16 -causal=false -budget "$mb"
		sweep backward -heads 8 -d 64,128 "${bw[@]}" -causal=false -backward -budget "$mb"
		if python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
			{
				echo
				echo "## PyTorch SDPA (CUDA) forward and backward: python3 torchsdpa.py backward $tns"
				echo
				echo '```'
				python3 "$dir/torchsdpa.py" backward "$tns" | tee "$out/torch-backward.json"
				echo '```'
			} >>"$out/report.md" 2>&1
		else
			echo "PyTorch with CUDA is not here: no SDPA backward rows" >>"$out/report.md"
		fi
		;;
	tune)
		tune "$@"
		;;
	esac
	echo "gpu-hw.sh: wrote $(ls "$out" | tr '\n' ' ')"
}

# tune [SETTING…] runs the decoding and prefill shapes under each
# ATTN_GPU_TUNE setting (the hardware plan's sizes,
# gpu/internal/plan/tune.go), "" being the defaults, into OUT/tune.json,
# and summarises them in the report.
tune() {
	# The third run of 2026-11-26 swept fusedtile.wgsl's sizes one at a
	# time and set decode.target=256, tile.unroll=4 and loop.unroll=256
	# (whole loops) from them: what is left is their pairs, and decoding's
	# sizes around the new target. Prefill's D = 64 runs fusedloop.wgsl
	# now, which only loop.unroll sizes.
	# The fourth run (2026-11-27) made decode.pv=64 and merge.unroll=8
	# the defaults; what is left is the sizes around them, few enough
	# that prefill's pairs are reached.
	# lanedecode.wgsl (2026-11-28) brings its own: the lanes a key, the
	# keys a trip, and the workgroups a step.
	local decode=("" decode.lanes=1 decode.lanes=8 decode.lanes=32 decode.batch=1 decode.batch=4 decode.target=512 decode.target=1024)
	local prefill=("" tile.wg=256 tile.unroll=8 tile.unroll=32 tile.wg=256,tile.unroll=32 tile.wg=256,tile.rows=128 loop.unroll=8)
	local layers=("" step.flush=4 step.flush=8 step.flush=16 step.flush=64)
	if [[ $# -gt 0 ]]; then
		decode=("" "$@") prefill=("" "$@") layers=("" "$@")
	fi
	# It stops 45 s before its limit (GPU_HW_LIMIT, which multi sets to
	# a mode's share; 545 s alone) to write its table.
	local t0=$SECONDS tmp stop=$((${GPU_HW_LIMIT:-545} - 45))
	tmp=$(mktemp -d)
	local n=0 set kind
	export ATTN_GPU_PLAN=hardware
	# Decoding first: its knobs (decode.pv, merge.unroll) are the open
	# question after the third run of 2026-11-26, which swept prefill's.
	# GPU_HW_TUNE_KINDS (say "decode") and GPU_HW_TUNE_DTYPE (say "f16")
	# narrow the sweep to those kinds and the decoding points to that
	# dtype.
	for kind in ${GPU_HW_TUNE_KINDS:-decode prefill layers}; do
		local sets=("${decode[@]}")
		[[ $kind == prefill ]] && sets=("${prefill[@]}")
		[[ $kind == layers ]] && sets=("${layers[@]}")
		for set in "${sets[@]}"; do
			if ((SECONDS - t0 > stop)); then
				echo "tune: stopped at $kind ${set:-defaults} after $((SECONDS - t0)) s, within the device tool's 10 minutes" >>"$out/report.md"
				break 2
			fi
			n=$((n + 1))
			local args=(-heads 32 -kvheads 8 -d 128 -n 4096,32768 -nq 1 -causal -dtype "${GPU_HW_TUNE_DTYPE:-f32,f16}")
			[[ $kind == prefill ]] && args=(-heads 8 -d 64,128 -n 16384)
			[[ $kind == layers ]] && args=(-heads 32 -kvheads 8 -d 128 -n 4096 -nq 1 -causal -layers 1,32 -dtype f32,f16)
			# GPU_HW_SMALL=1: small shapes, for trying the mode on lavapipe.
			if [[ -n ${GPU_HW_SMALL:-} ]]; then
				args=(-heads 8 -kvheads 2 -d 64 -n 512 -nq 1 -causal -dtype f32)
				[[ $kind == prefill ]] && args=(-heads 2 -d 64 -n 128)
				[[ $kind == layers ]] && args=(-heads 8 -kvheads 8 -d 64 -n 256 -nq 1 -causal -layers 1,4)
			fi
			echo "$kind|$set" >"$tmp/$n.set"
			ATTN_GPU_TUNE=$set "$bin/attn" bench -backend gpu -strategy fused "${args[@]}" -budget "${GPU_HW_TUNE_BUDGET:-1s}" -out "$tmp/$n" >"$tmp/$n.log" 2>&1 ||
				echo "tune: $kind ${set:-defaults} failed: $(tail -3 "$tmp/$n.log")" >>"$out/report.md"
		done
	done
	python3 - "$tmp" "$out" <<'PY' >>"$out/report.md"
import glob, json, os, sys
tmp, out = sys.argv[1], sys.argv[2]
runs = []
for f in sorted(glob.glob(os.path.join(tmp, "*.set")), key=lambda f: int(os.path.basename(f)[:-4])):
    kind, setting = open(f).read().strip().split("|", 1)
    res = os.path.join(f[:-4], "results.json")
    r = json.load(open(res)) if os.path.exists(res) else {}
    gpu = {k: v for k, v in r.get("machine", {}).items() if k.startswith("gpu_")}
    runs.append({"kind": kind, "tune": setting, "detail": [b.get("detail") for b in r.get("backends", [])], "gpu_ceilings": gpu, "points": r.get("points", [])})
json.dump(runs, open(os.path.join(out, "tune.json"), "w"), indent=1)
def label(p):
    return "H%d/%d D%d N%d Nq%d %s%s%s" % (p["h"], p["kv_heads"], p["d"], p["n"], p["nq"], p.get("dtype", "f32"), " causal" if p["causal"] else "", " L%d" % p["layers"] if p.get("layers") else "")
print("\n## tune: ATTN_GPU_PLAN=hardware, ATTN_GPU_TUNE per row (attn bench -budget %s)\n" % os.environ.get("GPU_HW_TUNE_BUDGET", "1s"))
print("| kind | ATTN_GPU_TUNE | point | GPU time | wall | kernels | status |")
print("|---|---|---|---:|---:|---|---|")
best, default = {}, {}
for run in runs:
    for p in run["points"]:
        key = (run["kind"], label(p))
        # A step's early submissions overlap the host's recording with
        # the device's work: its wall time is what they change.
        g = p["median_s"] if run["kind"] == "layers" else (p.get("gpu_s") or p.get("median_s"))
        ks = " ".join("%s %.1f" % (k, 1e6 * v) for k, v in sorted((p.get("gpu_kernels") or {}).items()))
        print("| %s | %s | %s | %.1f µs | %.1f µs | %s | %s |" % (run["kind"], run["tune"] or "(defaults)", key[1], 1e6 * (p.get("gpu_s") or p["median_s"]), 1e6 * p["median_s"], ks, p.get("status")))
        if p.get("status") != "ok":
            continue
        if run["tune"] == "" and key not in default:
            default[key] = g
        if key not in best or g < best[key][0]:
            best[key] = (g, run["tune"] or "(defaults)")
print("\nThe fastest setting of each point by GPU time (layers: by wall time), against the defaults':\n")
for key, (g, setting) in best.items():
    d = default.get(key)
    print("- %s %s: %s, %.1f µs%s" % (key[0], key[1], setting, 1e6 * g, " (%.2f× the defaults' %.1f µs)" % (g / d, 1e6 * d) if d else ""))
PY
	rm -rf "$tmp"
}

# amx says whether this process may use AMX's tile data: the kernel's
# supported extended features (ARCH_GET_XCOMP_SUPP, 0x1021) and a request
# for XTILEDATA, feature 18 (ARCH_REQ_XCOMP_PERM, 0x1023), as attn's
# AMX path would make it.
amx() {
	python3 - <<'PY' || echo "amx: python3 could not ask"
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
SYS_arch_prctl = 158
supp = ctypes.c_uint64(0)
if libc.syscall(SYS_arch_prctl, 0x1021, ctypes.byref(supp)) != 0:
    print("amx: ARCH_GET_XCOMP_SUPP failed:", os.strerror(ctypes.get_errno()))
else:
    print("amx: XCOMP_SUPP %#x, XTILEDATA (bit 18) %s" % (supp.value, "supported" if supp.value >> 18 & 1 else "not supported"))
if libc.syscall(SYS_arch_prctl, 0x1023, 18) != 0:
    print("amx: ARCH_REQ_XCOMP_PERM(18) refused:", os.strerror(ctypes.get_errno()))
else:
    print("amx: ARCH_REQ_XCOMP_PERM(18) granted")
PY
}

# multi DIR OUT MODE[:SECONDS],… runs the modes in one call of the device
# tool: the GPU's one after the other, each stopped at its SECONDS or at
# what is left of GPU_HW_DEADLINE (560 s, inside the tool's 600), and cpu
# beside them on the other half of the cores. OUT gets MODE.md for each,
# run.log (what each took, how it ended) and all.tgz (every JSON and log):
# within the 8 files the tool brings back.
multi() {
	local dir=$1 out=$2 modes=$3
	local t0=$SECONDS deadline=${GPU_HW_DEADLINE:-560}
	dir=$(cd "$dir" && pwd)
	mkdir -p "$out"
	out=$(cd "$out" && pwd)
	GPU_HW_BIN=$(unpack "$dir")
	vulkan "$dir"
	export GPU_HW_BIN GPU_HW_VULKAN_DONE=1
	local tmp log=$out/run.log
	tmp=$(mktemp -d)
	echo "gpu-hw.sh $modes: unpacked in $((SECONDS - t0)) s" >"$log"
	local gpu=() cpu="" m
	IFS=, read -ra ms <<<"$modes"
	for m in "${ms[@]}"; do
		[[ ${m%%:*} == cpu ]] && cpu=$m || gpu+=("$m")
	done
	local n half a=() b=()
	n=$(nproc)
	half=$((n / 2))
	if [[ -n $cpu && ${#gpu[@]} -gt 0 && $n -ge 4 ]] && command -v taskset >/dev/null; then
		a=(taskset -c "0-$((half - 1))") b=(taskset -c "$half-$((n - 1))")
	fi
	step() {
		local m=${1%%:*} cap=${1#*:} left
		[[ $cap == "$1" ]] && cap=$deadline
		left=$((deadline - (SECONDS - t0)))
		((cap < left)) && left=$cap
		if ((left < 20)); then
			echo "$m: not run, $((SECONDS - t0)) s of $deadline gone" >>"$log"
			return
		fi
		local s0=$SECONDS rc=0
		shift
		GPU_HW_LIMIT=$left "$@" timeout "$left" bash "${BASH_SOURCE[0]}" mode "$dir" "$tmp/$m" "$m" >"$tmp/$m.log" 2>&1 || rc=$?
		echo "$m: exit $rc after $((SECONDS - s0)) s (limit $left s)$([[ $rc == 124 ]] && echo ', stopped')" >>"$log"
		cp "$tmp/$m/report.md" "$out/$m.md" 2>/dev/null || true
	}
	local pid=""
	if [[ -n $cpu ]]; then
		step "$cpu" "${b[@]}" &
		pid=$!
	fi
	for m in "${gpu[@]}"; do
		step "$m" "${a[@]}"
	done
	[[ -n $pid ]] && wait "$pid"
	echo "all: $((SECONDS - t0)) s" >>"$log"
	tar -C "$tmp" -czf "$out/all.tgz" .
	cat "$log"
}

case ${1:-} in
build)
	[[ $# -eq 2 ]] || usage
	build "$2"
	;;
run)
	# Every list of modes, one mode too, goes through multi, whose OUT
	# stays within the device tool's 8 files (bench alone writes 15);
	# tune with its SETTINGs runs alone (report.md and tune.json).
	names='tests|long|bench|more|cpu|quick|tune'
	if [[ $# -eq 4 && $4 =~ ^(($names)(:[0-9]+)?)(,($names)(:[0-9]+)?)*$ ]]; then
		multi "$2" "$3" "$4"
		exit
	fi
	[[ $# -ge 5 && $4 == tune ]] || usage
	shift
	run "$@"
	;;
mode)
	# multi's own: one mode into its scratch folder.
	shift
	run "$@"
	;;
*) usage ;;
esac
