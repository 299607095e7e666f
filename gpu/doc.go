// Package gpu is attn's WebGPU backend: the WGSL kernels of package
// shaders run through wgpu-native (29 by default; 0.17 with -tags
// gowebgpu), or through github.com/gogpu/wgpu, WebGPU in Go, with -tags
// gogpu (no cgo; attn compiles its kernels to SPIR-V with gogpu/naga,
// without loop-bounding counters), on a Vulkan adapter — a
// real GPU, or Mesa's lavapipe on CPU-only machines
// (apt-get install mesa-vulkan-drivers).
//
// Importing it registers the backend "gpu" with backend.Register at a
// priority above the CPU's, so backend.Open("auto") prefers it and falls
// back to the CPU, saying why, when no adapter opens. Built without cgo
// (and without -tags gogpu) or with -tags nogpu the package keeps its API
// but New returns an error wrapping backend.ErrUnavailable.
//
// # Environment
//
//   - ATTN_ADAPTER picks the adapter whose name contains it (any case);
//     unset, the high-performance Vulkan adapter is used.
//   - ATTN_GPU_LOG turns wgpu's log on at a level (error, warn, info,
//     debug, trace); it is off otherwise. Opening the backend sets
//     NODEVICE_SELECT=1 when unset, which turns off Mesa's device-select
//     layer and the warnings it prints on machines without a desktop.
//   - ATTN_GPU_LIMITS=default makes New ask for a device of WebGPU's
//     default limits (8 storage buffers a stage, 128 MiB a binding,
//     256 MiB a buffer, 16 KiB of workgroup memory, 256 invocations), as
//     a program's own device passed to NewWithDevice usually has, in
//     place of the adapter's (adapter, the default): every op runs
//     within them, and CI's conformance suite runs so. Info().Detail
//     says so.
//   - ATTN_GPU_PLAN picks how work is cut (see below): auto, the default,
//     from the adapter's type; cpu or hardware force a plan, so that the
//     hardware plan's kernels and chunks run, and are tested, on lavapipe
//     too. Backend.Info().Detail names the plan in use.
//   - ATTN_GPU_TARGET=h100, h200, rdna3 or apple plans, on any adapter,
//     for that device: the hardware plan with its least subgroup size
//     (32), its workgroup memory (48, 48, 64 and 32 KiB) and its
//     invocations (1024) in place of the adapter's. It is for compiling
//     and counting the kernels that device would run (internal/cmd/aco
//     holds them to a real GPU compiler, internal/cmd/spirvmix counts
//     them): the kernels are compiled and no op dispatches anything, its
//     outputs left as they were. ATTN_GPU_PLAN=cpu beside it is an error.
//     Info().Detail names the target.
//   - ATTN_GPU_CHECKS sets which of naga's runtime checks the kernels
//     keep: bounds (the default build's default: its index clamps, not
//     its loop-bounding counters, through wgpu-native's trusted shader
//     modules), on (wgpu's own: both) or off (neither). attn's loops all
//     end at bounds the host computes, and every index a kernel takes
//     from the caller's data is validated on the host first
//     (docs/semantics.md#gpu). The gogpu build compiles with neither and
//     go-webgpu's with both; each refuses another setting
//     (backend.ErrUnavailable). Info().Detail names the setting.
//   - ATTN_GPU_PREFILL picks the hardware plan's kernel for steps that
//     do not decode: auto, the default, runs fusedloop.wgsl (a query row
//     an invocation, its loops over the head dims written out) where both
//     head dims are at most 64 and fusedtile.wgsl past them (an H100 runs
//     D = 64 faster through fusedloop.wgsl, D = 128 much faster through
//     fusedtile.wgsl: docs/gpu.md); tile and loop force one kernel, so
//     that the two can be measured side by side on a GPU (bench/gpu-hw.sh
//     does).
//   - ATTN_GPU_TUNE sets the hardware plan's kernel sizes for measurement,
//     as comma-separated name=value pairs, each value a power of two:
//     decode.wg, decode.rows and decode.keys (fuseddecode.wgsl's
//     invocations, most query rows and most keys a tile: 256, 16, 64),
//     decode.unroll, tile.unroll and loop.unroll (how many iterations of
//     fuseddecode.wgsl's, fusedtile.wgsl's and fusedloop.wgsl's loops
//     with constant trip counts, staging included, one trip writes out:
//     1, 4 and 256, where 1 keeps the loops as loops; a factor the trip
//     count does not divide is lowered to the largest power of two that
//     does, and one that reaches it leaves no loop: a driver that cannot
//     unroll naga's bounded loops itself gets them unrolled; the CPU
//     plan's fusedloop.wgsl keeps its loops), decode.pv (how many of an
//     invocation's keys of a tile fuseddecode.wgsl's P·V loop writes
//     out a trip, their V loads issued together: 64, the whole loop),
//     decode.ahead (the most vec4s of V one fuseddecode.wgsl invocation
//     loads at a tile's start for its P·V phase, where that phase's loop
//     is written out whole: 16; 1 leaves the loads to that phase),
//     tile.ahead (the most vec4s of a K or V tile one fusedtile.wgsl
//     invocation loads into registers ahead of their use, the next
//     tile's K during a tile's scores and its V before them: 8; 1 loads
//     none ahead),
//     decode.wide (the most vec4s of a half K one fuseddecode.wgsl
//     invocation stages a load, within the head dim's unit of 8 or 16
//     halves, 1 also reading an 8-bit or 4-bit one a vec4 a load rather
//     than a block: 4), decode.vwide (the same for V, whose unit an
//     invocation's sums hold in registers: 1), decode.next (the most
//     vec4s of the next tile's K one fuseddecode.wgsl invocation loads
//     during a tile: 1, none), decode.lanes (lanedecode.wgsl's lanes a
//     key, within the device's least subgroup size: 16; 1 decodes by
//     fuseddecode.wgsl), decode.batch (its keys a team of lanes takes a
//     trip, their loads issued together: 2),
//     decode.target and decode.split (the workgroups a decoding step
//     splits its keys for and the fewest keys a split: 256, 128),
//     merge.lanes (merge.wgsl's invocations of a group: 32),
//     merge.groups (its groups a row, a workgroup a row, each group
//     folding every merge.groups-th part: 8; 1 makes rows of lanes that
//     each fold every part), merge.unroll (the parts each of
//     merge.wgsl's loops over them writes out a trip, their loads issued
//     together: 8; the CPU plan's keep their loops),
//     split.target (the
//     other fused kernels' workgroups wanted a step: 256), tile.wg,
//     tile.rows, tile.keys and tile.reg (fusedtile.wgsl's invocations,
//     most query rows and keys a tile and most vec4s a register block:
//     128, 64, 32, 16), step.flush (the dispatches a Step records before
//     it submits them without a wait, so that the device runs them while
//     the host records the rest: 1024, i.e. only the budget does). The rows, keys and registers are bounds the
//     planners lower where a problem or the workgroup memory needs, as
//     they lower the defaults. Info().Detail names what is set; a bad
//     value, or a value other than the default under the CPU plan, which
//     runs none of these kernels, makes New fail with ErrUnavailable
//     naming it. A value the device cannot run as set is refused, its
//     knob's default run, and Info().Detail (and stderr, once) says
//     which and why: decode.lanes past the device's least subgroup size
//     or without subgroups, a workgroup past its invocations, tiles its
//     workgroup memory holds at no head dim.
//     bench/gpu-hw.sh tune sweeps settings on a GPU.
//   - ATTN_GPU_TUNE_FILE says where the tuning file is that Tune (attn
//     tune) writes and New reads: unset, a file of the user's cache
//     directory (os.UserCacheDir) named for its key, the adapter, driver,
//     binding and kernels, and no module version of attn's, so that a
//     program requiring attn reads what attn tune in a clone wrote;
//     "off", none is read; otherwise its path. Info().Detail lists the
//     shape classes it tunes and their settings, each setting the device
//     cannot run refused, or why the file was not read: a file of
//     another device, driver, binding or kernels, of an earlier format,
//     unreadable, or with a value out of a knob's range is ignored
//     whole, with one warning on stderr, and the defaults run.
//     ATTN_GPU_TUNE, when set, overrides the file.
//   - ATTN_GPU_FEATURES sets which optional WebGPU features the kernels
//     use where the device has them: f16, subgroups and tile-subgroups,
//     each =on, =off or =auto, comma-separated. Auto, the default, is the
//     plan's choice: subgroups under both plans, f16 under the hardware
//     plan only (lavapipe runs f16 conversions slower than
//     unpack2x16float), and tile-subgroups (subgroups in fusedtile.wgsl,
//     which only the hardware plan runs, where subgroups is on) off under
//     the hardware plan (an H100 runs its prefill faster without them).
//     With shader-f16 (and a binding whose compiler
//     takes WGSL's f16: wgpu-native 29, not go-webgpu's 0.17), fused.wgsl,
//     fuseddecode.wgsl and fusedtile.wgsl bind float16 operands as f16 and
//     widen them by conversion; with subgroups, fused.wgsl's key lanes
//     meet through subgroupMax and subgroupAdd, the hardware plan decodes
//     by lanedecode.wgsl (its lanes' shares of a score summed by
//     subgroupShuffleXor) where it knows the least subgroup size (the
//     binding's, or measured when the backend opens) and fuseddecode.wgsl
//     takes each tile's row maxima a subgroup a row, and with tile-subgroups
//     too, fusedtile.wgsl meets a row's key groups by shuffles. Either way the answers are
//     the same within float32's tolerance; the switch is there so that the
//     fallbacks are tested on devices that have the features (CI does) and
//     a GPU run can measure each. Info().Detail names the features in use.
//   - ATTN_REQUIRE_GPU=1 makes the package's tests fail, instead of skip,
//     when no adapter opens (CI sets it); the tests get their backend
//     from attn's package internal/gputest.
//
// # Memory
//
// A Buffer is one storage buffer (at least 16 bytes), zero-filled, up to
// the device's maxBufferSize (2 GiB on lavapipe): Len float32 values, or
// for Float16 and BFloat16 (Caps().Half) Len halves packed two to a u32
// word — element i in the low 16 bits of word i/2 when i is even, the
// high 16 when odd, which is also how WGSL's f16 arrays lay them out
// where the device has shader-f16. Q, K, V, O, masks, scores and LSE are laid out exactly as package
// backend says; nothing is copied or transposed on the device.
//
// Write rounds to a half dtype on the host (backend.DType.Encode, after
// CheckFits) and Read widens there (Decode); a range that starts or ends
// inside a word reads that word back first, since the queue writes whole
// words. The kernels read a half Q, K, V or bias through loaders that
// package shaders writes for each operand's dtype (float16 by
// unpack2x16float, bfloat16 by a 16-bit shift). No attention kernel
// writes halves: a half O is computed in a float32 scratch and pack.wgsl
// rounds it into O's buffer, one invocation per word (two invocations of
// the attention kernels can own the halves of one word), to nearest even
// with saturation (half.go).
//
// The quantized dtypes (Caps().Quant8: backend.Q8 and FP8;
// Caps().Quant4: backend.Q4; Fused's K and V only) are bytes four to a
// word: FP8 one E4M3 byte an element; Q8 in superblocks of 256 values in
// 272 bytes, the 256 int8 values then the float16 scales of their 8
// blocks of 32; Q4 in superblocks of 256 values in 144 bytes, each
// block's 16 bytes of 4-bit codes in ggml's order (byte i: element i in
// the low nibble, element i+16 in the high one), then the 8 scales as
// q8's (internal/plan/quantlayout.go), so that a superblock starts on 16
// bytes and the kernels load 16 codes (q8), a block's 32 (q4), or 8
// scales, at once. Write quantizes on the host as the CPU backend does
// (backend.QuantizeQ8, QuantizeQ4, EncodeFP8s) and uploads only the
// bytes it covers, Read widens on the host; the fused kernels widen in
// registers, q8 by sign-extending shifts times the block's scale, q4 by
// masks and shifts (code − 8, a q8 value of the same scale) times its
// scale, fp8 through a float16's bits (package shaders, Q8, Q4 and
// FP8), and apply Problem.Scales per KV head. Copy moves quantized bytes
// between buffers of one quantized dtype (copy8.wgsl); between a
// quantized buffer and another dtype it is ErrUnsupported. CopyQuant
// (backend.QuantCopier; Step.CopyQuant records it) quantizes float32 or
// half elements into a quantized buffer on the device (quant8.wgsl), as
// kernels' AppendBuffers does into a q8, q4 or fp8 cache: the CPU's
// bytes, every rounding done in integer arithmetic on float32 bits (no
// device rounding, fused multiply-add or flushed subnormal can move
// them), an fp8 value first divided by its KV head's scale. It adds
// what it saturates, and what no quantized value holds (NaN,
// infinities, into q8 a magnitude of backend.Q8Max or more, into q4 one
// of Q4Max or more), to a counts buffer on the device by atomics; it
// cannot refuse those without a round trip, so it stores them as NaN (a
// q8 or q4 block's scale 0x7e00 with codes 0, fp8's NaN pattern) and
// the cache reads the counts back when asked. A write that covers part
// of a word (a q8 or q4 block's scale is half of one) merges its bytes
// on the device (patch.wgsl), so that appends from several goroutines
// to one page pool never lose one. docs/gpu.md, "8-bit K and V", has
// the design and the measurements.
//
// Scratch that an op writes in full before reading it (a step's partial
// outputs and LSEs, a block table too large to inline) comes from a pool
// (pool.go): a buffer goes back once the work that used it is submitted
// and a later submission takes it again, so that a model's step does not
// create and destroy buffers every layer and token. The pool keeps at
// most 256 MiB; Memory counts it and Trim gives it back. Bind groups
// are kept too (groups.go), found again by their bindings, unless they
// bind a buffer of the caller's (Import), which the caller may destroy.
//
// # How an op runs
//
// Each op validates every argument and buffer first, then cuts the problem
// into dispatches that respect the device's limits (package
// gpu/internal/plan, which has no cgo, so that its tests run in every
// build; this package runs what it plans):
//
//   - each binding is a window of its buffer no larger than
//     maxStorageBufferBindingSize (128 MiB on lavapipe), at an aligned
//     offset; the shader subtracts the window's start from every index in
//     wrapping u32 arithmetic, so buffers up to 2 GiB and beyond work;
//     windows are cut in elements and sized in stored bytes (a half
//     operand's window holds twice the rows, and the key chunks that
//     bindings bound grow with it);
//   - on a CPU-type adapter (lavapipe), no invocation loops more than
//     plan.LoopBudget times in all (lavapipe silently stops an invocation after
//     about 65 535 loop iterations), so the fused path cuts the key range
//     into splits whose normalised partial (O, LSE) merge.wgsl folds
//     together exactly, the staged context step accumulates over key
//     chunks, and scores over chunks of the head dimension; a hardware
//     adapter has no such cap, and its splits are as large as bindings
//     allow (internal/plan/adapterplan.go);
//   - the fused path runs a step's splits of the keys side by side, one
//     workgroup each (the grid's z), and merge.wgsl folds all of their
//     partial results at once — up to 64, whose partial O fit 16 MiB of
//     scratch (256 for the decoding kernel, below); a larger problem runs
//     its splits one after the other, each folded into the running
//     result. A step with fewer workgroups than the adapter wants
//     (decoding: a query or a few per sequence, few heads; 256
//     workgroups on a hardware adapter, two per host thread on a
//     CPU-type one) splits its keys further, down to 256 keys a split,
//     so that one long cache is read by many workgroups at once
//     (FlashAttention's split-KV; internal/plan/fusedplan.go).
//     merge.wgsl gives a row one invocation on a CPU-type adapter and 32
//     side by side on a hardware one, each summing its own columns over
//     the parts;
//   - the fused kernel is the one the adapter's plan chooses, once for
//     each shape of problem (plan.AdapterPlan.FusedFor, internal/plan's
//     kernel.go; each kernel is one type implementing plan.FusedKernel,
//     in a kernel_*.go file of its own, and FusedSupports asks the same
//     choice as Fused): on a CPU-type adapter fused.wgsl for the head dims
//     it can write out (with key lanes for decoding steps) and
//     fusedloop.wgsl for wider ones; on a hardware adapter fusedtile.wgsl
//     for prefill where its tiles fit workgroup memory, lanedecode.wgsl
//     (with subgroups) or fuseddecode.wgsl for decoding steps (at most 16
//     queries a sequence), fusedloop.wgsl elsewhere. docs/gpu.md ("Which kernel runs where") says why each,
//     with the measurements behind the choices;
//   - grids stay within maxComputeWorkgroupsPerDimension, and each
//     submission carries a bounded amount of work (far below Poll's 5 s),
//     with ctx checked between submissions.
//
// The variants of backend.Variants run in the kernels. Their per-head and
// per-batch data (ALiBi slopes, sink logits, each batch's key length and
// key range bases) travel per call in one small storage buffer
// (internal/plan/variants.go); Fused visits only the keys some row of a
// block may see by position, in row blocks of a window's band
// (internal/plan/fusedplan.go), so a sliding window of W keys costs
// O(N·W).
//
// # Gradients
//
// Backward (backend.Backwarder) computes dQ, dK, dV, the sinks' and the
// bias's gradients with every variant, GQA, both layouts, a bias (any
// float dtype the forward takes) and a keep-mask, dense or packed
// sequences, and Float32, Float16 or BFloat16 operands, each its own,
// by FlashAttention-2's method (backward.go): backdelta.wgsl takes each
// row's δ = dO·O, backkv.wgsl makes dK and dV over tiles of keys (a
// workgroup owns its keys' rows and loops over its KV group's query
// rows, a dispatch a query head) and backq.wgsl dQ over tiles of query
// rows, all recomputing the probabilities from Q, K, the masks (applied
// as the fused kernels apply them: the bias after the softcap, a −Inf
// bias or a keep of 0 hides the key) and the forward's LSE, so no Nq×Nk
// buffer exists. WebGPU has no float atomics: the dispatches add to dQ,
// dK and dV (zeroed first) one after the other, cut by the CPU plan's
// loop cap, and the host sums the sinks' gradients in float64. DBias =
// dS (before the softcap's derivative), summed over the dimensions the
// bias broadcasts, comes from backbias.wgsl: an invocation owns one
// element of DBias (zeroed first) and sums its terms, recomputing each
// (b, h, i, j)'s dS from the rows of Q, K, V and dO, a chunk of terms a
// dispatch (each adding, in order), so it needs no memory beyond DBias
// itself, costs 2·(D + Dv) multiply-adds a term (B·H·Nq·Nk terms in
// all, like one more pass over the scores), and sums a heavily
// broadcast bias (a scalar: every term into one element) on few
// invocations; it binds Q, K, V and dO whole (a problem whose operand
// exceeds one binding is ErrTooLarge with DBias). Packed sequences are
// found as in Fused (lib/seqs.wgsl: each sequence's first query and key
// row and counts from vars). Half operands are read through the
// loaders that widen them, float16 ones bound as WGSL f16 arrays where
// the plan's f16 is on (the F16 mode, as the forward's kernels:
// plan.BackwardPlan.UsesF16); a half dQ, dK or dV is summed in a float32
// scratch of its size and rounded once at the end (pack.wgsl), as a
// half O is. Under the CPU plan, or without subgroups, an invocation
// owns a whole key's or query row's sums; under the hardware plan with
// subgroups a key's or row's head dims are shared by 2 or 4 lanes of a
// subgroup, which sum their shares of each product by shuffles, so that
// an invocation's rows and sums fit a GPU's registers (plan.BackwardPlan's
// LanesKV and LanesQ). The
// kernels bind at most WebGPU's default of 8 storage buffers, so a
// device of the default limits runs them: what the call makes (the
// variant data, each query row's LSE and δ, a copy of the keep-mask)
// lies in one scratch buffer, bound as vars, which must fit one storage
// binding (else ErrTooLarge). A block mask's off
// blocks are skipped as the forward skips them (Caps.BackwardBlocks).
// Under an index list (Caps.BackwardIndices: shared or one a KV head,
// with every variant an index list takes) the host lays out each query
// row's keys as the caller listed them, less −1 and the keys its
// position hides, and their inverse, each key's rows ascending
// (plan.BackwardIndexLists), in two storage buffers, each within one
// binding (else ErrTooLarge); after backdelta.wgsl, backidxkv.wgsl sums
// a key's dK and dV on one invocation over the rows that name it (and
// their G query heads) and backidxq.wgsl a row's dQ over its keys, each
// reading the rows of Q, K, V and dO where they lie and walking its
// list in order, a chunk of its entries a dispatch under the CPU plan's
// loop cap (backward_indices.go): no atomics, the same bits on every
// run, and a key no row names keeps dK = dV = 0. Paged sequences,
// views, V from K, scales and quantized operands are ErrUnsupported
// there.
//
// # Packed sequences and paged caches
//
// Fused takes backend.Packed and backend.Paged (Caps.Seqs) in every
// fused kernel, both plans and every variant, mask and dtype. Nothing is
// gathered or copied: the kernels find every row where it is. Per call
// the host uploads, after the variant data in the same small storage
// buffer (plan.SeqsLayout), each sequence's first query row in Q, O and the
// LSE, its query count and its first key row in a packed K and V, and
// the block table as it is; a decoding step uploads these few words,
// never K or V. A workgroup covers query rows of one sequence and head,
// and one past its sequence's count returns at once; a packed operand's
// row is its sequence's first plus its own, a paged key's row is found
// through the table a key at a time (internal/shaders/lib/pages.wgsl), only for keys below the
// sequence's length, so unused entries (−1) are never read. The windows
// bound for a step cover the rows and pages its sequences touch. A paged
// pool larger than one binding is planned a sequence at a time, each
// step's keys cut where its pages would no longer fit one window
// (plan.PageCuts): pages allocated in order need few steps, scattered ones up
// to one a page. Packed queries of different lengths run over a grid of
// the longest, the workgroups past a shorter sequence's rows idle, as
// FlashAttention's varlen kernels do.
//
// Every op waits for its own work, so an op returning means its outputs
// are final — unless it is recorded in a Step (below). Every call into
// the device is serialised by one lock per Backend (WebGPU error scopes
// belong to the device, not to a goroutine), held to record and submit
// and never across a wait (docs/gpu.md, "Goroutines").
//
// # Inside the caller's GPU program
//
// NewWithDevice opens the backend on a device the caller created (with
// the adapter it came from, whose type picks the plan); attn submits to
// that device's queue, and Close releases only what attn created. These
// entry points take and give the binding's own types, NativeAdapter,
// NativeDevice and NativeBuffer: by default the *wgpu types of
// github.com/oliverbestmann/webgpu v1.36.0 (wgpu-native 29.0.1.1), with
// -tags gowebgpu those of github.com/rajveermalviya/go-webgpu/wgpu
// v0.17.1 (wgpu-native 0.17), with -tags gogpu those of
// github.com/gogpu/wgpu v0.31.5.
// Import wraps n elements of a caller's wgpu buffer at an aligned offset
// as a Buffer, with no copy, after checking its device, usage and size;
// Export returns the wgpu buffer and offset behind any Buffer of the
// backend, so the caller's kernels read attn's output where it lies. An
// import holds a reference of its own (wgpuBufferReference): either side
// may release its handle first, and releasing the import never destroys
// the caller's buffer.
//
// Record starts a Step: its ops record their kernels (their Params in
// one arena buffer, their bind groups found or made) instead of waiting, and
// Submit puts them on the queue as one command buffer, one compute pass,
// without a wait (the caller's own next submission runs after them), or
// Wait waits once. Work reaches the queue in call order: Write, Read, Sync and
// waited ops first submit what steps recorded. Scratch of recorded ops
// goes back to the backend's pool, and attn buffers released meanwhile
// are destroyed, only once the work that uses them is submitted (WebGPU
// then keeps them until it has run),
// and recorded work past a submission's budget is submitted early,
// without a wait. Only a Step's methods record; the Backend's own always
// wait. Package kernels' KVCache.AppendBuffers and AttendBuffers (and
// Seq's and PagePool's), which take keys, values and queries from the
// device, take the step to record into as an argument (a
// backend.Recording; nil waits): a model's whole decoding step, appends
// and attention of every layer, runs with one wait.
//
// What attn serialises: its own use of the device — every op's
// recording and submission, every map request, and the error scopes
// the binding pushes around each call — under the Backend's lock, which
// is never held across a wait: a waiting op, Read, Sync or Step.Wait
// asks for its submission's completion (or its buffer's mapping) under
// the lock and polls for it without, so other goroutines record and
// submit meanwhile (docs/gpu.md, "Goroutines"). What the caller must: not submit
// work that reads an op's output, or writes its inputs, before the op
// returned (or, in a step, before Submit returned); not destroy, or
// write from the host with Queue.WriteBuffer, a buffer that recorded
// work uses before Submit; and keep its own device calls from running
// at the same time as attn's where an error scope's report matters (a
// validation error of either may be reported to the other's scope, the
// scopes being the device's). attn polls the device while it waits, which
// may run the caller's callbacks too.
//
// # The binding, and hardening it
//
// Every call into the WebGPU binding goes through one internal package,
// gpu/internal/wg (device, queue, buffers with map and unmap, pipelines
// from WGSL, bind groups, encoders and compute passes, timestamp query
// sets, requests waited for by polling); the rest of this package names
// none of the binding's types.
//
// go-webgpu v0.17.1 hands C a pointer to a Go local as the userdata of
// MapAsync and OnSubmittedWorkDone; a garbage collection before the
// callback fires crashes the process. Under -tags gowebgpu, wg calls
// those two C functions itself with userdata in C memory and polls with
// Poll(false). The default binding keeps its callbacks in a table of its
// own, which the collector cannot free under C; wg uses them, and fills
// the binding's gaps with a small cgo shim over its handles (timestamps
// written on an encoder and inside a pass, submissions in an error
// scope, subgroup sizes, a reference of attn's own to an imported
// buffer, a refused request's words); a submission wgpu-native finds
// invalid outside an error scope aborts the process, so a read of a caller's buffer
// first checks it has not been destroyed (wg.Device.Alive). Some misuse aborts the
// process inside wgpu-native instead of returning an error (submitting
// while a buffer is mapped, using a destroyed buffer, mapping with an
// invalid mode); the backend's own state — a staging buffer mapped only
// by the read that holds it and used by no other submission, buffers
// destroyed only under the lock, the device released only once no wait
// polls it, every
// argument validated before anything is recorded — keeps those
// unreachable from the API.
//
// Device time (timing.go, backend.DeviceTimer): New requests the
// TimestampQuery feature where the adapter offers it; TimeDevice(true)
// brackets each submission's compute pass with timestamps written on
// its encoder, and DeviceTime resolves and reads them, summing the spans
// of the ops since the last read. wgpu-core resolves raw ticks and
// wgpu-native 0.17 gives no timestamp period (29's binding has
// Queue.GetTimestampPeriod; attn still calibrates), so it is calibrated
// against the host clock (TimestampPeriod). Where the device also has
// timestamps inside passes (wgpu-native 29 on lavapipe and most Vulkan
// GPUs; not the go-webgpu build), the pass writes one before each
// dispatch and one after the last, and KernelTimes (backend.KernelTimer)
// gives each kernel's share of the last read, by the kernel's name.
//
// wgpu-native 0.17 frees a closed device only with its instance, so each
// Backend creates an instance and releases it on Close; one more instance
// is created once and kept for the process, because NVIDIA's Vulkan
// driver does not load again after some 30 unload cycles (instance.go).
// An unbounded maxBufferSize (2⁶⁴ − 1, NVIDIA's) is requested as one
// less, which webgpu.h would otherwise read as "the default, 256 MiB".
// Waiting for work spins 2 ms on a hardware adapter before it sleeps
// (200 µs on a CPU-type one, whose work needs the host's cores), and its
// sleeps are the C library's nanosleep, short and growing to 200 µs: Go's
// time.Sleep wakes up to a millisecond late, and a decoding step takes
// well under a millisecond.
// Float32 subnormals may flush to zero, as WGSL allows and NVIDIA's GPUs
// do (Caps.FlushesSubnormals).
package gpu
