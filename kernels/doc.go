// Package kernels is attn's public API: scaled dot-product attention on
// host tensors,
//
//	O = softmax(scale · Q·Kᵀ + bias, masked) · V
//
// computed on any Backend, a KV cache for decoding loops (KVCache,
// PagePool), the tutorials' self-attention with projections
// (SelfAttention) and multi-head attention with input and output
// projections (MultiHead). It is the one package a program imports, with
// a blank import of each backend it may use:
//
//	import (
//		"github.com/attn-go/attn/kernels"
//		_ "github.com/attn-go/attn/cpu" // and/or .../gpu
//	)
//
//	be, err := kernels.Open("auto")
//	if err != nil { ... }
//	defer be.Close()
//	res, err := kernels.Attention(ctx, be, q, k, v, &kernels.Options{Causal: true})
//
// Open, the dtypes, the layouts, the variants and the sentinel errors
// are all here; package backend is the contract for backend authors.
//
// # Memory layout
//
// A Tensor is dense row-major, or a strided view of another's storage
// (Tensor.Strides; Slice makes one, Contiguous a dense copy). Q, K, V and
// the output are [B, H, N, D] (BHND) or [B, N, H, D] (BNHD, what model
// code stores) as their Layout says, a layout option and not a copy;
// rank 3 drops B and rank 2 drops B and H. Q, K and V may be views (the
// heads of a fused QKV projection, qkv.Slice(2, 0, H)), and so may the
// bias, the rows a cache appends and its queries; the outputs and a paged
// cache's pools are dense. On a backend that wraps host memory
// (backend.Wrapper: the CPU) Attention hands it the caller's Q, K and V
// read-only, views at their strides (backend.Caps.Strides), and lets it
// write O into the result's own slice: no copy of any of them, so a call
// holds its operands once. Elsewhere (the GPU) each operand is written to
// a device buffer, a view gathered on the host a chunk at a time. The
// caller's tensors are never written. The bias, the keep-mask, the weights and the
// scores are always [B, H, Nq, Nk] and the LSE [B, H, Nq], right-aligned
// as in NumPy when their rank is lower; a bias or mask broadcasts over
// any dimension of size 1. A Linear's weight is [In, Out] (y = x·W + b)
// unless its Layout is OutIn, PyTorch's [Out, In] (y = x·Wᵀ + b), read as
// it is.
//
// # Dtypes
//
// A Tensor stores float32 values (Data; DType Float32, the zero value) or
// the bits of Float16 or BFloat16 values (Bits), as its DType says;
// Convert changes the dtype (rounding to nearest even, refusing a value a
// half cannot hold with backend.ErrNonFinite) and Float32s widens. Q, K,
// V and the bias may each have their own dtype. Attention computes in
// float32 whatever they are and returns Out in Options.OutDType, the
// query's dtype by default, rounded to nearest even and saturated: a
// float16 output past ±65504 is ±65504, never infinite. The weights and
// scores are in Options.MatrixDType, the query's dtype by default (ONNX's
// qk_matmul_output has the query's type), rounded the same way from the
// float32 every backend forms them in; the LSE is float32. NaN and
// infinities are refused in half
// inputs as in float32. On a backend that stores halves (backend.Caps
// Half) the operands travel as their bits; on one that does not, halves
// are widened before upload and O rounded after, with the same answer.
// Linear keeps x's dtype. WriteNpy writes a Float16 tensor as '<f2'.
//
// # Options
//
// Options are one level of fields: &kernels.Options{Causal: true, Window:
// w} reads as the call. Attention's Options begin with what every
// attention computes (the scale, causal masking, the variants, whether
// non-finite inputs are allowed) and add what only attention over tensors
// has (packed sequences, a block table, a bias or mask, a strategy, the
// weights, scores and LSE, the output dtypes); a cache's Attend takes
// AttendOptions, those first fields and nothing more. A variant therefore
// reaches every kind of call, and neither call has a field it ignores.
// Scalars are float64 and must fit a float32, which the kernels compute
// in; the per-head ALiBi slopes and sink logits are []float32, as a
// Tensor's data is. CausalOffset refines Causal and never turns it on:
// an offset without Causal is an error wrapping ErrShape.
//
// # Zero values
//
// The zero Options or AttendOptions (or a nil pointer) is plain
// non-causal attention with scale 1/√D. A zero field means its default,
// the same in every layer of attn (see package backend's doc):
// Options.Scale 0 is 1/√D, MultiHead.KVHeads 0 is Heads, and the KV head
// count of Attention is always K's shape.
//
// # Variants
//
// The options' CausalOffset, Window, Softcap, ALiBi, Sinks and KVLens
// are backend.Variants: a causal offset, a sliding window, softcap, ALiBi
// slopes, attention sinks and per-batch key lengths, whose
// meaning (positions t = a_b + i, the order softcap → bias and ALiBi →
// masks → softmax with the sink) backend.Variants documents. The zero
// value is none of them; each combines with every other option (GQA,
// BNHD, bias, keep-mask, LSE, Nq ≠ Nk, Dv ≠ D) and both strategies.
// Options.ScoresStage picks which scores Options.Scores returns: raw,
// capped, biased (the default) or masked; ONNX's qk_matmul_output_mode
// 0, 1 and 2 are those, its mode 3 is Options.Weights. The package's
// tests run ONNX's own node tests of its Attention operator
// (testdata/onnx) on every backend.
//
// # Packed sequences, paged caches and a past
//
// Options.CuSeqlensQ packs B sequences' queries end to end
// (FlashAttention's varlen cu_seqlens): Q and Out are rank 3
// [total, H, D] in BNHD, sequence b's rows CuSeqlensQ[b] …
// CuSeqlensQ[b+1] − 1, and the LSE is [H, total]. CuSeqlensK packs K and
// V the same way ([totalK, KVH, D]); without it they are dense
// [B, Nk, KVH, D] (key lengths from KVLens) or paged. Options.BlockTable
// makes K and V a paged cache (flash_attn_with_kvcache's block_table):
// pools [pages, page_size, KVH, D] under BNHD ([pages, KVH, page_size, D]
// under BHND), row b of the table listing sequence b's pages in order,
// Nk = a row's length · page_size, and KVLens the cache lengths
// (FlashAttention's cache_seqlens; there is no second field for them).
// Q is then [B, Nq, H, D] or packed. Nq and Nk are the longest
// sequence's, and a bias or mask broadcasts over [B, H, Nq, Nk]; causal
// masking is bottom-right per sequence, aligned to each cache's length.
// Each list is checked against the shapes before any work (from 0, never
// decreasing, ending at the tensor's rows; table rows of one length,
// the entries a cache reads naming pages of the pool, no cache longer
// than its pages), the errors naming the lists as Shapes.Names says.
// NaN and infinities are looked for only where they are read: the whole
// of packed and dense tensors, but only the pool rows the table names
// below each cache length, so a pool's free pages may hold anything.
// These problems run fused only, on a backend with backend.Caps.Seqs:
// Strategy.Choose refuses Staged, the weights and the scores, and a
// backend without it, with backend.ErrUnsupported.
//
// ConcatSeq appends new keys (or values) to a past along the sequence
// axis, each read in its own layout, in the new rows' layout and dtype:
// ONNX Attention's present_key = concat(past_key, K). Attention over the
// present with CausalOffset P (the past's length) when causal is ONNX's
// Attention with past_key and past_value.
//
// # Decoding with a KV cache
//
// A server runs attention as a loop over a cache that lives on the device:
// append the new tokens' keys and values, attend the new queries over
// everything cached. KVCache holds B sequences contiguously, each with a
// fixed capacity; PagePool holds sequences of any length in a shared pool
// of fixed-size pages, each Seq taking pages as it grows (Append) and
// giving them back (Truncate, Release), several goroutines decoding their
// own sequences at once. An Attend holds its sequences, so that an Append,
// Truncate or Release of one of them waits for it, and a released Seq is
// used no more (ErrReleased). Both store keys and values in any dtype and
// either layout (CacheConfig: BNHD pages are FlashAttention's [pages,
// page_size, KVH, D]). Append takes the new tokens' rows [n, KVH, D] in
// any dtype, checks only them (shapes, capacity or free pages, NaN and
// infinities, values the dtype cannot hold) and writes only them, leaving
// the cache unchanged when it refuses. A full cache — a sequence past its
// capacity, a pool out of free pages — is an error wrapping ErrCacheFull,
// not ErrShape: the call was right, and a server preempts or evicts a
// sequence and tries again. Attend takes the queries [B, Nq, H, D] (BNHD)
// or [B, H, Nq, D] (BHND) in the cache's layout and writes O into the
// caller's tensor: each sequence's Nq queries sit at its last Nq positions
// (append first, as ONNX's past_key rule and FlashAttention's kvcache API
// have it), so causal masking is bottom-right at each sequence's own
// length. Its options, AttendOptions, are Options' first fields: the window,
// softcap, ALiBi and sinks apply as in Attention, and KVLens attends only
// the first KVLens[b] keys of each sequence (at most its length). It
// uploads only the queries and reads back only O (and the LSE); the
// cache's keys and values never cross the bus again. A steady-state step —
// append one token, attend one query — allocates nothing on the host with
// the CPU backend (TestCacheDecodeAllocs), whose Fused reads a group's K
// and V once for its G query heads and splits the keys over threads when
// the sequences are too few to keep them busy.
//
// Sequences may share pages. Seq.Fork makes a sequence holding every page
// of its parent (a prompt's samples, beams, a shared system prompt); a
// page goes back to the pool when the last sequence holding it lets it
// go, PagePool.Shared counts the pages held more than once, and an Append
// to a sequence whose last page is shared and partly full copies that
// page first (copy-on-write), so a shared page is never written. A
// PagePool.Attend whose sequences begin with the same run of full pages
// reads them once for all of them (cascade attention, cascade.go): the
// shared prefix as one problem of every member's queries, each
// sequence's own pages as before, the two merged exactly by their
// log-sum-exps. With B = 32 sequences of 8448 keys behind one 8192-key
// prompt (H = 32 over 8 KV heads, D = 128, f16) the CPU's step takes a
// fraction of the time of the same batch unshared, in a sixteenth of the
// pages: the shared step is bound by its arithmetic (every query still
// attends every key), the unshared one by reading its pages (attn bench
// -prefix 8192; docs/benchmarks.md, "Shared prefixes").
//
// Keys and values may be stored in 8 bits, half an f16 cache's bytes and
// twice its tokens in the same memory: CacheConfig.DType Q8 (llama.cpp's
// q8_0: each run of 32 values along the head dim stored as int8
// round(x/d) with one float16 scale d = max|x|/127; a row whose head
// dim is not whole blocks is padded with zeros to them, as ggml pads, so
// a row of 80 takes 96 values: Phi-2's and many vision models' head
// dims) or FP8 (E4M3: to nearest even, ±448). Append
// quantizes as it writes, block by block, with no pass of its own; a q8
// block whose largest magnitude is backend.Q8Max (127·65520) or more is
// refused (ErrNonFinite). An FP8 cache may take one scale a KV head for
// K and for V (CacheConfig.KScale, VScale, vLLM's k_scale and v_scale):
// Append stores x/scale, a value beyond ±448 saturates and Saturated
// counts it, and Attend reads scale times what is stored. Queries and
// outputs stay float32 or half; the kernels widen the 8-bit rows as they
// read them (in registers, on the CPU and the GPU), never the whole
// cache. Against the float64 reference over the values as stored,
// decoding is within 1e-5 of each output row's largest magnitude on the
// widening kernels (cpu.WithDecode8("vector"), NEON, pure Go), AMX's
// tiles and the GPU, and within 3e-3 on the CPU's integer q8 kernels,
// q8's default on AVX2 and AVX512-VNNI CPUs: they round Q and the
// weights to int16 digits, so the error grows with the scores' spread;
// WithDecode8("vector") trades their speed for the 1e-5 bound. Each
// path, and what the format costs against the unquantized values, is
// measured in docs/benchmarks.md.
//
// Or in 4 bits: CacheConfig.DType Q4, llama.cpp's q4_0 bit for bit
// (backend.Q4: per 32-value block a float16 d = m/−8, m the value of
// largest magnitude, and codes min(15, trunc(x/d + 8.5)) two a byte),
// half of q8's bytes, on a backend with Caps.Quant4; it takes what q8
// takes (any head dim, padded; every variant, fork and Keep) and keeps
// q8's bounds over the stored values (the CPU's integer kernels read the
// codes in place with the bits q8's kernels give over them widened;
// elsewhere it widens a q4 tile to q8 values in the L1 first).
//
// AppendBuffers quantizes on the device too (backend.QuantCopier, the
// CPU's and the GPU's), with no pass of its own (on the CPU nothing
// allocated a step), into
// the bytes Append stores for the same rows, an fp8 value divided by its
// head's scale and counted by Saturated where it saturates; rows of the
// cache's own 8-bit dtype are copied as they are. What Append refuses
// (NaN, infinities, a q8 block at backend.Q8Max) every backend stores
// as NaN and counts, the CPU as the GPU does: a GPU cannot look at its
// buffers without a round trip that would stall every step, and one
// policy serves a loop that may run on either. A q8 block's scale is
// stored as NaN, so its 32 values read NaN and attention over them is
// NaN; fp8 stores its NaN pattern, which both backends' kernels read as
// ±480·scale. NonFinite, like Saturated, reads the count back when
// called (a wait for the work recorded before it: call it between
// steps), with an error where it cannot. So an append is never half
// written, and never silently: a server that appends from buffers and
// cannot rule NaN out checks NonFinite.
//
// Multi-head latent attention (MLA: DeepSeek V2/V3, Kimi K2) caches one
// latent row a token, of which V is the first columns: CacheConfig.VFromK
// (V's head dim Dv ≤ D, as Options.VFromK takes it) stores no V
// (DeepSeek V3's D = 576, VFromK = 512 is 576 values a token, not 1088), Append and AppendBuffers take v nil, and Attend reads
// V's rows in K's buffer. Options.VFromK does the same for Attention over
// tensors (v nil). A backend with Caps.VFromK reads V in place
// (backend.Problem.VFromK: the CPU and the GPU do); Attention gives
// another V as a view of K, and a cache refuses it (ErrUnsupported). In
// 8 bits, V's q8 blocks are the first of K's row, and an fp8 V is read
// at K's scales.
//
// Sparse attention over chosen keys (DeepSeek's indexer, NSA's selected
// blocks): Options.Indices and AttendOptions.Indices name, for each
// query row, the positions of the keys it attends (Indices: int32, −1
// for none, one list a row or one a KV head). Only those keys are read,
// over tensors and the caches alike, in any storage dtype; causal
// masking, the window and the key lengths still apply to them. A
// position out of range or named twice is ErrShape naming the row; a
// bias, keep-mask or ALiBi beside a list is ErrUnsupported.
//
// Gradients: AttentionGrad returns ∂L/∂Q, ∂L/∂K, ∂L/∂V (and the sinks',
// and the bias's with GradOptions.DBias) given ∂L/∂O, through the backend's
// backward pass (backend.Backwarder: the CPU's and the GPU's, which take
// the same problems: dense or packed, with a bias and keep-mask, in f32,
// f16 and bf16), for a training loop's step; AttentionGradFrom runs the
// backward alone from the forward's own Result (its Out and LSE, with
// Options.LSE). GradOptions holds the forward's *Options and what only
// the backward reads (DBias).
//
// Block-sparse masks (FlexAttention's BlockMask): Options.Blocks and
// AttendOptions.Blocks keep or drop blocks of S query rows by S keys
// (BlockMask); a block that is off is never computed, one that is on
// is computed under the other masks. ElementBlocks, GridBlocks,
// DocumentBlocks, PrefixLMBlocks and StreamingBlocks build the common
// ones.
//
// # Checks and errors
//
// Attention validates everything once, before any work: ranks, sizes,
// broadcasting, the scale, the variants (backend.Problem.Validate), and
// (unless Options.AllowNonFinite) that Q, K and V hold no NaN or
// infinity. Every error wraps a sentinel of package
// backend and names the sizes involved; inputs are never modified.
// Shapes.Check runs the same checks on shapes alone, before any data
// exists, naming each operand as its caller says (the attn command passes
// its file names): the rules live here and in package backend, once.
//
// # Strategies
//
// Staged materialises the B·H·Nq·Nk scores (the only way to get the
// weights or the scores); Fused streams key tiles with an online softmax
// in O(N) memory. Auto picks Fused unless the weights or scores are asked
// for, the problem is small on a CPU backend, or the backend's Fused
// cannot run it: a backend that implements backend.FusedSupporter says
// which problems those are (the GPU, for head dims too wide for its
// workgroup memory), and Auto runs them staged. Strategy.Choose is the one
// place this is decided; an explicit Fused on such a problem is an error
// wrapping backend.ErrUnsupported that names the sizes, returned before
// anything is uploaded.
package kernels
