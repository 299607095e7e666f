// Package backendtest is the conformance suite every attn backend runs, and
// the float64 reference it judges them by.
//
// A backend's test file holds one line:
//
//	func TestConformance(t *testing.T) { backendtest.Run(t, open) }
//
// where open returns a fresh backend, or calls t.Skip with the reason when
// the device is absent. Run opens one backend for the whole suite, and a
// second and third for the checks that need another instance (foreign
// buffers, use after Close); it closes each through t.Cleanup.
//
// # What is checked
//
// Run fails a backend whose Caps lack anything the contract requires
// (Staged, Fused, Bias, KeepMask, Causal, GQA, BNHD, LSE, Variants) and skips the cases
// that need it. Every case runs through both strategies, with and without
// the LSE output: sizes around a tile of 64 (63, 64, 65, 127, 128, 129), Nq
// above and below Nk, decoding with Nq = 1, empty problems; head dims 1 to
// 128 with Dv ≠ D; scales 1/√D, 1 and negative; bottom-right causal
// masking; GQA and MQA; both layouts; biases and keep-masks in every
// broadcast pattern; rows that see no key;
// scores more than 100 apart inside every group of keys a kernel reduces
// a row over, each row's maximum at the first and last key of such groups
// (FarScores: a kernel that rescales by a maximum that missed the peak
// overflows, where scores within 88 of each other hide it). Bad parameters and buffers must
// return an error wrapping the documented sentinel without panicking or
// writing anything; buffers must round-trip bitwise; a cancelled context
// must stop every op; concurrent calls must all be right; and the same call
// twice must give bitwise identical results.
//
// A backend that claims Caps.Half is checked in Float16 and BFloat16 too.
// Its half buffers: Alloc (zero-filled, Len in elements, the limits);
// Write rounding to nearest with ties to even (DType.Encode) on worked
// ties, subnormals and random values of every magnitude, and refusing a
// finite value beyond the dtype's range with ErrNonFinite, writing
// nothing; Read widening exactly; every bit pattern through WriteBits and
// ReadBits unchanged; the range rules of all four. Its ops: Fused and the
// staged ops at six shapes of the other groups (Dv ≠ D, odd head dims
// with causal masking, GQA in BNHD, decoding with MQA, rows that see no
// key, every variant at once, with biases and keep-masks) in every
// operand's dtype alike, and over a pairwise cover of the 3⁵ dtype
// combinations of Q, K, V, O and the bias, each row at two shapes;
// outputs past float16's range (saturated to ±65504, never Inf); and
// problems whose float32 arithmetic is exact (one key, so a weight of
// exactly 1, or D = 1 with K = 1 and scale 1), where every subnormal of a
// half Q or V must come through bit for bit and an output must be stored
// exactly as DType.Saturate says. Half scores, weights, LSE or keep-masks
// must be refused with ErrShape. A backend without Caps.Half must refuse a
// half Alloc with ErrUnsupported.
//
// RunFused and RunStaged check one Case and can be used on their own (a
// fuzz test, a case from a bug report), in any dtypes: Case.DTypes says
// how each operand is stored, Case.WithDTypes rounds a case's data to them
// (RandomCase(…).WithDTypes(dt) is a random case in those dtypes), and
// Upload puts a case's operands on a backend for a test of its own. They pad every buffer: inputs with
// NaN, which must not leak into results, outputs with a value that must
// survive; they fill outputs with NaN first, so an element left unwritten
// fails; and they read the inputs back afterwards, which must be bitwise
// unchanged.
//
// # How results are judged
//
// Reference computes a Case in float64 with plain loops. A value passes
// when |got − want| ≤ Tol·max(1, max|want| over its row), a row being one
// query's Nk scores or weights, its Dv outputs, or its LSE. NaN never
// passes; an infinity (a −Inf score or LSE) must match exactly; a weight
// the reference makes 0 (a masked key) must be exactly 0, and so must the
// output of a row that sees no key.
//
// An output stored in a half dtype t must moreover be one of t's values
// (a backend that forgot to round returns values between them), and
// passes when |got − w| ≤ Allowed(t, w, max|want|), w being want clamped
// to ±t.MaxFinite:
//
//	Tol·s + ½ulp_t(min(|w| + Tol·s, t.MaxFinite)),   s = max(1, max|want| over the row)
//
// the float32 tolerance plus the output's own rounding, half an ulp of t:
// at most 2⁻¹¹ relative for Float16 (2⁻²⁵ among its subnormals), 2⁻⁸ for
// BFloat16, nothing for Float32. The inputs need no allowance: Reference
// computes with the half-rounded values themselves, which float32 holds
// exactly.
//
// # Decisions the contract leaves open, taken here
//
//   - Write and Read accept any range inside the buffer, including an
//     empty one at the very end (off = Len); anything else is ErrShape and
//     writes nothing.
//   - Alloc(n) with n > Caps().MaxBufferLen (when that is not 0) is
//     ErrTooLarge; Alloc(-1) is ErrShape.
//   - A released buffer passed to an op is ErrReleased, even though its size
//     would also be wrong if Len dropped to 0: a backend checks ownership
//     and liveness before sizes.
//   - Every op (Scores, Softmax, Context, Fused) returns an error wrapping
//     ctx.Err() when called with a context that is already done.
//   - After Close, Alloc (of every dtype), Write, Read, WriteBits,
//     ReadBits and every op return ErrReleased.
//   - WriteBits and ReadBits check the buffer (nil: ErrShape; foreign:
//     ErrForeignBuffer; released: ErrReleased) before its dtype and range.
//   - Write of NaN to a half buffer stores a NaN (any payload); every
//     other value is stored as DType.Encode gives it.
//   - The exact checks take exp(0) to be exactly 1 in a backend's
//     float32 arithmetic, so that a row with one key has a weight of
//     exactly 1.
package backendtest
