// Package kernels is attn's public API: scaled dot-product attention on
// host tensors,
//
//	O = softmax(scale · Q·Kᵀ + bias, masked) · V
//
// computed on any backend.Backend (open one with backend.Open), plus the
// tutorials' self-attention with projections (SelfAttention) and
// multi-head attention with input and output projections (MultiHead).
//
// # Memory layout
//
// A Tensor is dense row-major. Q, K, V and the output are
// [B, H, N, D] (BHND) or [B, N, H, D] (BNHD, what model code stores) as
// their Layout says, a layout option and not a copy; rank 3 drops B and
// rank 2 drops B and H. The bias, the keep-mask, the weights and the
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
// float16 output past ±65504 is ±65504, never infinite. The weights,
// scores and LSE are float32. NaN and infinities are refused in half
// inputs as in float32. On a backend that stores halves (backend.Caps
// Half) the operands travel as their bits; on one that does not, halves
// are widened before upload and O rounded after, with the same answer.
// Linear keeps x's dtype. WriteNpy writes a Float16 tensor as '<f2'.
//
// # Zero values
//
// The zero Options (or a nil *Options) is plain non-causal attention
// with scale 1/√D. A zero field means its default, the same in every
// layer of attn (see package backend's doc): Options.Scale 0 is 1/√D,
// MultiHead.KVHeads 0 is Heads, and the KV head count of Attention is
// always K's shape.
//
// # Variants
//
// Options embeds backend.Variants: a causal offset, a sliding window,
// softcap, ALiBi slopes, attention sinks and per-batch key lengths, whose
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
