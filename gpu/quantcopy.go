//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"math"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file runs Backend.CopyQuant: quant8.wgsl quantizes float32 or
// half elements into a q8, q4 or fp8 buffer on the device, the CPU's bytes
// (integer arithmetic on float32 bits: see the kernel's header), one
// dispatch a range and binding window, in order, as Copy's. The data
// cannot be looked at before the write without a round trip to the
// host, so a value the buffer cannot hold is stored as NaN and counted
// (backend.QuantCopier says how), never refused.

// quantCost is about the operations quant8.wgsl spends an element, for
// the submission budget.
const quantCost = 64

// CopyQuant copies ranges of the float32 or half buffer src into the
// quantized buffer dst, quantized on the device as the CPU quantizes
// (backend.QuantCopier): the same bytes for the same values, an fp8
// value first divided by its head's scale. What it saturates, and the
// values it stores as NaN (NaN, infinities, into q8 a magnitude of
// backend.Q8Max or more, into q4 one of Q4Max or more: their block,
// codes 0 and scale 0x7e00), it adds to q.Counts.
// Step.CopyQuant records it.
func (b *Backend) CopyQuant(ctx context.Context, dst, src backend.Buffer, q backend.QuantCopy, ranges ...backend.CopyRange) error {
	return b.copyQuantize(ctx, nil, dst, src, q, ranges...)
}

// CopyQuant records b.CopyQuant (see Backend.CopyQuant).
func (s *Step) CopyQuant(ctx context.Context, dst, src backend.Buffer, q backend.QuantCopy, ranges ...backend.CopyRange) error {
	return s.b.copyQuantize(ctx, s, dst, src, q, ranges...)
}

var (
	_ backend.QuantCopier = (*Backend)(nil)
	_ backend.QuantCopier = (*Step)(nil)
)

// copyQuantize is CopyQuant, recorded into st when st is not nil.
func (b *Backend) copyQuantize(ctx context.Context, st *Step, dst, src backend.Buffer, q backend.QuantCopy, ranges ...backend.CopyRange) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	defer func() { st.note("copy", err) }()
	if dst == nil || src == nil {
		return backend.Errorf(backend.ErrShape, "gpu: copy: a nil buffer")
	}
	bufs, err := b.begin(ctx, "copy", arg{"dst", dst, true}, arg{"src", src, false}, arg{"counts", q.Counts, true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	d, s, cnt := bufs[0], bufs[1], bufs[2]
	if err := backend.CheckQuantCopy(d.dtype, s.dtype, d.n, s.n, q, ranges); err != nil {
		return backend.Wrapf(err, "gpu")
	}
	ds, err := b.quantDispatches(d, s, cnt, q, ranges)
	if err != nil {
		return backend.Wrapf(err, "gpu: copy")
	}
	return b.run(ctx, st, "copy", ds)
}

// quantFlags are copy8.wgsl's and quant8.wgsl's Q8 and Q4 for a buffer
// of the quantized dtype t: 1, 0 for Q8, 0, 1 for Q4, 0, 0 for FP8.
func quantFlags(t backend.DType) (q8, q4 int) {
	switch t {
	case backend.Q8:
		return 1, 0
	case backend.Q4:
		return 0, 1
	}
	return 0, 0
}

// quantDispatches are the dispatches of quant8.wgsl that store ranges of
// src into the quantized dst, each within one binding's bytes and one grid
// dimension, adding to cnt (a dummy when nil). The caller holds b.mu.
func (b *Backend) quantDispatches(d, s, cnt *buffer, q backend.QuantCopy, ranges []backend.CopyRange) ([]*dispatch, error) {
	unit := 4 // an invocation a word of fp8 bytes
	if d.dtype.Block() > 1 {
		unit = 2 * backend.Q8Block // an invocation a pair of blocks
	}
	q8, q4 := quantFlags(d.dtype)
	pipe, err := b.pipeline(shaders.Quant8Consts{WG: packWG, Q8: q8, Q4: q4, Src: int(elem(s))}, "main")
	if err != nil {
		return nil, err
	}
	var words []uint32 // the heads' scales, placed beside the Params (record)
	if q.Scales != nil && d.dtype == backend.FP8 {
		if 4*len(q.Scales) > inlineVars {
			return nil, backend.Errorf(backend.ErrTooLarge, "%d scales: at most %d", len(q.Scales), inlineVars/4)
		}
		words = make([]uint32, len(q.Scales))
		for i, f := range q.Scales {
			words[i] = math.Float32bits(f)
		}
	}
	alignBytes := max(int(b.lim.MinStorageBufferOffsetAlignment), 4)
	maxBind := int(b.lim.MaxStorageBufferBindingSize)
	groups := packWG * int(b.lim.MaxComputeWorkgroupsPerDimension)
	// A chunk's windows fit one binding (src's at 4 bytes an element at
	// most, and its alignment) and its units one grid dimension (less
	// one for a start inside a unit); chunks start on superblocks.
	per := min(plan.QuantElems(d.dtype, maxBind-plan.QuantSlack(d.dtype, alignBytes)), (maxBind-2*alignBytes)/4, (groups-1)*unit)
	per = per / plan.Q8Super * plan.Q8Super
	var ds []*dispatch
	for _, r := range ranges {
		for c := 0; c < r.N; c += per {
			n := min(per, r.N-c)
			e0, s0 := r.Dst+c, r.Src+c
			dw := plan.QuantWindow(d.dtype, e0, e0+n, alignBytes, int(d.bytes))
			sw := byteWindow(s, s0, s0+n, alignBytes)
			srcBase := sw.firstElem(s)
			rel := e0 - dw.Start
			u0 := rel / unit
			dd := newDispatch(pipe)
			dd.bind("src", s.buf, s.off+sw.start, sw.n)
			dd.bind("o", d.buf, d.off+dw.StartByte, dw.Bytes)
			if cnt != nil {
				dd.bind("cnt", cnt.buf, cnt.off, 4*backend.CountsLen)
			} else {
				dd.bind("cnt", b.dummyW, 0, 256)
			}
			p := shaders.Quant8Params{NW: uint32((rel+n-1)/unit - u0 + 1), U0: uint32(u0),
				D0: uint32(rel), S0: uint32(s0 - srcBase), N: uint32(n)}
			if words != nil {
				dd.vars = words
				p.Scaled, p.Dim, p.Heads = 1, uint32(q.Dim), uint32(len(words))
				p.HBase = uint32(srcBase % (q.Dim * len(words)))
			} else {
				dd.bind("vars", b.dummyR, 0, 256)
			}
			dd.setParams(p)
			dd.grid = [3]int{plan.CeilDiv(int(p.NW), packWG), 1, 1}
			dd.cost = float64(n) * quantCost
			ds = append(ds, dd)
		}
	}
	return ds, nil
}
