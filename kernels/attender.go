package kernels

import (
	"cmp"
	"context"
	"slices"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/operand"
)

// attender holds one caller's device buffers for the queries, the
// outputs and the LSE (grown as needed, kept between calls) and its
// block table and lengths.
type attender struct {
	q, o, lse backend.Buffer
	lens      []int
	table     []int
	paged     backend.Paged
	held      []*Seq // the sequences read-locked, each once, by id
	// pages is each sequence's pages in a PagePool.Attend (nil
	// otherwise), for the cascade (cascade.go), and the rest its
	// scratch: the suffix pass's table and lengths, the device buffers
	// of both passes and their host copies.
	pages                  [][]int
	stable, slens          []int
	limit, mark, all       []int
	qg, op, lp, os, ls     backend.Buffer
	hop, hlp, hos, hls, hq []float32
	hqb                    []uint16
	// The device cascade's (cascadeBuffers): the merge's pools of
	// partial LSEs (mk) and outputs (mv), its queries of ones (mq, the
	// first mqOnes of them written), its table and lengths, and the
	// copies' ranges. A buffer a recorded call outgrows is released at
	// once (a Recording keeps it until the work using it has run).
	mk, mv, mq    backend.Buffer
	mqOnes        int
	mtable, mlens []int
	mpaged        backend.Paged
	ranges        []backend.CopyRange
}

// hold read-locks each distinct sequence of seqs once, in the order of
// their ids: every Attend takes its locks in that one order, so that
// Attends over overlapping sequences cannot deadlock with each other or
// with an Append, Truncate or Release (each holds one sequence).
func (a *attender) hold(seqs []*Seq) {
	a.held = append(a.held[:0], seqs...)
	slices.SortFunc(a.held, func(x, y *Seq) int { return cmp.Compare(x.id, y.id) })
	a.held = slices.Compact(a.held)
	for _, s := range a.held {
		s.mu.RLock()
	}
}

// unhold unlocks what hold locked.
func (a *attender) unhold() {
	for _, s := range a.held {
		s.mu.RUnlock()
	}
	clear(a.held) // no sequence kept alive by an idle attender
	a.held = a.held[:0]
}

func (a *attender) release() {
	for _, b := range []backend.Buffer{a.q, a.o, a.lse, a.qg, a.op, a.lp, a.os, a.ls, a.mk, a.mv, a.mq} {
		if b != nil {
			b.Release()
		}
	}
	a.q, a.o, a.lse = nil, nil, nil
	a.qg, a.op, a.lp, a.os, a.ls = nil, nil, nil, nil, nil
	a.mk, a.mv, a.mq, a.mqOnes = nil, nil, nil, 0
}

// buffer returns *buf if it holds n elements of dt, else a new one.
func (a *attender) buffer(be backend.Backend, buf *backend.Buffer, dt DType, n int) (backend.Buffer, error) {
	if b := *buf; b != nil && b.DType() == dt && b.Len() >= n {
		return b, nil
	}
	if *buf != nil {
		(*buf).Release()
		*buf = nil
	}
	b, err := be.Alloc(dt, max(n, 1))
	if err != nil {
		return nil, err
	}
	*buf = b
	return b, nil
}

// attend checks q, out and lse against p (B, KVHeads, Nk, dims, layout,
// key lengths and pages set) and opts, uploads q, runs Fused over the
// cache c and reads O (and the LSE) back.
func (a *attender) attend(ctx context.Context, c *kv, p backend.Problem, q, out, lse *Tensor, opts *AttendOptions) error {
	if opts == nil {
		opts = &AttendOptions{}
	}
	if opts.Tree != nil {
		return a.attendTree(ctx, c, p, q, out, lse, opts)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := q.check("Q"); err != nil {
		return err
	}
	if err := out.check("out"); err != nil {
		return err
	}
	if !out.isDense() || lse != nil && lse.check("LSE") == nil && !lse.isDense() {
		return backend.Errorf(backend.ErrShape, "out of shape %s or the LSE is strided: the outputs must be dense", viewName(out))
	}
	out = out.contiguous() // its own storage, without a tail past its elements
	if q.Layout != c.cfg.Layout {
		return backend.Errorf(backend.ErrShape, "Q of shape %v in layout %v over a cache in layout %v: want Q in the cache's layout, %s",
			q.Shape, q.Layout, c.cfg.Layout, queryDims(c.cfg.Layout))
	}
	if len(q.Shape) != 4 {
		return backend.Errorf(backend.ErrShape, "Q of shape %v (rank %d) in layout %v: want rank 4, %s", q.Shape, len(q.Shape), q.Layout, queryDims(q.Layout))
	}
	b, h, nq, d := operand.Dims(q.Shape, q.Layout)
	if b != p.B || d != p.D || h%p.KVHeads != 0 {
		return backend.Errorf(backend.ErrShape, "Q of shape %v for %d sequences of %d KV heads, D=%d: want B=%d, D=%d and a multiple of %d heads",
			q.Shape, p.B, p.KVHeads, p.D, p.B, p.D, p.KVHeads)
	}
	p, err := attendProblem(p, h, nq, opts)
	if err != nil {
		return err
	}
	p.Scales = c.scales
	if ob, oh, on, od := operand.Dims(out.Shape, out.Layout); len(out.Shape) != 4 || out.Layout != q.Layout || ob != b || oh != h || on != nq || od != p.Dv {
		return backend.Errorf(backend.ErrShape, "out of shape %v in %v, want Q's %v in %v with Dv=%d", out.Shape, out.Layout, q.Shape, q.Layout, p.Dv)
	}
	if lse != nil {
		if err := lse.check("LSE"); err != nil {
			return err
		}
		lse = lse.contiguous()
		if lse.DType != Float32 || len(lse.Shape) != 3 || lse.Shape[0] != b || lse.Shape[1] != h || lse.Shape[2] != nq {
			return backend.Errorf(backend.ErrShape, "LSE of shape %v, %v: want float32 [%d, %d, %d]", lse.Shape, lse.DType, b, h, nq)
		}
	}
	if !opts.AllowNonFinite {
		if i, x := firstBad(q, false); i >= 0 {
			return backend.Errorf(backend.ErrNonFinite, "Q of shape %v holds %v at %v", q.Shape, x, unravel(i, q.Shape))
		}
	}
	be := c.be
	if q.DType.Half() && !be.Caps().Half || out.DType.Half() && !be.Caps().Half {
		return backend.Errorf(backend.ErrUnsupported, "half queries or outputs on the %s backend, which stores no halves", be.Name())
	}
	qb, err := a.buffer(be, &a.q, q.DType, p.QLen())
	if err != nil {
		return err
	}
	ob, err := a.buffer(be, &a.o, out.DType, p.OLen())
	if err != nil {
		return err
	}
	var lb backend.Buffer
	if lse != nil {
		if lb, err = a.buffer(be, &a.lse, Float32, p.LSELen()); err != nil {
			return err
		}
	}
	// A strided q is gathered into the dense buffer: the queries of a
	// decoding step are few, and the buffer is reused.
	if err := writeDense(be, qb, q); err != nil {
		return err
	}
	if p.Paged != nil && a.pages != nil {
		if groups := a.cascadeGroups(a.pages, p.KVLens, nq, p.Paged.PageSize, opts); groups != nil {
			return a.cascade(ctx, c, p, groups, qb, q.contiguous(), out, lse)
		}
	}
	if err := be.Fused(ctx, backend.FusedParams{Problem: p}, qb, c.k, c.v, ob, lb); err != nil {
		return err
	}
	if out.DType.Half() {
		err = be.ReadBits(out.Bits, ob, 0)
	} else {
		err = be.Read(out.Data, ob, 0)
	}
	if err == nil && lse != nil {
		err = be.Read(lse.Data, lb, 0)
	}
	return err
}

// attendProblem completes p (B, KVHeads, Nk, dims, layout, key lengths
// and pages set) for h query heads of nq queries each as opts says, and
// validates it.
func attendProblem(p backend.Problem, h, nq int, opts *AttendOptions) (backend.Problem, error) {
	lens := p.KVLens
	p.H, p.Nq = h, nq
	if err := opts.params().problem(&p); err != nil {
		return p, err
	}
	if p.KVLens == nil {
		p.KVLens = lens
	} else if err := prefixLens(p.KVLens, lens); err != nil {
		return p, err
	}
	if err := p.Validate(); err != nil {
		return p, err
	}
	return p.Resolved(), nil
}

// attendBuffers runs Fused over the cache c for queries, outputs and LSE
// already on its backend: q holding [B, H, Nq, D] (BHND) or [B, Nq, H, D]
// (BNHD) in the cache's layout, out the same with Dv, lse Float32 [B, H,
// Nq] or nil; Fused checks their lengths. It runs on c's backend, or
// records into rec when that is not nil. With an attender (a PagePool's
// call, a.pages set) whose sequences share prefixes it cascades on the
// device (cascadeBuffers).
func (a *attender) attendBuffers(ctx context.Context, rec backend.Recording, c *kv, p backend.Problem, q, out, lse backend.Buffer, heads, nq int, opts *AttendOptions) error {
	if opts == nil {
		opts = &AttendOptions{}
	}
	if opts.Tree != nil {
		return backend.Errorf(backend.ErrUnsupported, "a tree over device buffers (AttendBuffers): not yet; Attend takes it")
	}
	if heads < 1 || heads%p.KVHeads != 0 || nq < 0 {
		return backend.Errorf(backend.ErrShape, "attend %d query heads of %d queries over %d KV heads: want a positive multiple of the KV heads and Nq ≥ 0", heads, nq, p.KVHeads)
	}
	p, err := attendProblem(p, heads, nq, opts)
	if err != nil {
		return err
	}
	p.Scales = c.scales
	_, copier := c.be.(backend.Copier)
	if a != nil && a.pages != nil && p.Paged != nil && copier {
		if groups := a.cascadeGroups(a.pages, p.KVLens, nq, p.Paged.PageSize, opts); groups != nil {
			return a.cascadeBuffers(ctx, rec, c, p, groups, q, out, lse)
		}
	}
	fused := c.be.Fused
	if rec != nil {
		fused = rec.Fused
	}
	return fused(ctx, backend.FusedParams{Problem: p}, q, c.k, c.v, out, lse)
}

// queryDims names the dimensions of a cache's queries in layout l.
func queryDims(l Layout) string {
	if l == BNHD {
		return "[B, Nq, H, D]"
	}
	return "[B, H, Nq, D]"
}

// prefixLens checks the key lengths a cache's Attend was given against
// the sequences' lengths: one a sequence, each in 0 … its length.
func prefixLens(want, have []int) error {
	if len(want) != len(have) {
		return backend.Errorf(backend.ErrShape, "AttendOptions.KVLens: %d key lengths for %d sequences", len(want), len(have))
	}
	for b, n := range want {
		if n < 0 || n > have[b] {
			return backend.Errorf(backend.ErrShape, "AttendOptions.KVLens: sequence %d attends %d keys, want 0 … %d (its length)", b, n, have[b])
		}
	}
	return nil
}

// AttendOptions are the options of a cache's Attend: what every
// attention computes, the fields Options begins with and with their
// meaning, and nothing else, for a cache's attention runs fused over its
// own lengths and pages, with no bias, mask or staged matrices. The
// output dtype is the out tensor's and the LSE is asked for by passing a
// tensor for it. The zero value (or a nil *AttendOptions) is plain
// non-causal attention with scale 1/√D.
type AttendOptions struct {
	// Scale multiplies Q·Kᵀ; 0 means 1/√D.
	Scale float64
	// Causal masks bottom-right at each sequence's own length (at
	// KVLens[b] when set): query i of Nq sits at key position
	// len_b − Nq + i.
	Causal bool
	// CausalOffset, with Causal, puts query i at key position
	// *CausalOffset + i instead; without Causal it is an error.
	CausalOffset *int
	// Window, Softcap, ALiBi and Sinks are Options' sliding window,
	// softcap (a finite float32; 0 is none), per-head ALiBi slopes and
	// per-head sink logits.
	Window  *Window
	Softcap float64
	ALiBi   []float32
	Sinks   []float32
	// KVLens, when set, attends only the first KVLens[b] (at most
	// sequence b's length) keys of sequence b, as if the rest were not
	// there.
	KVLens []int
	// AllowNonFinite skips the check that the queries hold no NaN or
	// infinity (the cache checked its rows as they were appended).
	AllowNonFinite bool
	// Indices, when set, names for each query the positions of the
	// sequence's keys it attends, as Options.Indices does: [B, Heads,
	// Nq, PerRow] over a cache's B sequences.
	Indices *Indices
	// Blocks, when set, is a block-sparse keep-mask over the sequences'
	// query rows and keys, as Options.Blocks is: its key blocks may stop
	// at the longest sequence's length.
	Blocks *BlockMask
	// Tree, when set, is a speculative draft's tree over each
	// sequence's last Nq keys, the draft, appended before Attend (Tree
	// has its layout and rules): query i
	// sees every key before the draft and, of the draft's, its ancestors
	// and itself. Causal masking is implied. It takes no window, ALiBi,
	// key lengths, causal offset, index list or block mask (yet:
	// ErrUnsupported).
	Tree *Tree
}
