package gpu

import (
	"fmt"

	"github.com/attn-go/attn/shaders"
)

// fusedloop.wgsl, a query row an invocation and tiles of keys in
// workgroup memory: what runs where no other kernel fits (prefillKernel),
// and the hardware plan's prefill under ATTN_GPU_PREFILL=loop. No cgo,
// as kernel.go.

// fusedMaxK is the keys per tile of fusedloop.wgsl, fewer when workgroup
// memory is short.
const fusedMaxK = 32

// kernelLoop is fusedloop.wgsl with fusedWG invocations a workgroup and
// tiles of tk keys, at most chunk keys a split.
type kernelLoop struct{ d, dv, tk, chunk int }

func (c kernelLoop) spec(q, k, v, bias shaders.Elem) shaders.Spec {
	return shaders.FusedLoopConsts{WG: fusedWG, TK: c.tk, D: c.d, DV: c.dv, Q: q, K: k, V: v, Bias: bias}
}

func (c kernelLoop) tileRows() int           { return fusedWG }
func (c kernelLoop) heads() int              { return 1 }
func (c kernelLoop) keys() (tile, chunk int) { return c.tk, c.chunk }
func (c kernelLoop) splitting(a adapterPlan) (target, minSplit, parts int) {
	return a.prefillSplitting(c.dv)
}
func (c kernelLoop) widensQ() bool  { return false }
func (c kernelLoop) String() string { return fmt.Sprintf("fusedloop %d keys", c.tk) }

// fusedTile returns the keys per tile of fusedloop.wgsl that fit mem bytes
// of workgroup memory for head dims d, dv, and the keys per chunk that
// keep one invocation within the loop cap (unbounded without one); 0, 0
// when no tile fits.
func (a adapterPlan) fusedTile(mem, d, dv int) (tk, chunk int) {
	d4, dv4 := ceilDiv(d, 4), ceilDiv(dv, 4)
	tk = fusedMaxK
	for tk > 0 && tk*(d4+dv4)*16 > mem {
		tk /= 2
	}
	if tk == 0 {
		return 0, 0
	}
	if a.loopCap == 0 {
		return tk, unbounded
	}
	perTile := ceilDiv(tk*d4, fusedWG) + ceilDiv(tk*dv4, fusedWG) + tk*(1+d4+2*dv4) + 2
	tiles := (a.loopCap - d4 - dv4) / perTile
	if tiles < 1 {
		return 0, 0
	}
	return tk, tiles * tk
}
