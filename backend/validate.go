package backend

// What the ops refuse before any work: a problem's sizes and variants,
// masks, buffers of the wrong length or dtype, and each op's combination
// of them (the Params' Validate methods).

import (
	"math"
	"slices"
)

// Validate checks the sizes, scale and variants of p with its defaults
// resolved (Resolved). The error wraps ErrShape (or ErrTooLarge when an operand's
// element count overflows int) and names the offending sizes.
func (p Problem) Validate() error {
	p = p.Resolved()
	switch {
	case p.B < 0 || p.Nq < 0 || p.Nk < 0:
		return Errorf(ErrShape, "negative size: B=%d Nq=%d Nk=%d", p.B, p.Nq, p.Nk)
	case p.H < 1 || p.KVHeads < 1:
		return Errorf(ErrShape, "heads must be ≥ 1: H=%d KVHeads=%d", p.H, p.KVHeads)
	case p.H%p.KVHeads != 0:
		return Errorf(ErrShape, "H=%d is not a multiple of KVHeads=%d", p.H, p.KVHeads)
	case p.D < 1 || p.Dv < 1:
		return Errorf(ErrShape, "head dims must be ≥ 1: D=%d Dv=%d", p.D, p.Dv)
	case p.Layout != BHND && p.Layout != BNHD:
		return Errorf(ErrShape, "unknown layout %v", p.Layout)
	case math.IsNaN(float64(p.Scale)) || math.IsInf(float64(p.Scale), 0):
		return Errorf(ErrShape, "scale %v is not finite", p.Scale)
	}
	if err := p.validateVariants(); err != nil {
		return err
	}
	if err := p.validateSeqs(); err != nil {
		return err
	}
	if err := p.validateViews(); err != nil {
		return err
	}
	if err := p.Scales.validate(p.KVHeads); err != nil {
		return err
	}
	if err := p.validateVFromK(); err != nil {
		return err
	}
	if err := p.validateIndices(); err != nil {
		return err
	}
	if err := p.validateBlocks(); err != nil {
		return err
	}
	// Rows of each operand: B·N, or a packed total (one factor, the
	// other 1), or a paged pool's pages × page size.
	qRows, kvRows := [2]int{p.B, p.Nq}, [2]int{p.B, p.Nk}
	if p.Packed != nil {
		qRows = [2]int{p.Packed.CuQ[p.B], 1}
		if p.packedK() {
			kvRows = [2]int{p.Packed.CuK[p.B], 1}
		}
	}
	if p.Paged != nil {
		kvRows = [2]int{p.Paged.Pages, p.Paged.PageSize}
	}
	// The shapes in a fixed array: Validate runs on every call of a
	// decoding loop, which must not allocate.
	shapes := [5]struct {
		name string
		dims [4]int
	}{
		{"Q", [4]int{qRows[0], qRows[1], p.H, p.D}},
		{"K", [4]int{kvRows[0], kvRows[1], p.KVHeads, p.D}},
		{"V", [4]int{kvRows[0], kvRows[1], p.KVHeads, p.Dv}},
		{"O", [4]int{qRows[0], qRows[1], p.H, p.Dv}},
		{"scores", [4]int{p.B, p.H, p.Nq, p.Nk}},
	}
	for _, op := range shapes {
		if _, ok := CheckedProduct(op.dims[:]...); !ok {
			return Errorf(ErrTooLarge, "%s of shape %v has more elements than fit in an int", op.name, op.dims)
		}
	}
	return nil
}

// MaxPosition bounds a causal offset and a window's sides: 2⁴⁰, more keys
// than any machine holds, so that positions computed from them never wrap
// an int. Use −1 for an unbounded window side.
const MaxPosition = 1 << 40

// Check reports the variant values that are wrong at any size: a causal
// offset beyond ±MaxPosition, a window side below −1 or above
// MaxPosition, a softcap below 0 or not finite, an ALiBi slope or a sink
// that is not finite. The error wraps ErrShape and names the value.
// Problem.Validate calls it before checking the counts against H and B
// and the key lengths against Nk; a caller holding variants before the
// sizes are known (a command line's flags) calls it alone.
func (v Variants) Check() error {
	if o := v.CausalOffset; o != nil && (*o > MaxPosition || *o < -MaxPosition) {
		return Errorf(ErrShape, "causal offset %d is beyond ±2⁴⁰", *o)
	}
	if w := v.Window; w != nil && (w.Left < -1 || w.Right < -1) {
		return Errorf(ErrShape, "window (%d, %d): each side must be ≥ 0, or −1 for unbounded", w.Left, w.Right)
	}
	if w := v.Window; w != nil && (w.Left > MaxPosition || w.Right > MaxPosition) {
		return Errorf(ErrShape, "window (%d, %d): a side is beyond 2⁴⁰; −1 is unbounded", w.Left, w.Right)
	}
	if c := float64(v.Softcap); c < 0 || math.IsNaN(c) || math.IsInf(c, 0) {
		return Errorf(ErrShape, "softcap %v must be finite and > 0 (0 for none)", v.Softcap)
	}
	for _, vec := range []struct {
		name string
		x    []float32
	}{{"ALiBi slopes", v.ALiBi}, {"sinks", v.Sinks}} {
		for h, x := range vec.x {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return Errorf(ErrShape, "%s: head %d is %v, want finite", vec.name, h, x)
			}
		}
	}
	return nil
}

// validateVariants checks p's variants: their values (Variants.Check),
// then their counts and the key lengths against p's sizes.
func (p Problem) validateVariants() error {
	if err := p.Variants.Check(); err != nil {
		return err
	}
	for _, v := range []struct {
		name string
		x    []float32
	}{{"ALiBi slopes", p.ALiBi}, {"sinks", p.Sinks}} {
		if v.x != nil && len(v.x) != p.H {
			return Errorf(ErrShape, "%s: %d values for H=%d query heads", v.name, len(v.x), p.H)
		}
	}
	if p.KVLens != nil {
		if len(p.KVLens) != p.B {
			return Errorf(ErrShape, "key lengths: %d values for B=%d batches", len(p.KVLens), p.B)
		}
		for b, n := range p.KVLens {
			if n < 0 || n > p.Nk {
				return Errorf(ErrShape, "key lengths: batch %d has %d, want 0 … Nk=%d", b, n, p.Nk)
			}
		}
	}
	return nil
}

// CheckedProduct multiplies non-negative sizes, reporting false on
// overflow.
func CheckedProduct(dims ...int) (int, bool) {
	for _, d := range dims {
		if d < 0 {
			return 0, false
		}
	}
	if slices.Contains(dims, 0) {
		return 0, true
	}
	n := 1
	for _, d := range dims {
		if n > math.MaxInt/d {
			return 0, false
		}
		n *= d
	}
	return n, true
}

// CheckMask checks that m broadcasts to [B, H, Nq, Nk] and that its buffer
// holds it. name ("bias", "mask") goes into the error.
func (p Problem) CheckMask(name string, m *Mask) error {
	if m == nil {
		return nil
	}
	if m.Buf == nil {
		return Errorf(ErrShape, "%s has no buffer", name)
	}
	full := [4]int{p.B, p.H, p.Nq, p.Nk}
	for d, s := range m.Shape {
		if s != 1 && s != full[d] {
			return Errorf(ErrShape, "%s of shape %v does not broadcast to [B=%d H=%d Nq=%d Nk=%d]: dim %d is %d, want 1 or %d",
				name, m.Shape, p.B, p.H, p.Nq, p.Nk, d, s, full[d])
		}
	}
	n, ok := CheckedProduct(m.Shape[:]...)
	if !ok {
		return Errorf(ErrTooLarge, "%s of shape %v overflows int", name, m.Shape)
	}
	if m.Buf.Len() < n {
		return Errorf(ErrShape, "%s of shape %v needs %d elements, its buffer has %d", name, m.Shape, n, m.Buf.Len())
	}
	return nil
}

// CheckBuffer checks that buf is present and holds at least n elements.
func CheckBuffer(name string, buf Buffer, n int) error {
	if buf == nil {
		return Errorf(ErrShape, "%s buffer is nil", name)
	}
	if buf.Len() < n {
		return Errorf(ErrShape, "%s needs %d elements, its buffer has %d", name, n, buf.Len())
	}
	return nil
}

// Validate resolves p's defaults in place (Problem.Resolved) and checks
// p, its bias and the buffers of a Scores call. Every backend's Scores
// calls it first, so the zero defaults mean the same on every backend.
func (p *ScoresParams) Validate(q, k, s Buffer) error {
	p.Problem = p.Problem.Resolved()
	if err := p.Problem.validateStaged(); err != nil {
		return err
	}
	if err := p.CheckMask("bias", p.Bias); err != nil {
		return err
	}
	if err := p.CheckMask("mask", p.Keep); err != nil {
		return err
	}
	if p.Stage < StageBiased || p.Stage > StageMasked {
		return Errorf(ErrShape, "unknown score stage %v", p.Stage)
	}
	return checkAll(
		checkStagedUnquantized("Q", q),
		checkStagedUnquantized("K", k),
		CheckBuffer("Q", q, p.QLen()),
		CheckBuffer("K", k, p.KLen()),
		CheckBuffer("scores", s, p.ScoresLen()),
		checkFloat32("scores", s),
		checkKeepDType(p.Keep),
	)
}

// Validate resolves p's defaults in place and checks p, its keep-mask and
// the buffers of a Softmax call.
func (p *SoftmaxParams) Validate(s Buffer) error {
	p.Problem = p.Problem.Resolved()
	if err := p.Problem.validateStaged(); err != nil {
		return err
	}
	if err := p.CheckMask("mask", p.Keep); err != nil {
		return err
	}
	if p.LSE != nil {
		if err := CheckBuffer("LSE", p.LSE, p.LSELen()); err != nil {
			return err
		}
	}
	return checkAll(
		CheckBuffer("scores", s, p.ScoresLen()),
		checkFloat32("scores", s),
		checkFloat32("LSE", p.LSE),
		checkKeepDType(p.Keep),
	)
}

// Validate resolves p's defaults in place and checks p and the buffers of
// a Context call.
func (p *ContextParams) Validate(pm, v, o Buffer) error {
	p.Problem = p.Problem.Resolved()
	if err := p.Problem.validateStaged(); err != nil {
		return err
	}
	return checkAll(
		checkStagedUnquantized("V", v),
		checkStagedUnquantized("O", o),
		CheckBuffer("weights", pm, p.ScoresLen()),
		CheckBuffer("V", v, p.VLen()),
		CheckBuffer("O", o, p.OLen()),
		checkFloat32("weights", pm),
	)
}

// Validate resolves p's defaults in place and checks a Fused call
// (lse may be nil) against what a backend with caps takes, before any
// work. Every backend's Fused calls it, with its own Caps, so that the
// zero defaults mean the same and the same calls are refused on every
// backend. It checks:
//
//   - the problem (Problem.Validate: sizes, scale, variants, packed and
//     paged sequences, views, scales, V from K, index lists, block
//     masks): ErrShape, or ErrTooLarge where an operand's element count
//     overflows int;
//   - the bias and keep-mask (Problem.CheckMask) and the buffers: each
//     present and long enough (an 8-bit K's and V's rows at their
//     pitch), the LSE and keep-mask Float32, only K and V 8-bit, V
//     K's buffer under V from K: ErrShape;
//   - what the backend does not take: a block mask without caps.Blocks,
//     an index list without caps.Indices, a q8 K or V whose head dims
//     are not whole blocks without caps.Quant8: ErrUnsupported, naming
//     the sizes, where an unaware backend would compute another
//     problem; and an 8-bit K or V read through views, on any backend.
//
// A backend with Caps.Indices or Caps.Quant8 runs the last two through
// attn's package internal/lower, which lowers them to problems its kernels take
// (NeedsLowering says when); Validate accepts them for it, before or
// after that choice. It does not check the capabilities the kernels
// package asks about before calling (Caps.Seqs, Caps.Strides:
// FusedSupports, Problem.DenseOnly) nor buffer dtypes beyond those
// above.
func (p *FusedParams) Validate(caps Caps, q, k, v, o, lse Buffer) error {
	switch {
	case p.Blocks != nil && !caps.Blocks:
		return Errorf(ErrUnsupported, "a block mask (B=%d Nq=%d Nk=%d, blocks of %d): this backend's Fused does not take one (Caps.Blocks)", p.B, p.Nq, p.Nk, p.Blocks.Size)
	case p.Indices != nil && !caps.Indices:
		return Errorf(ErrUnsupported, "an index list (B=%d Nq=%d Nk=%d, %d keys a row): this backend's Fused does not take one (Caps.Indices)", p.B, p.Nq, p.Nk, p.Indices.PerRow)
	}
	if err := p.validate(q, k, v, o, lse); err != nil {
		return err
	}
	if !caps.Quant8 && p.pads(k, v) {
		return Errorf(ErrUnsupported, "a blocked K (%v) or V (%v) of head dims D=%d, Dv=%d, not whole blocks of %d: this backend's Fused does not pad them (Caps.Quant8, attn's package internal/lower)", k.DType(), v.DType(), p.D, p.Dv, Q8Block)
	}
	return nil
}

// validate is Validate whatever the capabilities.
func (p *FusedParams) validate(q, k, v, o, lse Buffer) error {
	p.Problem = p.Problem.Resolved()
	if err := p.Problem.Validate(); err != nil {
		return err
	}
	if err := p.CheckMask("bias", p.Bias); err != nil {
		return err
	}
	if err := p.CheckMask("mask", p.Keep); err != nil {
		return err
	}
	if lse != nil {
		if err := CheckBuffer("LSE", lse, p.LSELen()); err != nil {
			return err
		}
	}
	// A q8 K's and V's rows are whole blocks: their lengths are those of
	// the problem whose head dims are the pitches.
	kv := p.Problem
	if k != nil && v != nil {
		kv = kv.Pitched(k.DType(), v.DType())
	}
	return checkAll(
		CheckBuffer("Q", q, p.QLen()),
		CheckBuffer("K", k, kv.KLen()),
		CheckBuffer("V", v, kv.VLen()),
		CheckBuffer("O", o, p.OLen()),
		checkFloat32("LSE", lse),
		checkKeepDType(p.Keep),
		checkUnquantized("Q", q),
		checkUnquantized("O", o),
		p.checkQuantized("K", k),
		p.checkQuantized("V", v),
		p.checkVFromK(k, v),
	)
}

// validateVFromK checks a problem that takes V from K (VFromK): V is
// K's first Dv columns, so Dv ≤ D, V has no strides of its own, and V's
// scales, where K has scales, are K's.
func (p Problem) validateVFromK() error {
	if !p.VFromK {
		return nil
	}
	switch {
	case p.Dv > p.D:
		return Errorf(ErrShape, "V from K is K's first Dv columns: Dv=%d is more than D=%d", p.Dv, p.D)
	case p.Views != nil && p.Views.V != nil:
		return Errorf(ErrShape, "V from K is read at K's strides: V strides %+v of its own", *p.Views.V)
	}
	if s := p.Scales; s != nil && s.K != nil {
		if s.V == nil {
			return Errorf(ErrShape, "V from K has K's values: K has scales %v, V none", s.K)
		}
		for g := range s.K {
			if s.V[g] != s.K[g] {
				return Errorf(ErrShape, "V from K has K's values: V's scale of KV head %d is %v, K's %v", g, s.V[g], s.K[g])
			}
		}
	}
	return nil
}

// checkVFromK checks that a problem that takes V from K gets K's buffer
// as V.
func (p Problem) checkVFromK(k, v Buffer) error {
	if p.VFromK && v != k {
		return Errorf(ErrShape, "V from K (D=%d, Dv=%d): the V buffer must be K's", p.D, p.Dv)
	}
	return nil
}

// checkUnquantized refuses an 8-bit buffer as an operand other than
// Fused's K and V.
func checkUnquantized(name string, buf Buffer) error {
	if buf != nil && buf.DType().Quantized() {
		return Errorf(ErrShape, "%s is %v: only a K or V of Fused may be 8-bit", name, buf.DType())
	}
	return nil
}

// checkStagedUnquantized refuses an 8-bit operand of a staged op
// (ErrUnsupported: Fused takes an 8-bit K and V).
func checkStagedUnquantized(name string, buf Buffer) error {
	if buf != nil && buf.DType().Quantized() {
		return Errorf(ErrUnsupported, "%s is %v: the staged ops take no quantized operand; Fused takes a quantized K and V", name, buf.DType())
	}
	return nil
}

// checkQuantized checks an 8-bit K or V of Fused: it is read in place
// (no Views). Its rows are whole blocks (padded.go).
func (p Problem) checkQuantized(name string, buf Buffer) error {
	if buf == nil || !buf.DType().Quantized() {
		return nil
	}
	t := buf.DType()
	if p.Views != nil {
		return Errorf(ErrUnsupported, "%s is %v: views take no quantized operand", name, t)
	}
	return nil
}

// validateStaged is Validate for a staged op, which refuses packed and
// paged problems: their scores would be ragged [B, H, Nq, Nk] slices of
// different sequences, and Fused computes them without the scores.
func (p Problem) validateStaged() error {
	if err := p.Validate(); err != nil {
		return err
	}
	if p.Scales != nil {
		return Errorf(ErrUnsupported, "the staged ops take no K or V scales: Fused does")
	}
	if p.Packed != nil || p.Paged != nil {
		return Errorf(ErrUnsupported, "the staged ops take no packed or paged problem (B=%d Nq=%d Nk=%d): Fused does", p.B, p.Nq, p.Nk)
	}
	if p.Indices != nil {
		return Errorf(ErrUnsupported, "the staged ops take no index list (B=%d Nq=%d Nk=%d): Fused does", p.B, p.Nq, p.Nk)
	}
	if p.Blocks != nil {
		return Errorf(ErrUnsupported, "the staged ops take no block mask (B=%d Nq=%d Nk=%d): Fused skips its blocks", p.B, p.Nq, p.Nk)
	}
	return nil
}

// checkFloat32 refuses a buffer (when not nil) that is not Float32: the
// scores, weights, keep-mask and LSE are Float32 whatever the operands'
// dtypes.
func checkFloat32(name string, buf Buffer) error {
	if buf == nil {
		return nil
	}
	return CheckDType(name, buf, Float32)
}

func checkKeepDType(keep *Mask) error {
	if keep == nil {
		return nil
	}
	return checkFloat32("mask", keep.Buf)
}

func checkAll(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
