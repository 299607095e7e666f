//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file holds what the half dtypes add to the ops: the float32
// scratch a half output is computed in and the pack.wgsl dispatches that
// round it into the output's buffer.
//
// The kernels that write O (context.wgsl, fused.wgsl, fusedloop.wgsl,
// merge.wgsl) always write float32. A half O takes two elements a u32,
// and WGSL has no 16-bit store: a kernel writing halves would have to
// read, modify and write a whole word, and two of its invocations can
// own the two halves of one word (one row's last element and the next
// row's first when Dv is odd, or neighbouring heads under BNHD), which
// races. So the op computes O in float32 scratch, chunks and merges
// included, and pack.wgsl, one invocation a word, rounds it into O's
// buffer as its last dispatches (one extra pass over O, which is small
// beside the K and V every row reads).

// packWG is pack.wgsl's workgroup size.
const packWG = 256

// float32Out returns the buffer an op writes its n-element output o into:
// o itself when it is float32, else a float32 scratch that packOut later
// rounds into o. The caller holds b.mu and calls release when done.
func (b *Backend) float32Out(o *buffer, n int) (out *buffer, release func(), err error) {
	if !o.dtype.Half() {
		return o, func() {}, nil
	}
	s, err := b.scratch(n)
	if err != nil {
		return nil, nil, err
	}
	return s, s.free, nil
}

// packOut appends to ds the dispatches that round out, from float32Out,
// into o: none when out is o.
func (b *Backend) packOut(ds []*dispatch, out, o *buffer, n int) ([]*dispatch, error) {
	if out == o {
		return ds, nil
	}
	pk, err := b.packDispatches(out, o, n)
	return append(ds, pk...), err
}

// packDispatches are the pack.wgsl dispatches that store elements [0, n)
// of the float32 src as elements [0, n) of the half dst, rounded to
// nearest even and saturated (backend.DType.Saturate), leaving dst's
// other elements as they are. Each dispatch covers an even number of
// elements whose src window fits one binding and whose words fit one
// grid dimension. The caller holds b.mu.
func (b *Backend) packDispatches(src, dst *buffer, n int) ([]*dispatch, error) {
	o := shaders.F16
	if dst.dtype == backend.BFloat16 {
		o = shaders.BF16
	}
	pipe, err := b.pipeline(shaders.PackConsts{WG: packWG, O: o}, "main")
	if err != nil {
		return nil, err
	}
	alignBytes := max(int(b.lim.MinStorageBufferOffsetAlignment), 4)
	align := alignBytes / 4 // in float32 elements of src and in words of dst alike
	maxBind := int(b.lim.MaxStorageBufferBindingSize)
	per := min((maxBind-alignBytes)/4, 2*packWG*int(b.lim.MaxComputeWorkgroupsPerDimension)) &^ 1
	srcCap, dstCap := int(src.bytes/4), int(dst.bytes/4)
	var ds []*dispatch
	for e0 := 0; e0 < n; e0 += per {
		e1 := min(n, e0+per)
		fw, lw := e0/2, (e1+1)/2 // words [fw, lw); e0 is even
		sw := plan.WindowFor(e0, e1, align, srcCap)
		if sw.N < 4 {
			sw.N = min(4, srcCap-sw.Start)
		}
		ow := plan.WindowFor(fw, lw, align, dstCap)
		if ow.N < 4 {
			ow.N = min(4, dstCap-ow.Start)
		}
		d := newDispatch(pipe)
		d.bind("src", src.buf, src.off+sw.Start*4, sw.N*4)
		d.bind("o", dst.buf, dst.off+ow.Start*4, ow.N*4)
		d.setParams(shaders.PackParams{
			NW: uint32(lw - fw), Lo: uint32(e0 - 2*fw), Hi: uint32(e1 - 2*fw),
			SrcOff: uint32(2*fw - sw.Start), OOff: uint32(fw - ow.Start),
		})
		d.grid = [3]int{plan.CeilDiv(lw-fw, packWG), 1, 1}
		d.cost = float64(e1 - e0)
		ds = append(ds, d)
	}
	return ds, nil
}
