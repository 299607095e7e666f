package kernels

import (
	"context"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/internal/softmax"
)

// Tree is a speculative draft's tree over the last N positions of each
// sequence of a cache (AttendOptions.Tree): the draft tokens, in
// topological order, verified in one Attend (EAGLE, Medusa, multi-token
// prediction). Query i of the N sees every key before the draft and, of
// the draft's keys, those j with Keep[i][j]: its ancestors and itself.
//
//	Keep[(b·N + i)·N + j]    draft row i of sequence b sees draft row j
//
// B is 1 (one tree for every sequence) or the batch. Keep[i][i] must be
// set and Keep[i][j] only for j ≤ i (a row's ancestors come before it);
// anything else is refused (ErrShape, naming the sequence, row and
// entry) before any work.
type Tree struct {
	B, N int
	Keep []bool
}

// Check checks t for an attention of b sequences of nq queries each, as
// Attend and Attention do before any work: its sizes, and its rows (each
// sees itself, none a later row), an error wrapping backend.ErrShape
// naming the sequence, row and entry otherwise.
func (t *Tree) Check(b, nq int) error {
	switch {
	case t.N != nq:
		return backend.Errorf(backend.ErrShape, "a tree of %d draft rows for %d queries: want one a query", t.N, nq)
	case t.B != 1 && t.B != b:
		return backend.Errorf(backend.ErrShape, "a tree for %d sequences over %d: want 1 (one for all) or %d", t.B, b, b)
	case len(t.Keep) != t.B*t.N*t.N:
		return backend.Errorf(backend.ErrShape, "a tree of B=%d, N=%d holds %d entries: want %d", t.B, t.N, len(t.Keep), t.B*t.N*t.N)
	}
	for s := range t.B {
		for i := range t.N {
			row := t.Keep[(s*t.N+i)*t.N:][:t.N]
			if !row[i] {
				return backend.Errorf(backend.ErrShape, "tree of sequence %d: draft row %d does not see itself (entry [%d][%d] is false)", s, i, i, i)
			}
			for j := i + 1; j < t.N; j++ {
				if row[j] {
					return backend.Errorf(backend.ErrShape, "tree of sequence %d: draft row %d sees row %d after it (entry [%d][%d]): a row's ancestors come before it", s, i, j, i, j)
				}
			}
		}
	}
	return nil
}

// attendTree is attend with a tree (AttendOptions.Tree): the draft rows
// attend the keys before the draft, every one of them (one pass over the
// cache for all Nq rows, as a causal chunk reads it), and, apart, the
// draft's own keys under the tree, read back from the cache as stored;
// the two are merged exactly by their LSEs (the sinks, if any, counted
// once, in the first). Causal masking is implied. A window, ALiBi, key
// lengths, a causal offset, index lists and block masks are not taken
// with a tree yet (ErrUnsupported).
func (a *attender) attendTree(ctx context.Context, c *kv, p backend.Problem, q, out, lse *Tensor, opts *AttendOptions) error {
	tr := opts.Tree
	switch {
	case opts.Window != nil || opts.ALiBi != nil || opts.KVLens != nil || opts.CausalOffset != nil || opts.Indices != nil || opts.Blocks != nil:
		return backend.Errorf(backend.ErrUnsupported, "a tree with a window, ALiBi, key lengths, a causal offset, index lists or a block mask: not yet")
	}
	if err := q.check("Q"); err != nil {
		return err
	}
	if err := out.check("out"); err != nil {
		return err
	}
	if len(q.Shape) != 4 || len(out.Shape) != 4 {
		return backend.Errorf(backend.ErrShape, "Q of shape %v and out of shape %v: want rank 4, %s", q.Shape, out.Shape, queryDims(q.Layout))
	}
	b, h, nq, _ := operand.Dims(q.Shape, q.Layout)
	if err := tr.Check(b, nq); err != nil {
		return err
	}
	if b != p.B {
		return backend.Errorf(backend.ErrShape, "Q of shape %v for %d sequences", q.Shape, p.B)
	}
	dv := p.Dv
	if dv == 0 {
		dv = p.D
	}
	if ob, oh, on, od := operand.Dims(out.Shape, out.Layout); !out.isDense() || out.Layout != q.Layout || ob != b || oh != h || on != nq || od != dv {
		return backend.Errorf(backend.ErrShape, "out of shape %v in %v, want Q's %v in %v with Dv=%d, dense", out.Shape, out.Layout, q.Shape, q.Layout, dv)
	}
	if lse != nil {
		if err := lse.check("LSE"); err != nil {
			return err
		}
		if !lse.isDense() || lse.DType != Float32 || len(lse.Shape) != 3 || lse.Shape[0] != b || lse.Shape[1] != h || lse.Shape[2] != nq {
			return backend.Errorf(backend.ErrShape, "LSE of shape %v, %v: want float32 [%d, %d, %d], dense", lse.Shape, lse.DType, b, h, nq)
		}
	}
	prefix := make([]int, b)
	for s := range b {
		n := p.Nk
		if p.KVLens != nil {
			n = p.KVLens[s]
		}
		if n < nq {
			return backend.Errorf(backend.ErrShape, "a tree of %d draft rows over sequence %d of %d keys: append the draft first", nq, s, n)
		}
		prefix[s] = n - nq
	}
	// The keys before the draft: every draft row sees all of them.
	outA, err := NewTensor(q.Layout, outShape(q, dv)...)
	if err != nil {
		return err
	}
	lseA, err := NewTensor(BHND, b, h, nq)
	if err != nil {
		return err
	}
	before := *opts
	before.Tree, before.Causal, before.KVLens = nil, false, prefix
	if err := a.attend(ctx, c, p, q, outA, lseA, &before); err != nil {
		return err
	}
	// The draft's keys under the tree.
	kd, vd, err := c.draftRows(p, prefix, nq, q.Layout)
	if err != nil {
		return err
	}
	f32 := Float32
	res, err := Attention(ctx, c.be, q, kd, vd, &Options{Scale: opts.Scale, Softcap: opts.Softcap, LSE: true, OutDType: &f32,
		AllowNonFinite: opts.AllowNonFinite, Mask: &Mask{Shape: []int{tr.B, 1, nq, nq}, Keep: tr.Keep}})
	if err != nil {
		return err
	}
	// The two merged by their LSEs (softmax.MergeOutputs) into outA, then stored
	// in out's dtype.
	for s := range b {
		for hh := range h {
			for i := range nq {
				at := (s*h+hh)*nq + i
				o := rowAt(q.Layout, b, h, nq, dv, s, hh, i)
				l := softmax.MergeOutputs(outA.Data[o:o+dv], []softmax.Part{{M: float64(lseA.Data[at]), L: 1, Acc: outA.Data[o : o+dv]}, {M: float64(res.LSE.Data[at]), L: 1, Acc: res.Out.Data[o : o+dv]}})
				if lse != nil {
					lse.Data[at] = float32(l)
				}
			}
		}
	}
	if out.DType.Half() {
		for i, x := range outA.Data[:len(out.Bits)] {
			out.Bits[i] = out.DType.Encode(out.DType.Saturate(x))
		}
		return nil
	}
	copy(out.Data, outA.Data)
	return nil
}

// outShape is the shape of the output of queries q with head dim dv.
func outShape(q *Tensor, dv int) []int {
	s := append([]int(nil), q.Shape...)
	s[3] = dv
	return s
}

// rowAt is where row i of head h of sequence s starts in a dense rank-4
// tensor of b sequences, heads heads and n rows of dim values, in
// layout l: [B, N, H, dim] (BNHD) or [B, H, N, dim].
func rowAt(l Layout, b, heads, n, dim, s, h, i int) int {
	if l == BNHD {
		return ((s*n+i)*heads + h) * dim
	}
	return ((s*heads+h)*n + i) * dim
}

// draftRows reads the draft's keys and values back from the cache as
// stored (widened exactly to float32): rows prefix[s] … prefix[s]+nq−1
// of each sequence s, as [B, nq, KVH, D] (BNHD) or [B, KVH, nq, D]
// tensors, V's Dv wide (V from K: K's first Dv columns). The cache's
// rows lie at its pitch (q8's padded to whole blocks), dense or through
// the block table p.Paged.
func (c *kv) draftRows(p backend.Problem, prefix []int, nq int, layout Layout) (k, v *Tensor, err error) {
	b, kvh := len(prefix), c.cfg.KVHeads
	read := func(buf backend.Buffer, pitch, dim int) (*Tensor, error) {
		rows := p.Nk
		if p.Paged != nil {
			rows = p.Paged.PageSize
		}
		loc := backend.Rows{Strides: backend.TensorStrides(c.cfg.Layout, kvh, rows, pitch), Pages: p.Paged}
		t, err := NewTensor(layout, outShapeDims(layout, b, kvh, nq, dim)...)
		if err != nil {
			return nil, err
		}
		// The rows in the cache's order (a row's heads side by side under
		// BNHD), read a run of adjacent rows at a time: a sequence's draft
		// lies in one run a page (a head and page under BHND).
		type row struct{ at, s, h, i int }
		var order []row
		for s := range b {
			for x := range kvh * nq {
				hh, i := x%kvh, x/kvh
				if c.cfg.Layout != BNHD {
					hh, i = x/nq, x%nq
				}
				order = append(order, row{loc.Offset(s, hh, prefix[s]+i), s, hh, i})
			}
		}
		var stage []float32
		for r0 := 0; r0 < len(order); {
			r1 := r0 + 1
			for r1 < len(order) && order[r1].at == order[r1-1].at+pitch {
				r1++
			}
			stage = grow(stage, (r1-r0)*pitch)
			if err := c.be.Read(stage[:(r1-r0)*pitch], buf, order[r0].at); err != nil {
				return nil, err
			}
			for x, r := range order[r0:r1] {
				copy(t.Data[rowAt(layout, b, kvh, nq, dim, r.s, r.h, r.i):][:dim], stage[x*pitch:x*pitch+dim])
			}
			r0 = r1
		}
		return t, nil
	}
	if k, err = read(c.k, c.cfg.kPitch(), c.cfg.D); err != nil {
		return nil, nil, err
	}
	if c.cfg.vFromK() {
		v, err = read(c.k, c.cfg.kPitch(), c.cfg.dv())
	} else {
		v, err = read(c.v, c.cfg.vPitch(), c.cfg.dv())
	}
	return k, v, err
}

// outShapeDims is the shape of a rank-4 tensor of b sequences, heads
// heads and n rows of dim values in layout l.
func outShapeDims(l Layout, b, heads, n, dim int) []int {
	if l == BNHD {
		return []int{b, n, heads, dim}
	}
	return []int{b, heads, n, dim}
}

// treeMask is opts with its tree (Options.Tree, over tensors) made the
// keep-mask it stands for: [B|1, 1, Nq, Nk], query i seeing keys 0 …
// Nk − Nq − 1 and, of the last Nq, those its tree keeps.
func treeMask(q, k *Tensor, opts *Options) (*Options, error) {
	tr := opts.Tree
	switch {
	case opts.Mask != nil:
		return nil, backend.Errorf(backend.ErrUnsupported, "a tree beside a keep-mask: fold the tree into the mask")
	case opts.Window != nil || opts.ALiBi != nil || opts.KVLens != nil || opts.CausalOffset != nil || opts.Indices != nil || opts.Blocks != nil ||
		opts.CuSeqlensQ != nil || opts.CuSeqlensK != nil || opts.BlockTable != nil:
		return nil, backend.Errorf(backend.ErrUnsupported, "a tree with a window, ALiBi, key lengths, a causal offset, index lists, a block mask, packed or paged sequences: not yet")
	case q == nil || k == nil || len(q.Shape) != 4 || len(k.Shape) != 4:
		return nil, backend.Errorf(backend.ErrShape, "a tree takes rank-4 Q and K")
	}
	b, _, nq, _ := operand.Dims(q.Shape, q.Layout)
	_, _, nk, _ := operand.Dims(k.Shape, k.Layout)
	if err := tr.Check(b, nq); err != nil {
		return nil, err
	}
	if nk < nq {
		return nil, backend.Errorf(backend.ErrShape, "a tree of %d draft rows over %d keys: the draft is the last keys", nq, nk)
	}
	keep := make([]bool, tr.B*nq*nk)
	for s := range tr.B {
		for i := range nq {
			row := keep[(s*nq+i)*nk:][:nk]
			for j := range nk - nq {
				row[j] = true
			}
			copy(row[nk-nq:], tr.Keep[(s*nq+i)*nq:][:nq])
		}
	}
	o := *opts
	o.Tree, o.Mask = nil, &Mask{Shape: []int{tr.B, 1, nq, nk}, Keep: keep}
	return &o, nil
}
