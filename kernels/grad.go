package kernels

import (
	"context"
	"slices"

	"github.com/attn-go/attn/backend"
)

// Grads are the gradients AttentionGrad computes: DQ, DK and DV with
// q's, k's and v's shapes and layout (dense, float32; DK and DV summed
// over the query heads of each KV group), and DSinks ([H]) when
// Options.Sinks is set.
type Grads struct {
	DQ, DK, DV *Tensor
	DSinks     []float32
}

// AttentionGrad computes the gradients of a scalar loss L through
// Attention(q, k, v, opts), given dOut = ∂L/∂O (the output's shape and
// layout): the forward runs fused for its output and LSE, then the
// backend's backward pass (backend.Backwarder: FlashAttention-2's
// method, memory O(N)). A training step calls it with the loss's
// gradient and updates its parameters from the result.
//
// It takes float32 tensors, and the options the backward pass takes:
// Scale, Causal and CausalOffset, Window, Softcap, ALiBi, Sinks and
// KVLens. Every other option (a bias or mask, packed or paged sequences,
// index lists, block masks, V from K, the staged matrices, other
// dtypes), and a backend without a backward pass (the GPU, for now), is
// an error wrapping backend.ErrUnsupported, before the forward runs; bad shapes
// and non-finite inputs are errors as for Attention.
func AttentionGrad(ctx context.Context, be backend.Backend, q, k, v, dOut *Tensor, opts *Options) (*Grads, error) {
	if opts == nil {
		opts = &Options{}
	}
	if be == nil {
		return nil, backend.Errorf(backend.ErrUnavailable, "nil backend")
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	bw, ok := be.(backend.Backwarder)
	if !ok {
		return nil, backend.Errorf(backend.ErrUnsupported, "the %s backend computes no gradients (backend.Backwarder)", be.Name())
	}
	switch {
	case opts.Bias != nil || opts.Mask != nil:
		return nil, backend.Errorf(backend.ErrUnsupported, "gradients with a bias or keep-mask: not yet")
	case opts.Weights || opts.Scores || opts.Strategy == Staged:
		return nil, backend.Errorf(backend.ErrUnsupported, "gradients run fused: no weights, scores or staged strategy")
	case opts.VFromK > 0:
		return nil, backend.Errorf(backend.ErrUnsupported, "gradients of V from K: not yet")
	case opts.OutDType != nil && *opts.OutDType != Float32:
		return nil, backend.Errorf(backend.ErrUnsupported, "gradients in %v: float32 only, for now", *opts.OutDType)
	}
	for _, t := range []struct {
		name string
		t    *Tensor
	}{{"Q", q}, {"K", k}, {"V", v}, {"dOut", dOut}} {
		if t.t == nil {
			return nil, backend.Errorf(backend.ErrShape, "%s is nil", t.name)
		}
	}
	c, err := plan(q, k, v, opts)
	if err != nil {
		return nil, err
	}
	p := c.prob.Resolved()
	want := append([]int(nil), q.Shape...)
	want[len(want)-1] = p.Dv
	if err := dOut.check("dOut"); err != nil {
		return nil, err
	}
	if dOut.Layout != q.Layout || !slices.Equal(dOut.Shape, want) {
		return nil, backend.Errorf(backend.ErrShape, "dOut of shape %v in %v: want the output's, %v in %v", dOut.Shape, dOut.Layout, want, q.Layout)
	}
	if !opts.AllowNonFinite {
		for _, t := range []struct {
			name string
			t    *Tensor
		}{{"Q", q}, {"K", k}, {"V", v}, {"dOut", dOut}} {
			if i, x := firstBad(t.t, false); i >= 0 {
				return nil, backend.Errorf(backend.ErrNonFinite, "%s of shape %v holds %v at %v", t.name, t.t.Shape, x, unravel(i, t.t.Shape))
			}
		}
	}
	var bufs devBufs
	defer bufs.release()
	var ops [4]backend.Buffer
	for i, t := range []*Tensor{q, k, v, dOut} {
		if ops[i], _, err = bufs.put(be, [4]string{"Q", "K", "V", "dOut"}[i], t, false); err != nil {
			return nil, err
		}
	}
	var outs [5]backend.Buffer // O, LSE, dQ, dK, dV
	for i, n := range []int{p.OLen(), p.LSELen(), p.QLen(), p.KLen(), p.VLen()} {
		if outs[i], err = bufs.alloc(be, [5]string{"O", "LSE", "dQ", "dK", "dV"}[i], Float32, n); err != nil {
			return nil, err
		}
	}
	g := &Grads{}
	if p.Sinks != nil {
		g.DSinks = make([]float32, p.H)
	}
	// What the backward pass refuses (packed or paged sequences, index
	// lists, block masks, a dtype other than float32) is refused here,
	// before the forward runs.
	bp := backend.BackwardParams{Problem: p}
	if err := bp.Validate(ops[0], ops[1], ops[2], outs[0], outs[1], ops[3], outs[2], outs[3], outs[4], g.DSinks); err != nil {
		return nil, err
	}
	if err := be.Fused(ctx, backend.FusedParams{Problem: p}, ops[0], ops[1], ops[2], outs[0], outs[1]); err != nil {
		return nil, err
	}
	if err := bw.Backward(ctx, bp, ops[0], ops[1], ops[2], outs[0], outs[1], ops[3], outs[2], outs[3], outs[4], g.DSinks); err != nil {
		return nil, err
	}
	read := func(t *Tensor, buf backend.Buffer) (*Tensor, error) {
		out := &Tensor{Shape: append([]int(nil), t.Shape...), Layout: t.Layout, DType: Float32, Data: make([]float32, buf.Len())}
		return out, be.Read(out.Data, buf, 0)
	}
	if g.DQ, err = read(q, outs[2]); err != nil {
		return nil, err
	}
	if g.DK, err = read(k, outs[3]); err != nil {
		return nil, err
	}
	if g.DV, err = read(v, outs[4]); err != nil {
		return nil, err
	}
	return g, nil
}
