package plan

import (
	"fmt"

	"github.com/attn-go/attn/gpu/internal/shaders"
)

// fusedloop.wgsl, a query row an invocation and tiles of keys in
// workgroup memory: what runs where no other kernel fits (PrefillKernel),
// and the hardware plan's prefill where both head dims are at most
// LoopPrefillMaxD (or under ATTN_GPU_PREFILL=loop). No cgo, as kernel.go.

// fusedMaxK is the keys per tile of fusedloop.wgsl, fewer when workgroup
// memory is short.
const fusedMaxK = 32

// loopUnroll is how many iterations of each of fusedloop.wgsl's loops
// over the head dims one trip writes out (FusedLoopConsts.UN) under the
// hardware plan: all of them up to a head dim of 1024, so that a row's
// query and output sums stay in registers. wgpu-native 27's loops carry
// a bounding counter a driver must keep (0.17's carry none), and as
// loops this kernel runs several times slower on an H100 than written
// out, at D = 64 and 128 (docs/gpu.md, Tuning). The CPU plan keeps the
// loops (1): lavapipe's LLVM unrolls them itself, and compiles the
// longer kernels slower.
const loopUnroll = 256

// kernelLoop is fusedloop.wgsl with FusedWG invocations a workgroup and
// tiles of tk keys, at most chunk keys a split, its loops over the head
// dims written out un iterations a trip.
type kernelLoop struct{ d, dv, tk, chunk, un int }

func (c kernelLoop) Spec(q, k, v, bias shaders.Elem) shaders.Spec {
	return shaders.FusedLoopConsts{WG: FusedWG, TK: c.tk, D: c.d, DV: c.dv, UN: c.un, Q: q, K: k, V: v, Bias: bias}
}

func (c kernelLoop) TileRows() int           { return FusedWG }
func (c kernelLoop) Heads() int              { return 1 }
func (c kernelLoop) Keys() (tile, chunk int) { return c.tk, c.chunk }
func (c kernelLoop) Splitting(a AdapterPlan) (target, minSplit, parts int) {
	return a.prefillSplitting(c.dv)
}
func (c kernelLoop) WidensQ() bool  { return false }
func (c kernelLoop) String() string { return fmt.Sprintf("fusedloop %d keys", c.tk) }

// fusedTile returns the keys per tile of fusedloop.wgsl that fit mem bytes
// of workgroup memory for head dims d, dv, and the keys per chunk that
// keep one invocation within the loop cap (unbounded without one); 0, 0
// when no tile fits.
func (a AdapterPlan) fusedTile(mem, d, dv int) (tk, chunk int) {
	d4, dv4 := CeilDiv(d, 4), CeilDiv(dv, 4)
	tk = fusedMaxK
	for tk > 0 && tk*(d4+dv4)*16 > mem {
		tk /= 2
	}
	if tk == 0 {
		return 0, 0
	}
	if a.loopCap == 0 {
		return tk, Unbounded
	}
	perTile := CeilDiv(tk*d4, FusedWG) + CeilDiv(tk*dv4, FusedWG) + tk*(1+d4+2*dv4) + 2
	tiles := (a.loopCap - d4 - dv4) / perTile
	if tiles < 1 {
		return 0, 0
	}
	return tk, tiles * tk
}
