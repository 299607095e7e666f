package kernels

import (
	"context"
	"math"
	"slices"

	"github.com/attn-go/attn/backend"
)

// Grads are the gradients AttentionGrad computes: DQ, DK and DV with
// q's, k's and v's shapes, layouts and dtypes (dense; DK and DV summed
// over the query heads of each KV group), DSinks ([H]) when Options.Sinks
// is set, and DBias (the bias's shape and dtype) when GradOptions.DBias
// asks for it.
type Grads struct {
	DQ, DK, DV *Tensor
	DSinks     []float32
	DBias      *Tensor
}

// GradOptions are the options of AttentionGrad and AttentionGradFrom:
// the forward's options, and what only the backward reads. A training
// step hands the gradient the *Options it gave Attention:
//
//	opts := &kernels.Options{Causal: true, LSE: true}
//	res, err := kernels.Attention(ctx, be, q, k, v, opts)
//	g, err := kernels.AttentionGradFrom(ctx, be, q, k, v, dOut, res,
//		&kernels.GradOptions{Options: opts, DBias: true})
//
// A nil *GradOptions, or a nil Options in it, is the zero Options: plain
// non-causal attention with scale 1/√D and no gradient of a bias.
type GradOptions struct {
	// Options are the forward's options, as Attention takes them: the
	// gradients are those of that forward. AttentionGrad says which it
	// takes; it never writes them.
	*Options
	// DBias asks for the bias's gradient as well (Grads.DBias:
	// ∂L/∂bias over the bias's shape, summed where it broadcasts). It
	// needs Options.Bias.
	DBias bool
}

// forward is g's Options, the zero value for none.
func (g *GradOptions) forward() *Options {
	if g == nil || g.Options == nil {
		return &Options{}
	}
	return g.Options
}

// AttentionGrad computes the gradients of a scalar loss L through
// Attention(q, k, v, opts.Options), given dOut = ∂L/∂O (the output's
// shape and layout, any dtype): the forward runs fused for its output
// (kept in float32) and LSE, then the backend's backward pass
// (backend.Backwarder: FlashAttention-2's method, memory O(N)). A
// training step calls it with the loss's gradient and updates its
// parameters from the result.
//
// It takes Float32, Float16 and BFloat16 tensors (the gradients sum in
// float32 and come back in each input's dtype), dense or packed
// (CuSeqlensQ, CuSeqlensK), and the options that shape the forward:
// Scale, Causal and CausalOffset, Window, Softcap, ALiBi, Sinks, KVLens,
// Bias (with its gradient when GradOptions.DBias is set), Mask, Blocks
// on a backend with Caps.BackwardBlocks (the CPU's and the GPU's), whose
// backward skips the blocks that are off as the forward does, and
// Indices on a backend with Caps.BackwardIndices (the CPU's and the
// GPU's), whose dK and dV go to the named rows only. LSE, OutDType and
// MatrixDType change nothing: no O is returned. With V from K (VFromK, v nil) dK carries
// V's gradient on the columns they share and Grads.DV is nil. What the
// backward pass does not take (a paged cache, the staged matrices, block
// masks or index lists on a backend without Caps.BackwardBlocks or
// BackwardIndices), and a backend without a backward pass, is an error
// wrapping backend.ErrUnsupported, before the forward runs; bad shapes
// and non-finite inputs are errors as for Attention.
//
// The gradients are deterministic: the same inputs give the same bits on
// every run of one backend (and CPU class), whatever the CPU backend's
// thread count and whatever the GPU ran between.
func AttentionGrad(ctx context.Context, be backend.Backend, q, k, v, dOut *Tensor, opts *GradOptions) (*Grads, error) {
	return attentionGrad(ctx, be, q, k, v, nil, nil, dOut, opts)
}

// AttentionGradFrom is AttentionGrad given the forward's own result, so
// that a training step that ran the forward does not run it again: the
// backward alone. fwd is what Attention returned for the same inputs and
// opts.Options with Options.LSE set; of it, AttentionGradFrom reads Out
// (the output's shape and layout, float32 or half, finite) and LSE
// (Result.LSE's shape, float32, free of NaN and +Inf: −Inf is a row that
// sees no key), and nothing else. The gradients are of that forward: an
// Out and LSE of other inputs give the gradients of no loss. A nil fwd,
// Out or LSE is an error wrapping backend.ErrShape.
func AttentionGradFrom(ctx context.Context, be backend.Backend, q, k, v, dOut *Tensor, fwd *Result, opts *GradOptions) (*Grads, error) {
	if fwd == nil || fwd.Out == nil || fwd.LSE == nil {
		return nil, backend.Errorf(backend.ErrShape, "AttentionGradFrom needs the forward's Result with Out and LSE (Options.LSE): fwd nil: %v, Out nil: %v, LSE nil: %v",
			fwd == nil, fwd == nil || fwd.Out == nil, fwd == nil || fwd.LSE == nil)
	}
	return attentionGrad(ctx, be, q, k, v, fwd.Out, fwd.LSE, dOut, opts)
}

// attentionGrad is AttentionGrad, or AttentionGradFrom with the
// forward's out and lse.
func attentionGrad(ctx context.Context, be backend.Backend, q, k, v, out, lse, dOut *Tensor, gopts *GradOptions) (*Grads, error) {
	opts := gopts.forward()
	dBias := gopts != nil && gopts.DBias
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
	case opts.Weights || opts.Scores || opts.Strategy == Staged:
		return nil, backend.Errorf(backend.ErrUnsupported, "gradients run fused: no weights, scores or staged strategy")
	case dBias && opts.Bias == nil:
		return nil, backend.Errorf(backend.ErrShape, "GradOptions.DBias asks for the gradient of a bias, and Options.Bias is nil")
	}
	if opts.VFromK > 0 {
		return vFromKGrad(ctx, be, q, k, v, out, lse, dOut, opts, dBias)
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
	if out != nil {
		if err := checkForward(c, q, out, lse); err != nil {
			return nil, err
		}
	}
	if !opts.AllowNonFinite {
		if i, x := firstBad(dOut, false); i >= 0 {
			return nil, backend.Errorf(backend.ErrNonFinite, "dOut of shape %v holds %v at %v", dOut.Shape, x, unravel(i, dOut.Shape))
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
	bias, keep, err := c.masks(be, &bufs, opts)
	if err != nil {
		return nil, err
	}
	// O and the LSE stay float32 on the device; dQ, dK and dV are stored
	// in their inputs' dtypes where the backend stores halves.
	devDT := func(t DType) DType {
		if t.Half() && !be.Caps().Half {
			return Float32
		}
		return t
	}
	var o, lseb backend.Buffer
	if out != nil {
		if o, _, err = bufs.put(be, "O", out, false); err != nil {
			return nil, err
		}
		if lseb, _, err = bufs.put(be, "LSE", lse, false); err != nil {
			return nil, err
		}
	} else {
		if o, err = bufs.alloc(be, "O", Float32, p.OLen()); err != nil {
			return nil, err
		}
		if lseb, err = bufs.alloc(be, "LSE", Float32, p.LSELen()); err != nil {
			return nil, err
		}
	}
	// dQ, dK and dV: where the backend wraps host memory (the CPU), the
	// slices the gradients come back in, written in place; elsewhere the
	// backend's buffers, read back.
	var grads [3]backend.Buffer
	var gData [3][]float32
	var gBits [3][]uint16
	for i, t := range []*Tensor{q, k, v} {
		if grads[i], gData[i], gBits[i], err = bufs.outBuffer(be, [3]string{"dQ", "dK", "dV"}[i], devDT(t.DType), [3]int{p.QLen(), p.KLen(), p.VLen()}[i]); err != nil {
			return nil, err
		}
	}
	g := &Grads{}
	if p.Sinks != nil {
		g.DSinks = make([]float32, p.H)
	}
	bp := backend.BackwardParams{Problem: p, Bias: bias, Keep: keep}
	if dBias {
		buf, err := bufs.alloc(be, "dBias", Float32, bias.Buf.Len())
		if err != nil {
			return nil, err
		}
		bp.DBias = &backend.Mask{Buf: buf, Shape: bias.Shape}
	}
	// What the backward pass refuses is refused here, before the forward
	// runs.
	if err := bw.CheckBackward(bp, ops[0], ops[1], ops[2], o, lseb, ops[3], grads[0], grads[1], grads[2], g.DSinks); err != nil {
		return nil, err
	}
	if out == nil {
		if err := be.Fused(ctx, backend.FusedParams{Problem: p, Bias: bias, Keep: keep}, ops[0], ops[1], ops[2], o, lseb); err != nil {
			return nil, err
		}
	}
	if err := bw.Backward(ctx, bp, ops[0], ops[1], ops[2], o, lseb, ops[3], grads[0], grads[1], grads[2], g.DSinks); err != nil {
		return nil, err
	}
	read := func(name string, like *Tensor, buf backend.Buffer) (*Tensor, error) {
		out := &Tensor{Shape: append([]int(nil), like.Shape...), Layout: like.Layout, DType: like.DType}
		out.Bits, out.Data, err = readOut(be, name, buf, like.DType, buf.Len())
		return out, err
	}
	grad := func(i int, like *Tensor) (*Tensor, error) {
		if gData[i] == nil && gBits[i] == nil || devDT(like.DType) != like.DType {
			return read([3]string{"dQ", "dK", "dV"}[i], like, grads[i])
		}
		return &Tensor{Shape: append([]int(nil), like.Shape...), Layout: like.Layout, DType: like.DType, Data: gData[i], Bits: gBits[i]}, nil
	}
	if g.DQ, err = grad(0, q); err != nil {
		return nil, err
	}
	if g.DK, err = grad(1, k); err != nil {
		return nil, err
	}
	if g.DV, err = grad(2, v); err != nil {
		return nil, err
	}
	if bp.DBias != nil {
		if g.DBias, err = read("dBias", opts.Bias, bp.DBias.Buf); err != nil {
			return nil, err
		}
	}
	return g, nil
}

// checkForward checks the forward's out and lse given to
// AttentionGradFrom against the call c: out of the output's shape and
// layout, lse of Result.LSE's shape and Float32, out finite and lse free
// of NaN and +Inf.
func checkForward(c *call, q, out, lse *Tensor) error {
	p := c.prob
	want := append([]int(nil), q.Shape...)
	want[len(want)-1] = p.Dv
	if err := out.check("out"); err != nil {
		return err
	}
	if out.Layout != q.Layout || !slices.Equal(out.Shape, want) {
		return backend.Errorf(backend.ErrShape, "out of shape %v in %v: want the output's, %v in %v", out.Shape, out.Layout, want, q.Layout)
	}
	if err := lse.check("lse"); err != nil {
		return err
	}
	wantL := []int{p.B, p.H, p.Nq}[4-c.rank:]
	if p.Packed != nil {
		wantL = []int{p.H, p.TotalQ()}
	}
	if lse.DType != Float32 || !slices.Equal(lse.Shape, wantL) {
		return backend.Errorf(backend.ErrShape, "lse of shape %v in %v: want Result.LSE's, %v in Float32", lse.Shape, lse.DType, wantL)
	}
	if i, x := firstBad(out, false); i >= 0 {
		return backend.Errorf(backend.ErrNonFinite, "out of shape %v holds %v at %v", out.Shape, x, unravel(i, out.Shape))
	}
	for i, x := range lse.Float32s() {
		if x != x || math.IsInf(float64(x), 1) {
			return backend.Errorf(backend.ErrNonFinite, "lse of shape %v holds %v at %v", lse.Shape, x, unravel(i, lse.Shape))
		}
	}
	return nil
}

// vFromKGrad is attentionGrad with V from K (Options.VFromK: V is K's
// first Dv columns, MLA's latent cache): the gradients of V as a tensor
// of its own, computed in float32, then V's added into K's on the
// columns they share, and rounded once into K's dtype; Grads.DV is nil.
func vFromKGrad(ctx context.Context, be backend.Backend, q, k, v, out, lse, dOut *Tensor, opts *Options, dBias bool) (*Grads, error) {
	view, err := vFromK(k, v, opts.VFromK)
	if err != nil {
		return nil, err
	}
	if k == nil {
		return nil, backend.Errorf(backend.ErrShape, "K is nil")
	}
	vd, err := view.Contiguous()
	if err != nil {
		return nil, err
	}
	kd := k
	if k.DType != Float32 || !k.isDense() {
		if kd, err = k.Convert(Float32); err != nil { // the sums in float32
			return nil, err
		}
	}
	if vd.DType != Float32 {
		if vd, err = vd.Convert(Float32); err != nil {
			return nil, err
		}
	}
	o := *opts
	o.VFromK = 0
	g, err := attentionGrad(ctx, be, q, kd, vd, out, lse, dOut, &GradOptions{Options: &o, DBias: dBias})
	if err != nil {
		return nil, err
	}
	d, dv := k.Shape[len(k.Shape)-1], opts.VFromK
	dk, dvs := g.DK.Float32s(), g.DV.Float32s()
	for r := range len(dk) / d {
		for c, x := range dvs[r*dv : (r+1)*dv] {
			dk[r*d+c] += x
		}
	}
	g.DK = &Tensor{Shape: append([]int(nil), k.Shape...), Layout: k.Layout, Data: dk}
	if k.DType != Float32 {
		if g.DK, err = g.DK.Convert(k.DType); err != nil {
			return nil, err
		}
	}
	g.DV = nil
	return g, nil
}
