// Package backend defines the interface every attn device implements, the
// parameters of its ops, the errors they return, and how a program picks a
// device at run time. It is the contract for backend authors: a program
// that computes attention imports package kernels, which has everything
// a user needs (Open, the dtypes, the layouts, the variants and these
// errors, as the same values). Besides the contract, this package holds
// helpers that only backends, the conformance suite (backendtest) and the
// attn command use: CheckBuffer, CheckDType, CheckedProduct, Errorf,
// Register, Rows, TensorStrides, Strides and the params' Validate. The
// lowering passes that run a problem a backend's kernels do not take
// (an index list, q8 head dims that are not whole blocks) on its own
// Fused live in attn's package internal/lower.
//
// A Backend computes scaled dot-product attention
//
//	O = softmax(scale · Q·Kᵀ + bias, masked) · V
//
// either staged (Scores, then Softmax in place, then Context), which
// materialises the B·H·Nq·Nk scores and is the only way to read the
// weights, or fused (Fused), which streams key tiles with an online softmax
// in O(N) memory.
//
// A backend whose Fused cannot run every valid problem (a GPU, where the
// key tiles of wide head dims do not fit the workgroup memory) implements
// FusedSupporter and says which: FusedSupports returns the ErrUnsupported
// its Fused would. The function FusedSupports asks any backend (Caps.Fused
// first), and kernels' Strategy.Choose, the one place a strategy is
// chosen, runs such a problem staged under Auto.
//
// # Memory layout
//
// Every operand is a dense row-major Buffer on the device. Q, K, V
// and O are [B, H, N, D] (BHND) or [B, N, H, D] (BNHD) as Problem.Layout
// says; either way one token's head vector is contiguous, so a head's rows
// form a strided matrix (TensorStrides). A backend with Caps.Strides also
// reads Q, K and V at strides of their own (Problem.Views: a slice of a
// fused QKV projection, padded rows), where they lie; every other backend
// refuses them (Problem.DenseOnly). A backend with Caps.VFromK takes V
// as K's first Dv columns (Problem.VFromK: the ops' V argument is K's
// buffer, read at K's strides), as an MLA cache stores it. A backend with
// Caps.Indices takes index lists (Problem.Indices: sparse attention over
// chosen keys) in Fused, through attn's package internal/lower, which lowers
// them to a paged problem of one-key pages; FusedParams.Validate, given a
// backend's Caps, refuses them for every other backend. A backend that implements Backwarder computes
// attention's gradients (dQ, dK, dV and the sinks', from the forward's O
// and LSE; the CPU and the GPU do for every problem BackwardParams.Validate
// lets through). A backend with Caps.Blocks takes block masks
// (Problem.Blocks: blocks of query rows and keys that are off are never
// computed) in Fused; FusedParams.Validate refuses them for every other
// backend. A backend whose buffers are host
// memory may implement Wrapper, making a Buffer of a caller's slice
// without a copy: read-only for inputs, which no op or Write changes. K and V have KVHeads heads; query
// head h reads KV head h/(H/KVHeads). Scores and weights are always
// [B, H, Nq, Nk], the log-sum-exp [B, H, Nq], and masks are
// [B|1, H|1, Nq|1, Nk|1] with broadcasting (Mask.Strides).
//
// # Storage dtypes
//
// A Buffer stores Float32, Float16 (IEEE binary16) or BFloat16 (float32's
// upper half), its DType, fixed at Alloc; a backend with Caps.Half takes
// the half dtypes for Q, K, V, O and the bias, each operand its own, while
// the scores, weights, keep-mask and LSE stay Float32 (ErrShape
// otherwise). Ops compute in float32 whatever the dtypes: a half operand
// is widened exactly as it is read, and an output is rounded to its
// buffer's dtype as it is written, to nearest with ties to even, a finite
// value beyond the dtype's range stored as ±DType.MaxFinite (DType.Saturate:
// never a silent infinity; attention's output, a weighted mean of V's
// rows, can overflow only a dtype narrower than V's). Write rounds float32
// values to the buffer's dtype (DType.Encode) and refuses a finite value
// that would overflow it (ErrNonFinite, DType.CheckFits); Read widens
// exactly; WriteBits and ReadBits move a half buffer's stored bits as
// they are. Len and Caps.MaxBufferLen count elements, not bytes.
//
// A backend with Caps.Quant8 also stores the 8-bit Quants, Q8 and FP8
// (quant.go has their formats), and with Caps.Quant4 the 4-bit Q4
// (quant4.go; everything below said of Q8 holds for it), for a KV cache's keys and values: Fused
// reads them as K and V, and every other operand and op refuses them
// (ErrShape, ErrUnsupported for the staged ops). Write quantizes (a Q8
// write whole blocks of Q8Block values; a NaN or an infinity, which
// neither format holds, is ErrNonFinite and nothing is written), Read
// dequantizes exactly, and
// WriteBits and ReadBits refuse them. Problem.Scales multiplies the
// stored K and V per KV head. A q8 K or V holds each row at its pitch
// (DType.Pitch: whole blocks, the last padded with zeros), so any head
// dim is stored; Fused runs a problem whose head dims are not whole
// blocks as the padded one (padded.go), through attn's package internal/lower.
//
// How close an op comes, per output dtype: a half input is exact in
// float32, so against the float64 reference computed on the half-rounded
// inputs an output differs by no more than the float32 arithmetic's error
// (the conformance suite's tolerance, backendtest.Tol = 10⁻⁴ of the
// largest value of the output's row, or of 1) plus the output's own
// rounding, half an ulp of its dtype: at most 2⁻¹¹ of its magnitude for
// Float16 (2⁻²⁵ among its subnormals), 2⁻⁸ for BFloat16, none for Float32
// (backendtest.Allowed); an output past its dtype's range is ±MaxFinite.
// A backend whose Caps.FlushesSubnormals is true may read, compute or
// store float32 subnormals (below 2⁻¹²⁶ in magnitude, every bfloat16
// subnormal among them) as zero: WGSL leaves that to the device, and
// NVIDIA's GPUs flush them. Float16 subnormals are normal float32 values
// and stay exact on every backend.
//
// Bfloat16 arithmetic: when Q, K and V are all BFloat16 (the caller's
// choice of bfloat16 precision), a backend may multiply them as bfloat16
// with float32 sums instead of widening them first — Q·Kᵀ is then as
// exact as ever (the product of two bfloat16 values is exact in
// float32), but the weights are rounded to bfloat16 for P·V, which may
// move an output by 2⁻⁸·Σ_j w_j·|v_j| ≤ 2⁻⁸·max|V| more
// (backendtest.BF16Slack), and bfloat16 subnormals (below 2⁻¹²⁶) may be
// read as zero; the LSE is unchanged. The CPU backend does so with
// AMX's tiles where Linux grants them, and with AVX512_BF16's VDPBF16PS
// on the CPUs where that beats its float32 kernel (package cpu says
// which); elsewhere it widens.
//
// # Variants
//
// Problem embeds Variants, the score modifications of today's models: a
// causal offset, a sliding window, softcap, ALiBi, attention sinks and
// per-batch key lengths. Query row i of batch b sits at key position
// t = a_b + i (Problem.Align); Problem.KeyRange gives the keys it may see
// by position, which every backend skips outside of. ScoresParams.Stage
// says how far Scores carries the scores (raw, capped, biased, masked);
// Softmax reads biased or masked scores and adds the sink. A backend
// that implements them claims Caps.Variants. Their rules live here once:
// Variants.Check refuses the values wrong at any size (a window side
// below −1, a softcap ≤ 0 or not finite, a slope or sink not finite, an
// offset beyond MaxPosition), and Problem.Validate calls it before it
// checks the counts against H and B and the key lengths against Nk;
// kernels and the attn command use these and add no rules of their own.
//
// # Packed sequences and paged caches
//
// Problem.Packed and Problem.Paged (seqs.go) let one Fused call attend B
// sequences of different lengths; they change where rows live, not what
// a row computes. Packed: Q and O are [CuQ[B], H, D|Dv] (BNHD only),
// sequence b's query rows CuQ[b] … CuQ[b+1]−1; K and V are
// [CuK[B], KVHeads, D|Dv] when CuK is set, else dense or paged; the LSE
// is [H, CuQ[B]] (Problem.LSEOffset). Paged: K and V are a pool of Pages
// pages of PageSize keys, [Pages, PageSize, KVHeads, D|Dv] under BNHD and
// [Pages, KVHeads, PageSize, D|Dv] under BHND; key j of sequence b is
// row j mod PageSize of page Table[b·PerSeq + j/PageSize], KVLens giving
// the cache lengths, and only the table entries below a cache's length
// are read. Problem.QRows, KVLen and Align give a sequence's rows, keys
// and alignment (bottom-right per sequence), and Rows (QRowsOf, KRowsOf,
// VRowsOf, ORowsOf) where any operand's row lies, for every layout. Nq
// and Nk bound the lengths, and masks broadcast over [B, H, Nq, Nk]
// indexed by a sequence's own row and key numbers. Problem.Validate
// checks the lists (errors naming the entry and the sizes); the staged
// ops refuse such problems with ErrUnsupported, and Caps.Seqs says
// whether Fused takes them.
//
// # Zero values
//
// A zero field has one meaning in every layer of attn (this package's
// Problem, kernels.Options and kernels.MultiHead, the attn command's
// flags): the default named here, never a literal zero.
//
//	Problem.Scale, Options.Scale, -scale 0   1/√D
//	Problem.KVHeads, MultiHead.KVHeads 0     H: every query head its own KV head
//	Problem.Dv 0                             D
//	Variants{} (each field nil or 0)         none of the variants
//
// Every op resolves them first (Problem.Resolved, called by each params'
// Validate), so they mean the same on every backend. kernels reads the KV
// head count from K's shape alone. A scale of exactly zero (uniform
// weights over the visible keys) is not expressible; any small non-zero
// scale comes as close as float32 allows.
//
// # Choosing a backend
//
// Backends register themselves from their package's init (import
// github.com/attn-go/attn/cpu, github.com/attn-go/attn/gpu). Open("auto")
// tries them by priority — the GPU, then the CPU — and when none opens the
// error names each one and why; Select also returns the reasons for a
// fallback that succeeded. The ATTN_BACKEND environment variable replaces
// "auto" with a fixed name.
package backend
