//go:build cgo && !nogpu

package gpu

import (
	"context"
	"fmt"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/shaders"
)

// This file runs Backend.Copy: copy.wgsl into a float32 buffer and
// pack.wgsl into a half one, dispatches of a pass that WebGPU orders, so
// that ranges whose words meet (an odd boundary between two half ranges)
// are written one after the other. No copy command is used: a half range
// rarely starts and ends on whole words, and one path for every dtype
// pair keeps the rounding in one place (lib/half.wgsl).

// Copy copies ranges of src into dst on the device (backend.Copier):
// each rounded to dst's dtype as the ops store an output, exact between
// buffers of one dtype (a GPU may flush a float32 subnormal:
// Caps.FlushesSubnormals); between two buffers of one 8-bit dtype the
// bytes as they are (q8: whole blocks, codes and scales), while a copy
// between an 8-bit buffer and one of another dtype is ErrUnsupported
// (CopyQuant quantizes into one: quantcopy.go). Step.Copy records it with the step's other
// work, so that a decoding step's cache appends from the caller's
// buffers wait for nothing. dst and src must lie in different wgpu
// buffers (ErrShape), as WebGPU requires of a written binding.
func (b *Backend) Copy(ctx context.Context, dst, src backend.Buffer, ranges ...backend.CopyRange) error {
	return b.copy(ctx, nil, dst, src, ranges...)
}

// copy is Copy, recorded into st when st is not nil.
func (b *Backend) copy(ctx context.Context, st *Step, dst, src backend.Buffer, ranges ...backend.CopyRange) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	defer func() { st.note("copy", err) }()
	if dst == nil || src == nil {
		return backend.Errorf(backend.ErrShape, "gpu: copy: a nil buffer")
	}
	bufs, err := b.begin(ctx, "copy", arg{"dst", dst, true}, arg{"src", src, false})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	d, s := bufs[0], bufs[1]
	if err := backend.CheckCopy(d.n, s.n, ranges); err != nil {
		return fmt.Errorf("gpu: %w", err)
	}
	if d.dtype.Quantized() || s.dtype.Quantized() {
		ds, err := b.copyQuant(d, s, ranges)
		if err != nil {
			return err
		}
		return b.run(ctx, st, "copy", ds)
	}
	var ds []*dispatch
	for _, r := range ranges {
		more, err := b.copyDispatches(d, r.Dst, s, r.Src, r.N)
		if err != nil {
			return fmt.Errorf("gpu: copy: %w", err)
		}
		ds = append(ds, more...)
	}
	return b.run(ctx, st, "copy", ds)
}

var _ backend.Copier = (*Backend)(nil)

// copyQuant is the dispatches of a copy into or out of an 8-bit buffer:
// copy8.wgsl between two buffers of one 8-bit dtype, bits as they are
// (q8 ranges whole blocks, else ErrShape); a copy between an 8-bit
// buffer and one of another dtype is ErrUnsupported: CopyQuant quantizes
// into an 8-bit buffer, and nothing widens one on the device. The
// caller holds b.mu.
func (b *Backend) copyQuant(d, s *buffer, ranges []backend.CopyRange) ([]*dispatch, error) {
	if d.dtype != s.dtype {
		return nil, backend.Errorf(backend.ErrUnsupported, "gpu: copy from a %v buffer into a %v one: the GPU backend copies 8-bit values only between buffers of one 8-bit dtype (CopyQuant quantizes into one)", s.dtype, d.dtype)
	}
	blk := d.dtype.Block()
	for _, r := range ranges {
		if r.Dst%blk != 0 || r.Src%blk != 0 || r.N%blk != 0 {
			return nil, backend.Errorf(backend.ErrShape, "gpu: copy of %d elements from %d to %d of %v buffers: want whole blocks of %d", r.N, r.Src, r.Dst, d.dtype, blk)
		}
	}
	q8 := 0
	if d.dtype == backend.Q8 {
		q8 = 1
	}
	pipe, err := b.pipeline(shaders.Copy8Consts{WG: packWG, Q8: q8}, "main")
	if err != nil {
		return nil, fmt.Errorf("gpu: copy: %w", err)
	}
	alignBytes := max(int(b.lim.MinStorageBufferOffsetAlignment), 4)
	maxBind := int(b.lim.MaxStorageBufferBindingSize)
	// A chunk's windows fit one binding and its words one grid
	// dimension (fewer than 4 elements a word: q8's 256 in 68).
	slack := plan.QuantSlack(d.dtype, alignBytes)
	per := min(plan.QuantElems(d.dtype, maxBind-slack), 3*packWG*int(b.lim.MaxComputeWorkgroupsPerDimension))
	per = per / plan.Q8Super * plan.Q8Super
	var ds []*dispatch
	for _, r := range ranges {
		for c := 0; c < r.N; c += per {
			n := min(per, r.N-c)
			e0, s0 := r.Dst+c, r.Src+c
			dw := plan.QuantWindow(d.dtype, e0, e0+n, alignBytes, int(d.bytes))
			sw := plan.QuantWindow(s.dtype, s0, s0+n, alignBytes, int(s.bytes))
			lo, hi := plan.QuantSpan(d.dtype, e0, n)
			w0, w1 := (lo-dw.StartByte)/4, (hi-dw.StartByte+3)/4
			dd := newDispatch(pipe)
			dd.bind("src", s.buf, s.off+sw.StartByte, sw.Bytes)
			dd.bind("o", d.buf, d.off+dw.StartByte, dw.Bytes)
			dd.setParams(shaders.Copy8Params{NW: uint32(w1 - w0), OWord: uint32(w0),
				D0: uint32(e0 - dw.Start), S0: uint32(s0 - sw.Start), N: uint32(n)})
			dd.grid = [3]int{plan.CeilDiv(w1-w0, packWG), 1, 1}
			dd.cost = float64(n)
			ds = append(ds, dd)
		}
	}
	return ds, nil
}

// copyDispatches are the dispatches that store elements [s, s+n) of src
// as elements [d, d+n) of dst, rounded to dst's dtype (pack.wgsl into a
// half dst: elements of dst's boundary words outside the range keep their
// values), each within one binding's bytes and one grid dimension. The
// caller holds b.mu.
func (b *Backend) copyDispatches(dst *buffer, d int, src *buffer, s, n int) ([]*dispatch, error) {
	if n == 0 {
		return nil, nil
	}
	var pipe *pipeline
	var err error
	half := dst.dtype.Half()
	if half {
		pipe, err = b.pipeline(shaders.PackConsts{WG: packWG, O: elem(dst), Src: elem(src)}, "main")
	} else {
		pipe, err = b.pipeline(shaders.CopyConsts{WG: packWG, Src: elem(src)}, "main")
	}
	if err != nil {
		return nil, err
	}
	alignBytes := max(int(b.lim.MinStorageBufferOffsetAlignment), 4)
	maxBind := int(b.lim.MaxStorageBufferBindingSize)
	groups := packWG * int(b.lim.MaxComputeWorkgroupsPerDimension)
	if half {
		groups *= 2 // one invocation a word
	}
	// A chunk's windows, rounded out to the alignment, fit one binding;
	// chunks after the first start on an even element of dst.
	per := min((maxBind-2*alignBytes)/4, groups) &^ 1
	var ds []*dispatch
	for e0 := d; e0 < d+n; {
		e1 := min(d+n, (e0+per)&^1)
		if e1 <= e0 {
			e1 = min(d+n, e0+per)
		}
		sa := s + (e0 - d) // the chunk's first element of src
		sw := byteWindow(src, sa, sa+(e1-e0), alignBytes)
		dw := byteWindow(dst, e0, e1, alignBytes)
		dd := newDispatch(pipe)
		dd.bind("src", src.buf, src.off+sw.start, sw.n)
		dd.bind("o", dst.buf, dst.off+dw.start, dw.n)
		srcBase := sw.firstElem(src)
		if half {
			fw, lw := e0/2, (e1+1)/2 // words of dst
			lo := e0 - 2*fw
			dd.setParams(shaders.PackParams{
				NW: uint32(lw - fw), Lo: uint32(lo), Hi: uint32(e1 - 2*fw),
				SrcOff: uint32(sa - srcBase - lo), OOff: uint32(fw - dw.start/4),
			})
			dd.grid = [3]int{plan.CeilDiv(lw-fw, packWG), 1, 1}
		} else {
			dd.setParams(shaders.CopyParams{N: uint32(e1 - e0), SrcOff: uint32(sa - srcBase), OOff: uint32(e0 - dw.start/4)})
			dd.grid = [3]int{plan.CeilDiv(e1-e0, packWG), 1, 1}
		}
		dd.cost = float64(e1 - e0)
		ds = append(ds, dd)
		e0 = e1
	}
	return ds, nil
}

// byteWin is a binding's window of a buffer in bytes from the buffer's
// element 0: it starts on the device's offset alignment.
type byteWin struct{ start, n int }

// byteWindow is the window of x that holds elements [lo, hi): from the
// aligned byte at or below element lo's word to the end of element
// hi−1's word, at least 16 bytes where x has them.
func byteWindow(x *buffer, lo, hi, alignBytes int) byteWin {
	at := func(e int) int { // the byte where element e's word starts
		if x.dtype.Half() {
			return e / 2 * 4
		}
		return e * 4
	}
	start := at(lo) / alignBytes * alignBytes
	end := min(int(x.bytes), max(at(hi-1)+4, start+16))
	return byteWin{start, end - start}
}

// firstElem is the element of x at the window's first byte.
func (w byteWin) firstElem(x *buffer) int {
	if x.dtype.Half() {
		return w.start / 4 * 2
	}
	return w.start / 4
}
