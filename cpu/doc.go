// Package cpu is the CPU backend of attn: scaled dot-product attention
//
//	O = softmax(scale · Q·Kᵀ + bias, masked) · V
//
// computed in float32 with Sgemm on blocked tiles, spread over a pool of
// goroutines. By default the Sgemm is attn's own (cpu/internal/sgemm): a
// blocked driver around an AVX-512 or AVX2+FMA register-tiled micro-kernel
// in Go assembly (NEON 8×12 on arm64), picked from the CPU at start-up,
// behind gonum's blas.Float32 interface, and gonum's pure Go where the CPU
// has none.
// Built with -tags openblas it is OpenBLAS through gonum.org/v1/netlib
// (cgo, libopenblas-dev), one OpenBLAS thread per worker. Info().Detail
// and Info().Adapter.Driver say which. Importing the package registers it with the backend
// package under the name "cpu" (priority 0, the fallback of "auto"); New
// opens one directly with options:
//
//	be, err := cpu.New(cpu.WithThreads(4))
//
// # Memory
//
// A Buffer is an ordinary slice on the Go heap, []float32 for Float32 and
// the stored bits in a []uint16 for Float16 and BFloat16 (Caps().Half);
// an 8-bit K or V (Caps().Quant8, quant.go) is a []int8 of q8 values with
// a []uint16 of their blocks' float16 scales, or a []uint8 of E4M3 bits;
// a q4 one (Caps().Quant4, quant4.go) a []uint8 of codes two a byte with
// its blocks' scales;
// Write and Read copy, and nothing is pinned. A buffer of 4 MiB or more
// asks Linux for transparent huge pages over its 2 MiB-aligned pages
// (madvise MADV_HUGEPAGE; honoured where transparent_hugepage is madvise
// or always), so that a cache read at random rows or at strides of
// a few KiB — an index list's keys, a KV head's rows of BNHD pages — pays
// a TLB miss a 2 MiB page, not a 4 KiB one (docs/benchmarks.md). Wrap and WrapBits
// (backend.Wrapper) make a Buffer of the caller's own slice instead, with
// no copy: package kernels passes Q, K and V so, read-only (Write, WriteBits
// and every op's output refuse such a buffer), and O as a writable wrap of
// the result's slice; an output that overlaps another operand's memory is
// refused. Q, K, V and O are row-major [B, H, N, D] or [B, N, H, D]
// (backend.Layout), Q, K and V at strides of their own when
// Problem.Views sets them (Caps().Strides). In every case one token's
// head vector is contiguous and the rows of one head sit at a fixed
// stride (backend.TensorStrides: D in BHND, H·D in BNHD; a view's Row),
// so a head's block of rows is a blas32.General with that stride and
// every layout goes into Gemm in place, without copies. Scores and weights are [B, H, Nq, Nk], LSE is
// [B, H, Nq], masks are broadcast through backend.Mask.Strides.
//
// Caps().MaxBufferLen is what the memory available when the backend
// opened holds (AvailableMemory: MemAvailable, lowered to the cgroup v2
// headroom), not a fixed guard, and Alloc refuses more with ErrTooLarge;
// it also asks again, at the call, before a buffer of 256 MiB or more, so
// that the kernel's OOM killer never answers in its place.
//
// # Storage dtypes
//
// Q, K, V, O and the bias may each be Float32, Float16 or BFloat16; the
// arithmetic is float32 whatever they are. A half operand is widened a
// tile at a time into the worker's float32 scratch as the tile is taken
// — Fused's Tq×D block of Q and each Tk×D block of K and Tk×Dv block of
// V, the staged ops' 64 rows of Q and K and V 256 keys at a time, the
// bias a row chunk at a time on the stack — and the float32 Gemms run on
// that, so no op ever holds a widened copy of a tensor; a Float32 operand
// is read in place as before. A half O is written through the narrowing
// conversion, to nearest with ties to even, a finite value past the
// dtype's range saturated to ±MaxFinite. Widening is exact (subnormals
// included). On amd64 both run in Go assembly, sixteen lanes with
// AVX-512F, eight with AVX2 (F16C for float16): float16 by VCVTPH2PS and
// VCVTPS2PH (imm 0, round to nearest even) after clamping to ±65504,
// bfloat16 by a 16-bit shift and by Encode's rounding in integer
// operations (not AVX512_BF16's VCVTNEPS2BF16, which flushes float32
// subnormals to zero). On arm64 they run in NEON, eight values a step
// (half_arm64.s): float16 by FCVTL and FCVTN, bfloat16 by zipping zeros
// in below it and, narrowing, by FEAT_BF16's BFCVTN where HWCAP2 reports
// it, else by Encode's rounding in integer operations; both narrowings
// saturate as narrow does. Elsewhere, under -tags purego and for the
// tails, in Go (backend.DType.Decode and Encode). TestWiden and TestNarrow hold
// each loop to Decode and Saturate bit for bit over every half pattern
// and the ties between them. Strides are in elements whatever the dtype.
// Widening costs little of a fused call: widened f16 and bf16 run at
// about float32's rate (BenchmarkDTypes; docs/benchmarks.md, "Prefill by
// dtype").
//
// Bfloat16 arithmetic: when Q, K and V are all BFloat16, Fused
// multiplies the stored bits on the path New chose (WithBF16, or
// ATTN_CPU_BF16=auto|amx|dot|widen, which overrides it; sgemm.ChooseBF16):
// by default AMX's TDPBF16PS on 32×32 blocks of tiles (VDPBF16PS at their
// edges) where the CPU has AMX-BF16 and Linux grants the tiles; else
// VDPBF16PS where the CPU has AVX512_BF16 and is not one of Intel's,
// whose VDPBF16PS runs at half their float32 FMA rate and so loses to
// the float32 kernel, where on AMD's Zen 4 and 5 it beats it (the commit
// that chose so has the measurements); else it widens to float32
// (bf16Tile, sgemm.BF16Path.GemmBand). The
// paths give different bits, so the choice follows the CPU's identity
// and the setting, never a timing: one binary on one machine gives the
// same bits every run (TestBF16SameBits). Each path runs only after it
// has multiplied a known product exactly in this process (a few hundred
// microseconds at the first New); one that answers wrong is never
// taken, and Info's Detail says which path runs, that it passed its
// check, and why a faster path the CPU has does not run. New reports
// ErrUnavailable for a setting the CPU cannot follow;
// GODEBUG=cpu.avx512bf16=off takes the kernels out, cpu.amxbf16=off AMX.
// The tiles are asked of Linux (arch_prctl) once, when New first needs
// to know; a refusal (an old kernel, or a C library's signal stack too
// small for the tiles' state) leaves the choice as without AMX, and
// Info's Detail says why. The tiles never outlive one assembly call,
// which configures them, runs a list of blocks and releases them. The
// path computes: Q·Kᵀ exact products with float32 sums, the online
// softmax in float32, P rounded to bfloat16 for P·V (O within
// 2⁻⁸·Σ_j w_j|v_j| more, the LSE unchanged; bfloat16 subnormals read as
// zero), as backend's contract allows for that choice of dtypes. The
// staged ops widen as above. The path has its own tiles
// (DefaultBF16Tiles, 512×1024). docs/benchmarks.md ("Prefill by dtype")
// has each path's rate against float32's.
//
// The softmax's bfloat16 loop (VCVTNEPS2BF16 on amd64) and FEAT_BF16's
// BFCVTN on arm64 are checked the same way at the first New (loopChecks),
// and turned off, with a note in Detail, on a wrong answer. attn has no
// AVX512_FP16 or NEON FP16 arithmetic path.
//
// # Staged ops
//
// Scores, Softmax and Context each cut the problem into work items of 64
// query rows of one head. Scores runs one Gemm (Q rows times Kᵀ) per item
// straight into the rows of S and carries them to the stage asked for
// (softcap, bias and ALiBi, hidden keys −Inf); Softmax normalises each
// row over the keys it may see (Problem.KeyRange, keep-mask, not −Inf),
// the sink joining the denominator, with the sum in float64, writing
// exact zeros elsewhere; Context runs one Gemm
// (P rows times V) per item. They materialise B·H·Nq·Nk floats.
//
// # Fused op and its tile loop
//
// Fused never holds more than one tile of scores. A work item is one tile
// of Tq query rows of one KV head: Tq/G positions of each of the G query
// heads that share it (GQA; one head when G = 1), ordered position-major
// so that their key ranges grow with the row, so that each K and V tile
// is read once for the whole group. It walks the keys in tiles of Tk,
// and runs its rows against each key tile as sub-tiles of DefaultSubTile
// rows, which share the tile: its K is packed for the micro-kernel once
// (sgemm.PackedB), a half K or V widened once, for all of them (by
// default 1024 rows by 512 keys in sub-tiles of 256 on the AVX-512 8×32
// kernel, 960 by 512 in sub-tiles of 120 on the 6-row kernels, AVX-512's
// 6×64 (Intel's default) and AVX2's 6×16: see DefaultTiles). Where K's
// and V's KV heads lie side by side in a key's row (BNHD, BNHD pages) and
// the items are few rows a head (decoding; a cascade's prefix pass), an
// item takes every KV head instead, a short key tile at a time, each
// head's rows in turn with their own running m, l and acc: a key's rows
// of all heads are then read together, where a head's rows alone, 2 KiB
// apart, came at half the memory's rate (docs/benchmarks.md). On the
// Gemms' path a half tile of every head is widened in one call, once,
// and each head reads its rows out of it (fused.wideHeads).
// For each sub-tile:
//
//	S    = scale · Qsub · Ktileᵀ             one Gemm into a sub×Tk scratch
//	S    = softcap(S) + bias − ALiBi         on the keys in the row's KeyRange
//	S    = −Inf where keep is 0 or the key lies outside the row's KeyRange
//	m'   = max(m, rowmax S)
//	P    = exp(S − m')
//	l    = l · exp(m − m') + Σ_j P
//	acc  = acc · exp(m − m') + P · Vtile    second Gemm, into a Tq×Dv scratch
//
// and finally, a sink folded into m and l, O = acc / l and
// LSE = m + log l. m and l are float64 per
// row; the tiles and acc are float32, as Gemm is. A row that has not seen
// a visible key keeps m = −Inf, l = 0 and zero weights, so a fully masked
// row comes out as zeros with LSE −Inf (the sink's logit with a sink) and
// never as NaN. The key loop runs from the first key the tile's first row
// may see to the last key its last row may see (Problem.KeyRange, which
// grows with the row): tiles wholly above the causal diagonal, past a key
// length or before a window's start are skipped, not masked, so a causal
// problem costs about half and a window of W keys O(N·W). Within a tile
// the rows' key ranges are the two Gemms' band (sgemm.Band): Q·Kᵀ skips
// the micro-kernel blocks no row of theirs sees and P·V the keys whose
// weights are all 0, so a causal diagonal or a window's edges cost about
// what they attend, and a sub-tile none of whose rows sees a key of the
// tile is skipped. Where every row of a sub-tile sees all of the tile's
// keys (all but a causal diagonal's and a window's edges), one call in Go
// assembly takes the softmax step of the whole sub-tile
// (softmaxRowsAVX512, softmaxRowsAVX2): each row's max with four
// accumulators (every row's before any exponential with AVX-512), then
// its exponentials in base 2 (2^t = 2^f·2^n, the polynomial by Horner's
// rule; with AVX-512 f = t − ⌊t⌋ by one VREDUCEPS and n = ⌊t⌋ taken by
// VSCALEFPS from t itself; within 8e-8 absolute of e^(x − m'),
// TestSoftmaxRows) and their sum; other rows go one at a time through
// rowMax and expShift. The bfloat16 path's sub-tiles take the same call
// with AVX512_BF16, its weights rounded to bfloat16 into P's tile as they
// are made (VCVTNEPS2BF16), which on Zen 4 ran faster than its rows one
// at a time (rowMax, expShiftBF16). Under a window whose span over a
// query tile is at most three key tiles, one key tile takes the span
// whole. The softcap's tanh runs sixteen
// lanes at a time with AVX-512F and eight with AVX2 (softcapAVX512,
// softcapAVX2: e^(−2|s|/C) in base 2, within 2e-7 of C, TestSoftcap), and
// ALiBi's distances as many (alibiAVX512, alibiAVX2, TestALiBi). On
// arm64 expShift, rowMax and scale run in NEON, eight values a step
// (expf_arm64.s: expf's reduction and coefficients, the polynomial by
// Estrin's scheme, the sum in float64; TestExpShiftNEON); the softcap,
// ALiBi and whole-sub-tile loops are Go there. Each
// worker's scratch is O(sub·Tk + Tq·(D+Dv) + Tk·(D+Dv)) floats whatever
// N is.
//
// # Decoding, packed and paged
//
// An item of at most 16 query rows (a group at one position, decoding,
// or a few, speculative decoding) gives the Gemms nothing to do: packing
// each key tile for a handful of rows costs more than multiplying it.
// With AVX-512F (or, eight lanes at a time, AVX2 with FMA and F16C) and
// head dims that are multiples of 16, such items run the decoding
// kernels instead (decode.go; decode_amd64.s, generated by
// _gen/decode.py; on arm64 decode_arm64.s, NEON, generated by
// _gen/decode_arm64.py): dotRows4 computes four query rows' scores against
// four keys at a time, reading K's rows where they lie and reducing
// sixteen accumulators by a transposing tree, and axpyRows4 adds the
// weighted V rows into the four accumulators 64 columns at a time, all
// columns of 64 keys before the next 64 (on AVX-512), so that no pass
// runs from the cache alone while memory idles; each
// reads float32, float16 (VCVTPH2PS) or bfloat16 rows as stored, so a
// half cache moves half the bytes, and they take precedence over the
// bfloat16 arithmetic path. An 8-bit K or V has kernels of its own
// (decode_quant_amd64.s, generated by _gen/decode_quant.py): q8 rows
// sign-extended, converted and multiplied by their block's scale, E4M3
// rows turned into float16 bits by a shift and a mask (the value times
// 2⁻⁸, the 2⁸ folded into the scores' factor and the output) and widened
// by VCVTPH2PS, so that an 8-bit cache is read in its own bytes; on arm64
// the same in NEON (decode_quant_arm64.s, generated by
// _gen/decode_quant_arm64.py: SSHLL, SCVTF and the scale's FCVTL for q8,
// SSHLL #7, BIC and FCVTL for E4M3); under purego the decoding loop
// widens them in Go. Where the CPU has AMX (INT8 and BF16, with
// AVX512-BW and VBMI) and Linux grants the tiles, an 8-bit run of 512
// keys or more runs on them instead (decode_tiles.go,
// decode_amx_amd64.go, decode_amx_amd64.s from _gen/decode_amx.py).
// q8: TDPBSSD multiplies 16 keys' codes of a block, read in place, by Q
// written once an item as four signed-byte digits (an integer below 2³⁰
// times a power of two a row), and TDPBUSD a pass of 64 columns of V's
// codes (put in VNNI's quads of keys by VPERMT2B and VPERMT2W) by P·d as
// four unsigned digits below 2³¹ of the call's bound (each row's
// largest weight times each block's largest scale); the int32 sums are
// exact and float32 only scales and adds them. A score is within
// 2⁻³⁰·max|q|·Σ|k| of the exact one and an output within
// 2⁻³⁰·max p·max d·Σ|codes|, beside float32's rounding of the sums.
// fp8: E4M3 bytes become bfloat16 by two VPERMI2B table lookups (every
// E4M3 value is a bfloat16 normal; the NaN pattern reads 480, as on the
// vector kernels), and TDPBF16PS multiplies them by Q, or P, as three
// bfloat16 parts (hi + mid + lo, their 24 bits), products exact and
// summed in float32 on the tile. A weight or Q that is not finite leaves
// the call to the vector kernels, unwritten, and so do runs shorter than
// 512 keys (tileMinKeys: over 256-key pages the tiles were slower).
// Each of the four kernels (q8 scores by TDPBSSD, q8 P·V by TDPBUSD,
// fp8 scores and fp8 P·V by TDPBF16PS) passes a known-answer check
// before a format runs on the tiles: both scores kernels must match a
// product whose every step is exact bit for bit, both P·V kernels a
// float64 product within the bound their tests hold them to. A format
// any of whose kernels fails stays on the vector kernels, and Info's
// Detail names each kernel that runs, or the check that failed.
// On an AVX2 CPU without AVX-512, and on a CPU with AVX512-VNNI where the
// tiles do not run, q8's P·V runs on an integer kernel instead
// (decode_int_amd64.go, decode_int_amd64.s from _gen/decode_int.py), where
// it passed its known-answer check in the process: chosen by the CPU, not
// by a timing, so that one binary gives the same bits every run (Info's
// Detail gives a 512-key tile's P·V time on it and on the widening
// kernel). A chunk of 64 keys' weights times V's block scales become int16
// digits, round(p·d·F) with F = 32000 over the row's largest weight times
// the block's largest scale in the chunk (at most 2¹⁰⁰), two keys' digits
// side by side, and VPMADDWD (AVX2: eight columns) or VPDPWSSD
// (AVX512-VNNI: sixteen, the add fused) takes two keys' codes,
// interleaved, at once into int32 sums added to acc times 1/F at the
// chunk's end (the two give the same bits, TestAxpyIntSameBits; a call
// takes at most eight blocks of a row, a key's block scales read as one
// vector of eight, and wider rows, MLA's 512, run as groups of eight,
// every group's digits made before any group's sums). An output is
// within max p·max d·Σ|codes|/64000 a chunk (at least 2⁻¹⁰¹·Σ|codes|),
// beside float32's rounding of the sums: each weight's digit within 2⁻¹⁶
// of the chunk's largest, against q8's own half a code step of each value.
// A weight that is not finite leaves its chunk and the rest to the
// widening kernel, unwritten. Within a paged run's last 64 keys it
// prefetches the next page's first rows. For rows of at most four
// blocks (D ≤ 128) the digits come from q8Weights4AVX2, a key pair in the
// eight lanes, the same bits as q8WeightsAVX2's. q8's scores run on an
// integer kernel too, past its own known-answer check. On AVX2
// (dotRows4Q8IntAVX2): Q is made once an item as int16 digits of each
// 32-value block, x = round(q·16383/max_b|q|), K's codes go into the
// high bytes of words (k·2⁸, exact), and VPMADDWD over two keys' rows
// adds their products into exact int32 sums a block (four products a
// lane: digits past 16383 could overflow them), turned to float32 once a
// block and scaled by max_b|q|/(16383·2⁸) and the key's block scale. A
// score is within α·Σ_b d_b·(½/16383)·max_b|q|·Σ_{c∈b}|k_c| of the
// exact one: about 2⁻¹⁵ of a block's largest |q|, 2⁻⁷ of what K's own
// rounding moves it. (One digit of a whole row, an earlier kernel, let a
// row's largest block set every block's unit and failed the tests with
// K's outlier channels.) On AVX512-VNNI (AVX512-BW and DQ too) they
// run on dotRows4Q8IntVNNI: Q is made once an item as int16 digits of
// each 32-value block, x = round(q·32512/max_b|q|) = 256h + l in two
// signed bytes, K's codes
// are read in place and made unsigned (k + 128), sixteen keys lie in a
// register's lanes (three shuffle stages a block), and VPDPBUSD adds a
// key's four products of codes and a digit quad (broadcast from memory)
// into exact int32 sums a block, less 128·Σx, turned to float32 once a
// block and scaled by max_b|q|/32512 and the key's block scale (picked
// out of 128 bytes of scales by VPERMT2W where a group's lie there; in
// rows of at most four blocks that lie farther apart, as a BNHD page's
// heads do, the group's keys' eight bytes of scales are gathered once
// into 128 bytes and picked out of those; else gathered a block). A
// score is within α·Σ_b d_b·2⁻¹⁶·max_b|q|·Σ_{c∈b}|k_c| of the exact
// one, beside float32's rounding of the blocks' sums: Q's
// rounding is 2⁻⁸ of K's own, half a code step (2⁻⁸ of a block's
// largest |k|) against half a digit (2⁻¹⁶ of a block's largest |q|).
// On VNNI rows of one block (D = 32), and on either a Q row that is not
// finite, or a block whose 1/f would be below float32's smallest normal
// (a largest |q| below 2⁻¹¹¹ on VNNI, 2⁻¹⁰⁴ on AVX2), stay on the
// widening kernel, as do the keys past the kernel's last whole step (16
// keys on VNNI, 2 on AVX2).
// A q4 K or V takes the same kernels in forms that read its codes where
// they lie, two a byte, past their own known-answer checks. On
// AVX512-VNNI the scores kernel loads a block's 16 bytes of sixteen
// keys, turns them over as dwords (two shuffle stages, not q8's three)
// and unpacks each byte's nibbles into two quads of unsigned codes c
// (value c − 8) for VPDPBUSD, from the correction −8·Σx; the P·V kernel
// interleaves a key pair's bytes and unpacks their nibbles into the
// block's columns 0-15 and 16-31 in order, less 8, for VPDPWSSD. On AVX2
// each key's 16 bytes are unpacked into the 32 values q8's codes would
// be before the same steps. Their int32 sums are the integers q8's
// kernels take over the values widened, scaled the same way, so the bits
// are the same (TestDecodeQ4SameBits), and so are the bounds above.
// Elsewhere (AMX's tiles, the widening kernels), and for the keys they
// leave, a q4 tile is widened to q8 values in the L1 first (quant4.go).
// WithDecode8("integer") (or
// $ATTN_CPU_DECODE8=integer) asks for the integer kernels, ErrUnavailable
// where they do not run, and keeps q8 off AMX's tiles where the CPU has
// them; WithDecode8("vector") keeps the widening ones.
// Against the float64 reference over the values as stored, decoding is
// within 1e-5 of each output row's largest magnitude on the widening
// kernels (WithDecode8("vector"), NEON, pure Go), AMX's tiles and the
// GPU, and within 3e-3 on the integer q8 kernels, q8's default on AVX2
// and AVX512-VNNI CPUs: the digits' rounding above moves each score, and
// so the weights, by more as the scores spread; WithDecode8("vector")
// trades their speed for the 1e-5 bound (kernels' TestQuantDecodeAccuracy).
// docs/benchmarks.md ("Decoding speed", "Batched and paged decoding",
// "8-bit KV caches") has the measurements.
//
// The decoding kernels (float32, halves, q8 and fp8, the integer P·V
// and scores) prefetch the rows they read next into the L2
// (PREFETCHT1) on CPUs not Intel's, into the L1 (PREFETCHT0) on
// Intel's; but for the eight-lane widening q8 and fp8 scores kernels,
// which stay on the L1's (the eight-lane integer q8 scores kernel takes
// its L2 twin: on a Zen 4's AVX2 path, one thread over 8 KV heads of
// 32768 keys from memory, it ran faster a key with it than with the
// L1's). Each kernel comes in both forms (asmparts.py's l2_twins), and
// $ATTN_CPU_PREFETCH=l1|l2 picks one for every kernel of the process,
// both widths. On an AMD Zen 4 the L1's misses in flight limit how fast
// one thread streams K or V from memory; with the twins the eight-lane
// kernels (the same Zen 4 under GODEBUG=cpu.avx512f=off) take a float32
// or float16 step in well under the L1's time, but the eight-lane 8-bit
// scores kernels, which widen each code before its FMAs, take longer.
// Intel's Xeons keep the L1: their kernels were tuned prefetching into
// it, and on an AMX Xeon the L2 twins run within the host's noise of
// them (docs/benchmarks.md, "Prefetching into the L1 or the L2").
//
// Without a window the decoding key tiles are
// DefaultDecodeTileK (1024) keys long, so that a tile turns from K's rows
// to V's and takes its online-softmax step a quarter as often as at 256.
// When the items are fewer than the threads
// (one sequence of few KV heads, say), each item's keys are split into
// up to Threads ranges of at least 512 keys, run in parallel with their
// own m, l and acc, and merged by their maxima: acc = Σ_s acc_s·e^(m_s −
// M), l = Σ_s l_s·e^(m_s − M), M the largest m_s (flash-decoding;
// the host's one merge, internal/softmax, which kernels' cascade shares).
// Packed sequences (Problem.Packed) and paged K and V (Problem.Paged)
// change only where rows are found (backend.Rows): Q rows of a group and
// K or V rows of a tile that crosses pages are gathered into the
// worker's scratch (widened for the Gemms, as stored for the decoding
// kernels); a tile within one page is read in place. An index list's
// keys (pages of one key, internal/lower's lowering) are read where they
// lie, with no gather, by the indirect decoding kernels wherever the
// decoding kernels run on amd64 (sixteen lanes with AVX-512F:
// decode_idx_amd64.s, generated by _gen/decode_idx.py; eight with AVX2,
// FMA and F16C: decode_amd64.s), float32 and half K and V: each row found
// through its byte offset (checked in Go first, oneKeyOffsets) and
// prefetched some keys ahead; 8-bit ones, and every one on arm64, are
// gathered into scratch first.
//
// A steady-state Fused call allocates nothing: its state and its
// workers' scratch are pooled in the Backend and grown on demand, and its
// workers are the Backend's own goroutines (pool.go), so that a decoding
// loop calling it once a token makes no garbage (TestDecodeAllocs).
//
// # Threads
//
// Every op runs its work items on up to Threads goroutines (WithThreads,
// default GOMAXPROCS): it hands its passes to Threads − 1 long-lived
// workers of the Backend (started on first use, ended by Close) and works
// on them itself, and they finish before the op returns. The
// workers take items from a shared counter, so items of unequal cost
// (causal query tiles, which Fused hands out longest first) balance. The
// context is checked before every item; a cancelled op returns an error
// wrapping ctx.Err() after the items in flight finish. gonum's pure-Go
// Sgemm would start goroutines of its own for large matrices, so on it
// every Gemm is issued in pieces small enough to stay serial in the worker
// that calls it; attn's kernel and OpenBLAS (one thread) are serial
// anyway and take each Gemm whole.
//
// Ops share nothing mutable, so a Backend is safe for concurrent use: ops
// on different buffers run in parallel. An op's output may not share a
// buffer with any of its inputs (ErrShape).
//
// # Build
//
// By default the package needs no cgo: Go and Go assembly, so it builds
// with CGO_ENABLED=0 everywhere Go does. The micro-kernels are generated
// with avo (cpu/internal/sgemm/_gen, a module of its own; `go generate`
// rewrites them, CI checks they are current). On AVX-512 the Sgemm runs
// a 6×64 kernel on Intel and an 8×32 one elsewhere, the faster on each
// (internal/sgemm's kernel_amd64.go says why); ATTN_CPU_KERNEL=8x32 (or
// 6x64, 6x16: rows × columns) picks another this CPU runs, to measure it,
// and New reports ErrUnavailable for one it cannot. The kernels give the
// same bits.
// GODEBUG=cpu.avx512f=off
// takes the AVX2 kernel and the eight-lane half conversions, -tags purego
// gonum's pure-Go Sgemm, the Go softmax loops and the Go half
// conversions. On arm64 every kernel is NEON, chosen when x/sys/cpu
// reports ASIMD (GODEBUG=cpu.asimd=off turns them off); Go's assembler
// lacks some of their instructions, which are WORDs checked against
// aarch64-linux-gnu-as by _gen/neonwords.py. -tags openblas multiplies with OpenBLAS instead (cgo,
// libopenblas-dev). The softmax's exponentials are expf, a float32 exp
// within 1.0e-7 relative of math.Exp (TestExpf; the vector loops too,
// TestExpShiftVector), and, for the fused loop's whole sub-tiles,
// softmaxRowsVec's base-2 exponential, within 8e-8 absolute of math.Exp's
// for the weights in (0, 1] (TestSoftmaxRows); either summed in float32
// over at most 16 values a vector lane, then in float64.
package cpu
