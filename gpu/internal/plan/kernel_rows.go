package plan

import (
	"fmt"

	"github.com/attn-go/attn/gpu/internal/shaders"
)

// fused.wgsl with R query rows an invocation: the CPU plan's kernel for
// the head dims it can write out (PrefillKernel). No cgo, as kernel.go.

const (
	fusedMaxR   = 2   // query rows per invocation of fused.wgsl, at most
	fusedMinR   = 2   // and at least; wider heads run fusedloop.wgsl
	fusedUnroll = 128 // most R·(⌈D/4⌉ + ⌈Dv/4⌉) fused.wgsl is written out for
)

// fusedChunk is the keys per chunk of fused.wgsl. It loops once per key,
// so LoopBudget keys (less a margin for the loops lavapipe's compiler
// might add) would be the most; fewer keep a chunk's K and V in the CPU's
// cache while every query tile of the head reads them: on lavapipe
// (Mesa 22.3, 2 cores), B=1 H=8 D=64, chunks of 4096 and of 2048 keys
// ran alike at N = 4096 and 16384, and faster than chunks of 32704 keys,
// which fell far behind at 16384 (the commit that set it has the
// measurements).
const fusedChunk = 4096

// kernelRows is fused.wgsl with rows query rows an invocation, FusedWG
// invocations a workgroup, one key a tile, fusedChunk keys a split; f16
// says it widens float16 operands as WGSL f16.
type kernelRows struct {
	d, dv, rows int
	f16         bool
}

func (c kernelRows) Spec(q, k, v, bias shaders.Elem) shaders.Spec {
	return shaders.FusedConsts{WG: FusedWG, R: c.rows, D: c.d, DV: c.dv, Q: q, K: k, V: v, Bias: bias, F16: usesF16(c.f16, q, k, v, bias)}
}

func (c kernelRows) TileRows() int           { return FusedWG * c.rows }
func (c kernelRows) Heads() int              { return 1 }
func (c kernelRows) Keys() (tile, chunk int) { return 1, fusedChunk }
func (c kernelRows) Splitting(a AdapterPlan) (target, minSplit, parts int) {
	return a.prefillSplitting(c.dv)
}
func (c kernelRows) WidensQ() bool  { return false }
func (c kernelRows) String() string { return fmt.Sprintf("fused %d rows", c.rows) }

// fusedRows is the query rows per invocation of fused.wgsl for head dims
// d, dv, or 0 when fusedloop.wgsl runs them: always under the hardware
// plan, and under the CPU plan for heads too wide to unroll. fused.wgsl's
// code, and lavapipe's time to compile it, grow as R·(⌈d/4⌉ + ⌈dv/4⌉);
// fusedUnroll bounds that product and fusedMaxR the rows. Each vec4 of K
// and V loaded serves R rows, and loads are what lavapipe pays for; but
// lavapipe compiles a kernel at its first dispatch, on one thread, and
// the compile grows faster than the rows: R = 2 leaves a process's
// first call at D = 64 most of what R = 4 took, for most of R = 4's
// speed at the sizes tests and CI run (docs/gpu.md, "A process's first
// call").
func (a AdapterPlan) fusedRows(d, dv int) int {
	if a.Hardware {
		return 0
	}
	r := fusedMaxR
	for r >= fusedMinR && r*(CeilDiv(d, 4)+CeilDiv(dv, 4)) > fusedUnroll {
		r /= 2
	}
	if r < fusedMinR {
		return 0
	}
	return r
}
