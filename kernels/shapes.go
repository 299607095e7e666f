package kernels

import (
	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/operand"
)

// call is a validated Attention call.
type call struct {
	prob      backend.Problem
	rank      int
	strategy  Strategy
	biasShape [4]int
	keepShape [4]int
}

// Shapes are the shapes of an Attention call's operands, to check a call
// before its data exists: a command that has read only its files'
// headers.
type Shapes struct {
	Q, K, V []int
	Layout  Layout
	// Bias and Mask are the shapes of Options.Bias and Options.Mask; nil
	// for none.
	Bias, Mask []int
	// Names are what the errors call the operands and lists.
	Names OperandNames
}

// OperandNames are what Shapes.Check's errors call each operand (a
// file's name, say); an empty one is the default given beside it.
type OperandNames struct {
	Q, K, V    string // "Q", "K", "V"
	Bias, Mask string // "bias", "mask"
	// CuSeqlensQ, CuSeqlensK, BlockTable and KVLens name the lists of
	// Options of those names (KVLens with a block table only, as the
	// cache lengths); by default the fields' names.
	CuSeqlensQ, CuSeqlensK, BlockTable, KVLens string
}

// Check validates s and opts as Attention does before it reads any data,
// and returns the backend.Problem of the call with its defaults resolved:
// ranks, sizes, broadcasting, the scale, the variants
// (backend.Problem.Validate) and the score stage, and with
// opts.CuSeqlensQ, CuSeqlensK or BlockTable the lists against the shapes
// (Packed and Paged set in the problem). s.Bias and s.Mask stand
// for opts.Bias and opts.Mask, which it does not read; the strategy is
// Strategy.Choose's to check, against a backend. Every error wraps a
// sentinel of package backend and names the operands as s.Names says.
func (s Shapes) Check(opts *Options) (backend.Problem, error) {
	if opts == nil {
		opts = &Options{}
	}
	c, err := s.check(opts)
	if err != nil {
		return backend.Problem{}, err
	}
	return c.prob, nil
}

// seqName is what the errors call list i: 0 CuSeqlensQ, 1 CuSeqlensK,
// 2 BlockTable, 3 KVLens.
func (s Shapes) seqName(i int) string {
	n := s.Names
	return or([4]string{n.CuSeqlensQ, n.CuSeqlensK, n.BlockTable, n.KVLens}[i],
		[4]string{"CuSeqlensQ", "CuSeqlensK", "BlockTable", "KVLens"}[i])
}

// name is what the errors call operand i: 0 Q, 1 K, 2 V, 3 the bias,
// 4 the mask.
func (s Shapes) name(i int) string {
	n := s.Names
	return or([5]string{n.Q, n.K, n.V, n.Bias, n.Mask}[i],
		[5]string{"Q", "K", "V", "bias", "mask"}[i])
}

// or is name, or def where name is empty.
func or(name, def string) string {
	if name != "" {
		return name
	}
	return def
}

func (s Shapes) check(opts *Options) (*call, error) {
	if opts.seqs() {
		return s.checkSeqs(opts)
	}
	nq, nk, nv := s.name(0), s.name(1), s.name(2)
	for i, shape := range [][]int{s.Q, s.K, s.V} {
		if r := len(shape); r < 2 || r > 4 {
			return nil, backend.Errorf(backend.ErrShape, "%s has rank %d (shape %v); want 2 [N,D], 3 [H,N,D] or 4 [B,H,N,D]", s.name(i), r, shape)
		}
		if _, err := numElems(shape); err != nil {
			return nil, backend.Wrapf(err, "%s", s.name(i))
		}
	}
	for i, shape := range [][]int{s.K, s.V} {
		if len(shape) != len(s.Q) {
			return nil, backend.Errorf(backend.ErrShape, "%s has rank %d but %s has rank %d; Q, K and V must have one rank", nq, len(s.Q), s.name(i+1), len(shape))
		}
	}
	if s.Layout != BHND && s.Layout != BNHD {
		return nil, backend.Errorf(backend.ErrShape, "unknown layout %v", s.Layout)
	}
	bq, h, lq, d := operand.Dims(s.Q, s.Layout)
	bk, hk, lk, dk := operand.Dims(s.K, s.Layout)
	bv, hv, lv, dv := operand.Dims(s.V, s.Layout)
	switch {
	case bk != bq || bv != bq:
		return nil, backend.Errorf(backend.ErrShape, "batch sizes differ: %s has B=%d, %s B=%d, %s B=%d", nq, bq, nk, bk, nv, bv)
	case lv != lk:
		return nil, backend.Errorf(backend.ErrShape, "key counts differ: %s has N=%d keys but %s has N=%d values", nk, lk, nv, lv)
	case hv != hk:
		return nil, backend.Errorf(backend.ErrShape, "KV head counts differ: %s has %d heads but %s has %d", nk, hk, nv, hv)
	}
	if err := checkHeads(nq, nk, nv, h, hk, d, dk, dv); err != nil {
		return nil, err
	}
	return s.finish(backend.Problem{
		B: bq, H: h, KVHeads: hk, Nq: lq, Nk: lk, D: d, Dv: dv,
		Layout: s.Layout,
	}, len(s.Q), opts)
}

// finish checks what the operands' sizes leave to check of a call whose
// problem p they give (with its sizes, layout and sequences): the
// scale, causal masking and variants opts set in it, the problem
// (backend.Problem.Validate), the score stage, the output dtype and the
// bias's and mask's broadcasting.
func (s Shapes) finish(p backend.Problem, rank int, opts *Options) (*call, error) {
	if err := opts.params().problem(&p); err != nil {
		return nil, err
	}
	var err error
	c := &call{prob: p, rank: rank}
	if err := c.prob.Validate(); err != nil {
		return nil, err
	}
	c.prob = c.prob.Resolved()
	if opts.ScoresStage < StageBiased || opts.ScoresStage > StageMasked {
		return nil, backend.Errorf(backend.ErrShape, "unknown score stage %v", opts.ScoresStage)
	}
	if opts.OutDType != nil {
		if err := tensorDType("output dtype", *opts.OutDType); err != nil {
			return nil, err
		}
	}
	if opts.MatrixDType != nil {
		if err := tensorDType("the weights' and scores' dtype", *opts.MatrixDType); err != nil {
			return nil, err
		}
	}
	full := [4]int{p.B, p.H, p.Nq, p.Nk}
	if s.Bias != nil {
		if c.biasShape, err = broadcastShape(s.name(3), s.Bias, full); err != nil {
			return nil, err
		}
	}
	if s.Mask != nil {
		if c.keepShape, err = broadcastShape(s.name(4), s.Mask, full); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// plan checks the data of an Attention call and then its shapes
// (Shapes.Check).
func plan(q, k, v *Tensor, opts *Options) (*call, error) {
	for _, op := range []struct {
		name string
		t    *Tensor
	}{{"Q", q}, {"K", k}, {"V", v}} {
		if err := op.t.check(op.name); err != nil {
			return nil, err
		}
	}
	if opts.BlockTable != nil && (!k.isDense() || !v.isDense() && opts.VFromK == 0) {
		return nil, backend.Errorf(backend.ErrShape, "a paged cache's pools must be dense: K of shape %s, V of shape %s", viewName(k), viewName(v))
	}
	if k.Layout != q.Layout || v.Layout != q.Layout {
		return nil, backend.Errorf(backend.ErrShape, "Q, K and V must share a layout: %v, %v, %v", q.Layout, k.Layout, v.Layout)
	}
	s := Shapes{Q: q.Shape, K: k.Shape, V: v.Shape, Layout: q.Layout}
	if opts.Bias != nil {
		if err := opts.Bias.check("bias"); err != nil {
			return nil, err
		}
		s.Bias = opts.Bias.Shape
	}
	if opts.Mask != nil {
		n, err := numElems(opts.Mask.Shape)
		if err != nil {
			return nil, backend.Wrapf(err, "mask")
		}
		if len(opts.Mask.Keep) != n {
			return nil, backend.Errorf(backend.ErrShape, "mask of shape %v needs %d elements, has %d", opts.Mask.Shape, n, len(opts.Mask.Keep))
		}
		s.Mask = opts.Mask.Shape
	}
	c, err := s.check(opts)
	if err != nil {
		return nil, err
	}
	if !opts.AllowNonFinite {
		if err := seqsFinite(c.prob, q, k, v, opts.Bias); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// checkHeads checks the heads and head dims Q (named nq: h heads of d),
// K (nk: kvh heads of dk) and V (nv: head dim dv) agree on: the same D,
// H a multiple of the KV heads, none zero.
func checkHeads(nq, nk, nv string, h, kvh, d, dk, dv int) error {
	switch {
	case dk != d:
		return backend.Errorf(backend.ErrShape, "head dims differ: %s has D=%d, %s has D=%d", nq, d, nk, dk)
	case h == 0 || kvh == 0:
		return backend.Errorf(backend.ErrShape, "zero heads: %s has %d, %s has %d", nq, h, nk, kvh)
	case h%kvh != 0:
		return backend.Errorf(backend.ErrShape, "%s has H=%d heads, not a multiple of the %d KV heads of %s", nq, h, kvh, nk)
	case d == 0 || dv == 0:
		return backend.Errorf(backend.ErrShape, "zero head dim: %s has D=%d, %s has Dv=%d", nq, d, nv, dv)
	}
	return nil
}

// broadcastShape right-aligns shape against full ([B, H, Nq, Nk]) and
// checks that each dimension is 1 or the full size.
func broadcastShape(name string, shape []int, full [4]int) ([4]int, error) {
	out := [4]int{1, 1, 1, 1}
	if len(shape) > 4 {
		return out, backend.Errorf(backend.ErrShape, "%s has rank %d (shape %v); at most 4: [B, H, Nq, Nk]", name, len(shape), shape)
	}
	off := 4 - len(shape)
	for i, s := range shape {
		want := full[off+i]
		if s != 1 && s != want {
			return out, backend.Errorf(backend.ErrShape, "%s of shape %v does not broadcast to [B=%d, H=%d, Nq=%d, Nk=%d]: its %s dimension is %d, want 1 or %d",
				name, shape, full[0], full[1], full[2], full[3], [4]string{"B", "H", "Nq", "Nk"}[off+i], s, want)
		}
		out[off+i] = s
	}
	return out, nil
}

// checkFinite is the input policy, whatever the dtype: Q, K and V must
// be finite, a bias may hold −Inf (a hidden key) but not NaN or +Inf.
func checkFinite(q, k, v, bias *Tensor) error {
	for _, op := range []struct {
		name string
		t    *Tensor
	}{{"Q", q}, {"K", k}, {"V", v}} {
		if op.t == nil {
			continue
		}
		if i, x := firstBad(op.t, false); i >= 0 {
			return backend.Errorf(backend.ErrNonFinite, "%s of shape %v holds %v at %v", op.name, op.t.Shape, x, unravel(i, op.t.Shape))
		}
	}
	if bias != nil {
		if i, x := firstBad(bias, true); i >= 0 {
			return backend.Errorf(backend.ErrNonFinite, "bias of shape %v holds %v at %v (only −Inf may hide a key)", bias.Shape, x, unravel(i, bias.Shape))
		}
	}
	return nil
}

// firstBad is the index and value of t's first NaN or infinity (−Inf
// allowed when negInf), or −1. A half is non-finite when its exponent
// bits are all ones; only those are widened.
func firstBad(t *Tensor, negInf bool) (int, float32) {
	if !t.isDense() {
		return firstBadStrided(t, negInf)
	}
	return firstBadIn(t, 0, t.Len(), negInf)
}

// firstBadIn is firstBad over t's elements lo … hi−1.
func firstBadIn(t *Tensor, lo, hi int, negInf bool) (int, float32) {
	if !t.DType.Half() {
		if i, x := operand.FirstRefused(t.Data[lo:hi], negInf); i >= 0 {
			return lo + i, x
		}
		return -1, 0
	}
	exp := uint16(0x7c00) // float16's exponent bits
	if t.DType == BFloat16 {
		exp = 0x7f80
	}
	for i, b := range t.Bits[lo:hi] {
		if b&exp == exp {
			if x := t.DType.Decode(b); operand.Refused(x, negInf) {
				return lo + i, x
			}
		}
	}
	return -1, 0
}

// unravel turns a flat index into coordinates of shape.
func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return idx
}
