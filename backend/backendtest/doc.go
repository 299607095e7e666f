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
// (Staged, Fused, Bias, KeepMask, Causal, GQA, BNHD, LSE) and skips the cases
// that need it. Every case runs through both strategies, with and without
// the LSE output: sizes around a tile of 64 (63, 64, 65, 127, 128, 129), Nq
// above and below Nk, decoding with Nq = 1, empty problems; head dims 1 to
// 128 with Dv ≠ D; scales 1/√D, 1 and negative; bottom-right causal
// masking; GQA and MQA; both layouts; biases and keep-masks in every
// broadcast pattern; rows that see no key. Bad parameters and buffers must
// return an error wrapping the documented sentinel without panicking or
// writing anything; buffers must round-trip bitwise; a cancelled context
// must stop every op; concurrent calls must all be right; and the same call
// twice must give bitwise identical results.
//
// RunFused and RunStaged check one Case and can be used on their own (a
// fuzz test, a case from a bug report). They pad every buffer: inputs with
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
//   - After Close, Alloc, Write, Read and every op return ErrReleased.
package backendtest
