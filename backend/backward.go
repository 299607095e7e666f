package backend

import "context"

// BackwardParams is one backward call: the problem of the forward whose
// gradients it computes.
type BackwardParams struct {
	Problem
	// Bias and Keep are the forward's bias and keep-mask (optional), as
	// in FusedParams.
	Bias, Keep *Mask
	// DBias, when set, receives ∂L/∂bias over Bias's shape (float32):
	// the scores' gradient summed over the dimensions the bias
	// broadcasts. It needs Bias.
	DBias *Mask
}

// Backwarder is implemented by a backend that computes the gradients of
// attention (FlashAttention-2's backward: the probabilities recomputed
// tile by tile from Q, K and the forward's LSE, never an Nq×Nk matrix).
// Given the forward's inputs q, k and v, its output o and LSE, and dO =
// ∂L/∂O, Backward writes dQ, dK and dV (dK and dV summed over the query
// heads of each KV group), ∂L/∂sink into dSinks ([H]) when the problem
// has sinks, and ∂L/∂bias into p.DBias when set. The operands are laid
// out as the forward's (dO as O, dQ, dK and dV as Q, K and V, packed
// when the forward is). It validates before any work, with Validate's
// rules; what a backend does not take is ErrUnsupported, naming it.
//
// CheckBackward checks a Backward call as Backward does before any work,
// and does nothing else: what Backward would refuse it refuses, with the
// same error, so that a caller (kernels.AttentionGrad) can refuse before
// it runs the forward.
type Backwarder interface {
	Backward(ctx context.Context, p BackwardParams, q, k, v, o, lse, dO, dQ, dK, dV Buffer, dSinks []float32) error
	CheckBackward(p BackwardParams, q, k, v, o, lse, dO, dQ, dK, dV Buffer, dSinks []float32) error
}

// Validate resolves p's defaults and checks p and the buffers of a
// Backward call. It takes dense or packed sequences, a bias and a
// keep-mask, a block mask and an index list (which a backend without
// Caps.BackwardBlocks or Caps.BackwardIndices refuses itself), and
// Float32, Float16 or BFloat16 operands (each its own; the LSE, DBias and
// the keep-mask Float32), and refuses what the backward pass does not
// take: paged sequences, strided views, V from K, and 8-bit operands or
// scales (ErrUnsupported: 8-bit caches are not trained). Sizes that
// disagree are ErrShape.
func (p *BackwardParams) Validate(q, k, v, o, lse, dO, dQ, dK, dV Buffer, dSinks []float32) error {
	p.Problem = p.Problem.Resolved()
	if err := p.Problem.Validate(); err != nil {
		return err
	}
	switch {
	case p.Paged != nil:
		return Errorf(ErrUnsupported, "the backward pass takes no paged sequences (B=%d Nq=%d Nk=%d): a cache is not trained", p.B, p.Nq, p.Nk)
	case p.Views != nil:
		return Errorf(ErrUnsupported, "the backward pass takes no strided views yet (B=%d Nq=%d Nk=%d)", p.B, p.Nq, p.Nk)
	case p.Indices != nil && (p.Bias != nil || p.Keep != nil || p.ALiBi != nil || p.Blocks != nil):
		return Errorf(ErrUnsupported, "an index list with a bias, keep-mask, ALiBi or block mask (B=%d Nq=%d Nk=%d): fold the mask into the list, as for the forward", p.B, p.Nq, p.Nk)
	case p.VFromK:
		return Errorf(ErrUnsupported, "the backward pass takes no V from K yet (D=%d Dv=%d)", p.D, p.Dv)
	case p.Scales != nil:
		return Errorf(ErrUnsupported, "the backward pass takes no K and V scales (8-bit caches are not trained)")
	case p.Sinks != nil && len(dSinks) != p.H:
		return Errorf(ErrShape, "dSinks has %d values for H=%d sinks", len(dSinks), p.H)
	case p.Sinks == nil && dSinks != nil:
		return Errorf(ErrShape, "dSinks given (%d values) for a problem without sinks", len(dSinks))
	case p.DBias != nil && p.Bias == nil:
		return Errorf(ErrShape, "dBias of shape %v asked for a problem without a bias", p.DBias.Shape)
	case p.DBias != nil && p.DBias.Shape != p.Bias.Shape:
		return Errorf(ErrShape, "dBias of shape %v: want the bias's, %v", p.DBias.Shape, p.Bias.Shape)
	}
	if err := checkAll(p.CheckMask("bias", p.Bias), p.CheckMask("mask", p.Keep), p.CheckMask("dBias", p.DBias),
		checkKeepDType(p.Keep), checkUnquantized("bias", p.Bias.Buffer())); err != nil {
		return err
	}
	if p.DBias != nil {
		if err := checkFloat32("dBias", p.DBias.Buf); err != nil {
			return err
		}
	}
	for _, b := range []struct {
		name string
		buf  Buffer
		n    int
	}{{"Q", q, p.QLen()}, {"K", k, p.KLen()}, {"V", v, p.VLen()}, {"O", o, p.OLen()}, {"LSE", lse, p.LSELen()},
		{"dO", dO, p.OLen()}, {"dQ", dQ, p.QLen()}, {"dK", dK, p.KLen()}, {"dV", dV, p.VLen()}} {
		if err := CheckBuffer(b.name, b.buf, b.n); err != nil {
			return err
		}
		if t := b.buf.DType(); t.Quantized() {
			return Errorf(ErrUnsupported, "%s is %v: the backward pass takes Float32, Float16 and BFloat16 operands (8-bit caches are not trained)", b.name, t)
		}
	}
	return checkFloat32("LSE", lse)
}
