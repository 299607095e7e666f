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
// heads of each KV group), and, when the problem has sinks, ∂L/∂sink into
// dSinks ([H]). The operands are laid out as the forward's (dO as O, dQ,
// dK and dV as Q, K and V); every one is Float32. It validates before any
// work, with the rules of Fused; what it does not take is ErrUnsupported,
// naming it.
type Backwarder interface {
	Backward(ctx context.Context, p BackwardParams, q, k, v, o, lse, dO, dQ, dK, dV Buffer, dSinks []float32) error
}

// Validate resolves p's defaults and checks p and the buffers of a
// Backward call, and refuses what the backward pass does not take yet:
// packed or paged sequences, strided views, index lists, block masks,
// V from K and scales (ErrUnsupported), and a buffer that is not Float32
// (ErrUnsupported) or too short (ErrShape).
func (p *BackwardParams) Validate(q, k, v, o, lse, dO, dQ, dK, dV Buffer, dSinks []float32) error {
	p.Problem = p.Problem.Resolved()
	if err := p.Problem.Validate(); err != nil {
		return err
	}
	switch {
	case p.Packed != nil || p.Paged != nil:
		return Errorf(ErrUnsupported, "the backward pass takes no packed or paged sequences yet (B=%d Nq=%d Nk=%d)", p.B, p.Nq, p.Nk)
	case p.Views != nil:
		return Errorf(ErrUnsupported, "the backward pass takes no strided views yet (B=%d Nq=%d Nk=%d)", p.B, p.Nq, p.Nk)
	case p.Indices != nil || p.Blocks != nil:
		return Errorf(ErrUnsupported, "the backward pass takes no index lists or block masks yet (B=%d Nq=%d Nk=%d)", p.B, p.Nq, p.Nk)
	case p.VFromK:
		return Errorf(ErrUnsupported, "the backward pass takes no V from K yet (D=%d Dv=%d)", p.D, p.Dv)
	case p.Bias != nil || p.Keep != nil || p.DBias != nil:
		return Errorf(ErrUnsupported, "the backward pass takes no bias or keep-mask yet (B=%d H=%d Nq=%d Nk=%d)", p.B, p.H, p.Nq, p.Nk)
	case p.Scales != nil:
		return Errorf(ErrUnsupported, "the backward pass takes no K and V scales (8-bit caches are not trained)")
	case p.Sinks != nil && len(dSinks) != p.H:
		return Errorf(ErrShape, "dSinks has %d values for H=%d sinks", len(dSinks), p.H)
	case p.Sinks == nil && dSinks != nil:
		return Errorf(ErrShape, "dSinks given (%d values) for a problem without sinks", len(dSinks))
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
		if b.buf.DType() != Float32 {
			return Errorf(ErrUnsupported, "%s is %v: the backward pass takes float32 operands yet", b.name, b.buf.DType())
		}
	}
	return nil
}
