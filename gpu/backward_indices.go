//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"fmt"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file runs the backward pass under an index list (Problem.Indices):
// after backdelta.wgsl's δ, backidxkv.wgsl sums dK and dV a key an
// invocation over the query rows that name it, and backidxq.wgsl dQ a
// query row an invocation over the keys it names, each walking a list
// the host laid out (plan.BackwardIndexLists: the rows' lists as the
// caller gave them, less −1 and the keys a row's position hides, and
// their inverse, each key's rows ascending) in a fixed order. No sum
// crosses invocations and none has an order a run can change, so the
// same inputs give the same bits; dK and dV of a key no row names keep
// the zeros zero wrote.

// indexDispatches appends the index kernels' dispatches to ds: the
// lists uploaded, then dK and dV, then dQ, each a chunk of its lists'
// entries at a time (the loop cap) and each chunk cut where the
// operands' windows, the grid or the submission's budget say.
func (c *backwardCall) indexDispatches(ds []*dispatch, flags shaders.Flag) ([]*dispatch, error) {
	b, pr := c.b, c.pr
	rows, cols := plan.BackwardIndexLists(pr)
	if rows.Entries() == 0 {
		return ds, nil // no row sees a key it names: dQ, dK and dV stay 0
	}
	var err error
	if c.rowList, err = c.uploadList("rows", rows); err != nil {
		return nil, err
	}
	if c.colList, err = c.uploadList("keys", cols); err != nil {
		return nil, err
	}
	perKV, perQ := c.bp.IndexEntries(pr.Group())
	if n := backwardChunks; n > 0 {
		perKV, perQ = min(perKV, n), min(perQ, n)
	}
	// A workgroup's chunk stays within a submission's budget, so that
	// one tile of keys (rows) always fits a dispatch.
	perKV = max(1, min(perKV, int(b.budget/(float64(plan.BackWG*pr.Group())*c.kvCost()))))
	perQ = max(1, min(perQ, int(b.budget/(plan.BackWG*c.qCost()))))
	lh := uint32(0)
	if pr.Indices.Heads > 1 {
		lh = 1
	}
	if ds, err = c.idxKVDispatches(ds, flags, cols, lh, perKV); err != nil {
		return nil, err
	}
	return c.idxQDispatches(ds, flags, rows, lh, perQ)
}

// kvCost and qCost are the floating-point operations of one entry of
// backidxkv.wgsl (for one query head) and backidxq.wgsl.
func (c *backwardCall) kvCost() float64 { return 4 * float64(c.pr.D+c.pr.Dv) }
func (c *backwardCall) qCost() float64  { return 2 * float64(2*c.pr.D+c.pr.Dv) }

// uploadList writes l's words to a scratch buffer of the call's (freed
// by release), which one binding must hold.
func (c *backwardCall) uploadList(what string, l plan.IndexLists) (*buffer, error) {
	b := c.b
	if n := uint64(len(l.Words)) * 4; n > b.lim.MaxStorageBufferBindingSize {
		return nil, tooLarge("backward", c.pr, fmt.Sprintf("the index list's %s, %d slots and %d entries (%d bytes), exceed the device's %d-byte storage binding",
			what, l.Slots, l.Entries(), n, b.lim.MaxStorageBufferBindingSize))
	}
	x, err := b.pooledScratch(len(l.Words)) // written here, before any kernel reads it
	if err != nil {
		return nil, err
	}
	if err := b.writeWords(x.buf, 0, l.Words); err != nil {
		x.free()
		return nil, err
	}
	return x, nil
}

// bindList binds list x for a dispatch: the words its lists hold.
func bindList(d *dispatch, x *buffer) {
	d.bind("list", x.buf, 0, x.wordBytes())
}

// idxOps are the operands both index kernels read, Q, K, V and dO bound
// as vec4s where their head dims are multiples of 4 (the kernels' Vec4).
func (c *backwardCall) idxOps(q, k, v, dout *shaders.Tensor) []operand {
	ops := c.inputOps(q, k, v, dout)
	for i := range ops {
		hd := c.pr.D
		if i >= 2 {
			hd = c.pr.Dv
		}
		ops[i].vec4 = hd%4 == 0
	}
	return ops
}

// idxKVDispatches appends backidxkv.wgsl's to ds: for each chunk of per
// entries of the keys' lists, one pass over every key, adding to dK and
// dV.
func (c *backwardCall) idxKVDispatches(ds []*dispatch, flags shaders.Flag, l plan.IndexLists, lh uint32, per int) ([]*dispatch, error) {
	b, pr := c.b, c.pr
	spec := c.bp.IdxKV(pr.D, pr.Dv)
	c.idxElems(&spec.Q, &spec.K, &spec.V, &spec.Dout, &spec.F16)
	pipe, err := b.pipeline(spec, "main")
	if err != nil {
		return nil, err
	}
	var prm shaders.BackIdxKVParams
	prm.LD = c.rows()
	ops := append(c.idxOps(&prm.Q, &prm.K, &prm.V, &prm.Dout),
		operand{name: "dk", x: c.dk, t: kTensor(pr), out: true, at: &prm.DK},
		operand{name: "dv", x: c.dv, t: vTensor(pr), out: true, at: &prm.DV})
	g, kvh := pr.Group(), pr.KVHeads
	grid := func(u plan.Unit) [3]int {
		return [3]int{plan.CeilDiv(u.J1-u.J0, plan.BackWG), (u.Bh1 - u.Bh0) / g, 1}
	}
	// A unit's entries, its KV heads' lists over its keys (each key's
	// at most per of them).
	entries := func(u plan.Unit) int {
		n := 0
		for bk := u.Bh0 / g; bk < u.Bh1/g; bk++ {
			bt, kh := bk/kvh, bk%kvh
			j1 := min(u.J1, pr.KVLen(bt))
			if j1 <= u.J0 {
				continue
			}
			s := int(lh)*kh*l.PerHead + kBase(pr, bt)
			n += min(l.Span(s+u.J0, s+j1), per*(j1-u.J0))
		}
		return n
	}
	cost := func(u plan.Unit) float64 { return c.kvCost() * float64(g) * float64(entries(u)) }
	// Every query row of the unit's heads: a key's list may name any.
	units, err := b.plan("backward", pr, plan.Unit{Bh0: 0, Bh1: pr.B * pr.H, I0: 0, I1: pr.Nq, J0: 0, J1: pr.Nk},
		plan.Splitter{HeadAlign: g, RowAlign: max(pr.Nq, 1), KeyAlign: plan.BackWG, SplitKeys: true}, ops, grid, cost)
	if err != nil {
		return nil, err
	}
	chunks := idxChunks{flags: flags, lists: l, lh: lh, per: per, list: c.colList, grid: grid, cost: cost}
	return c.idxChunkDispatches(ds, pipe, ops, units, &prm.BackIdxHead, func() any { return prm }, chunks), nil
}

// idxQDispatches appends backidxq.wgsl's to ds: for each chunk of per
// entries of the rows' lists, one pass over every query row, adding to
// dQ.
func (c *backwardCall) idxQDispatches(ds []*dispatch, flags shaders.Flag, l plan.IndexLists, lh uint32, per int) ([]*dispatch, error) {
	b, pr := c.b, c.pr
	spec := c.bp.IdxQ(pr.D, pr.Dv)
	c.idxElems(&spec.Q, &spec.K, &spec.V, &spec.Dout, &spec.F16)
	pipe, err := b.pipeline(spec, "main")
	if err != nil {
		return nil, err
	}
	var prm shaders.BackIdxQParams
	prm.LD = c.rows()
	ops := append(c.idxOps(&prm.Q, &prm.K, &prm.V, &prm.Dout),
		operand{name: "dq", x: c.dq, t: qTensor(pr), out: true, at: &prm.DQ})
	g := pr.Group()
	grid := func(u plan.Unit) [3]int {
		return [3]int{plan.CeilDiv(u.I1-u.I0, plan.BackWG), u.Bh1 - u.Bh0, 1}
	}
	entries := func(u plan.Unit) int {
		n := 0
		for bh := u.Bh0; bh < u.Bh1; bh++ {
			bt, kh := bh/pr.H, bh%pr.H/g
			i1 := min(u.I1, pr.QRows(bt))
			if i1 <= u.I0 {
				continue
			}
			s := int(lh)*kh*l.PerHead + qBase(pr, bt)
			n += min(l.Span(s+u.I0, s+i1), per*(i1-u.I0))
		}
		return n
	}
	cost := func(u plan.Unit) float64 { return c.qCost() * float64(entries(u)) }
	// Every key of the unit's KV heads: a row's list may name any.
	units, err := b.plan("backward", pr, plan.Unit{Bh0: 0, Bh1: pr.B * pr.H, I0: 0, I1: pr.Nq, J0: 0, J1: pr.Nk},
		plan.Splitter{RowAlign: plan.BackWG}, ops, grid, cost)
	if err != nil {
		return nil, err
	}
	chunks := idxChunks{flags: flags, lists: l, lh: lh, per: per, list: c.rowList, grid: grid, cost: cost}
	return c.idxChunkDispatches(ds, pipe, ops, units, &prm.BackIdxHead, func() any { return prm }, chunks), nil
}

// idxChunks is what an index kernel's passes are cut by: the kernel's
// flags, the lists it walks (list, addressed as lists and lh say) cut
// into chunks of per entries, and each unit's grid and cost.
type idxChunks struct {
	flags shaders.Flag
	lists plan.IndexLists
	lh    uint32
	per   int
	list  *buffer
	grid  func(plan.Unit) [3]int
	cost  func(plan.Unit) float64
}

// idxChunkDispatches appends to ds, for each chunk of the lists' entries
// and each unit, one dispatch of pipe over the unit: its Params the head
// (filled here for the chunk) and the rest of params(), which returns
// the whole Params as they stand.
func (c *backwardCall) idxChunkDispatches(ds []*dispatch, pipe *pipeline, ops []operand, units []plan.Unit, head *shaders.BackIdxHead, params func() any, ch idxChunks) []*dispatch {
	b, pr := c.b, c.pr
	for _, ec := range plan.Chunks(ch.lists.Most, ch.per) {
		for _, u := range units {
			d := b.unitDispatch(pipe, pr, u, &head.Unit, ops)
			head.Scale, head.Softcap, head.Flags, head.Seq = pr.Scale, pr.Softcap, ch.flags, uint32(c.seqAt)
			head.IndexListParams = shaders.IndexListParams{LH: ch.lh, LT: uint32(ch.lists.PerHead), E0: uint32(ec[0]), E1: uint32(ec[1])}
			d.setParams(params())
			c.bindVars(d)
			bindList(d, ch.list)
			d.grid, d.cost = ch.grid(u), ch.cost(u)
			ds = append(ds, d)
		}
	}
	return ds
}

// idxElems sets an index kernel's Spec to the dtypes of Q, K, V and dO
// as stored, and its F16 mode as the plan says (UsesF16).
func (c *backwardCall) idxElems(q, k, v, dout *shaders.Elem, f16 *bool) {
	b := c.bufs
	*q, *k, *v, *dout = elem(b[0]), elem(b[1]), elem(b[2]), elem(b[5])
	*f16 = c.bp.UsesF16(*q, *k, *v, *dout)
}

// qBase and kBase are where batch b's query rows and keys start among
// the lists' slots of one list head (plan.IndexLists).
func qBase(p backend.Problem, b int) int {
	if p.Packed != nil {
		return p.Packed.CuQ[b]
	}
	return b * p.Nq
}

func kBase(p backend.Problem, b int) int {
	if p.Packed != nil && p.Packed.CuK != nil {
		return p.Packed.CuK[b]
	}
	return b * p.Nk
}
