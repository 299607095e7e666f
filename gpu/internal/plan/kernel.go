package plan

import (
	"slices"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file is what Fused asks of its kernel, and the plan's one choice
// of it. Each fused kernel is one type, in a file of its own:
//
//	kernelRows    fused.wgsl, R query rows an invocation (kernel_rows.go)
//	KernelLanes   fused.wgsl with key lanes, to decode (kernel_lanes.go)
//	kernelLoop    fusedloop.wgsl (kernel_loop.go)
//	kernelTile    fusedtile.wgsl (kernel_tile.go)
//	kernelDecode  fuseddecode.wgsl (kernel_decode.go)
//	kernelLaneDecode  lanedecode.wgsl (kernel_lanedecode.go)
//
// It has no cgo so its tests run everywhere.

// FusedKernel is one fused kernel as a plan sized it for one shape of
// problem (FusedFor): its head dims, its workgroups, its splits of the
// keys, and the optional features it uses, all decided with the choice.
// Fused runs any of them the same way, from what these methods say.
type FusedKernel interface {
	// Spec is the kernel's specialisation for operands stored as q, k,
	// v and bias (its head dims and features are the choice's).
	Spec(q, k, v, bias shaders.Elem) shaders.Spec
	// TileRows is the query rows of each of its heads one workgroup
	// covers, Heads the query heads (of one KV head) it covers.
	TileRows() int
	Heads() int
	// Keys is the keys of one tile (a step's keys are cut in whole
	// tiles) and chunk the most keys one split covers: what keeps an
	// invocation within the plan's loop cap, unbounded without one.
	Keys() (tile, chunk int)
	// Splitting is how a step through the kernel splits its keys on
	// plan a (StepPlan's Target, MinSplit and Parts): a decoding kernel
	// wants more workgroups, and smaller, than the others.
	Splitting(a AdapterPlan) (target, minSplit, parts int)
	// WidensQ says Fused widens a half Q into float32 scratch before
	// the kernel reads it (kernel_lanes.go says why).
	WidensQ() bool
	// String names the kernel and its shape, for tests and logs.
	String() string
}

// The fused kernels, checked at compile time.
var (
	_ FusedKernel = kernelRows{}
	_ FusedKernel = KernelLanes{}
	_ FusedKernel = kernelLoop{}
	_ FusedKernel = kernelTile{}
	_ FusedKernel = kernelDecode{}
	_ FusedKernel = kernelLaneDecode{}
)

// FusedShape is everything of a problem that the choice of its fused
// kernel depends on: the most query rows of one sequence, the head
// dims, the query heads of a KV head and the keys.
type FusedShape struct{ nq, d, dv, g, nk int }

// ShapeOf is p's (resolved) FusedShape. p need not be valid
// (FusedSupports does not validate it): a packed p whose CuQ does not
// name B sequences counts Nq rows a sequence, and a p without KV heads
// has a group of 0, which no decoding kernel takes.
func ShapeOf(p backend.Problem) FusedShape {
	nq := 0
	switch pk := p.Packed; {
	case pk != nil && len(pk.CuQ) == p.B+1:
		for b := range p.B {
			nq = max(nq, p.QRows(b))
		}
	case p.B > 0:
		nq = p.Nq
	}
	g := 0
	if p.KVHeads != 0 {
		g = p.Group()
	}
	return FusedShape{nq: nq, d: p.D, dv: p.Dv, g: g, nk: p.Nk}
}

// FusedFor is the fused kernel plan a runs a problem of shape s with on
// mem bytes of workgroup memory, nil when none fits: the one decision
// that both Fused and FusedSupports ask (through package gpu's
// Backend.kernelFor).
// A decoding step runs the plan's decoding kernel where it takes the
// step — fused.wgsl's key lanes on the CPU plan (where cpuDecodes),
// on the hardware plan lanedecode.wgsl where the device has subgroups
// (LaneDecodeKernel), else fuseddecode.wgsl — and PrefillKernel's
// otherwise.
func (a AdapterPlan) FusedFor(mem int, s FusedShape) FusedKernel {
	if !a.Hardware {
		if cpuDecodes(s) {
			if k, ok := a.LaneKernel(mem, s.d, s.dv, s.g, s.nq, s.nk); ok {
				return k
			}
		}
		return a.PrefillKernel(mem, s.d, s.dv)
	}
	if k, ok := a.LaneDecodeKernel(mem, s.d, s.dv, s.g, s.nq); ok {
		return k
	}
	if k, ok := a.decodeFor(mem, s.d, s.dv, s.g, s.nq); ok {
		return k
	}
	return a.PrefillKernel(mem, s.d, s.dv)
}

// PrefillKernel is the kernel plan a runs head dims d, dv with on mem
// bytes of workgroup memory when it does not decode: on the hardware
// plan fusedtile.wgsl where a head dim is wider than LoopPrefillMaxD and
// its tiles fit (a.Prefill, ATTN_GPU_PREFILL, forces either kernel), on
// the CPU plan fused.wgsl where it writes the heads out, elsewhere
// fusedloop.wgsl, its loops over the head dims written out under the
// hardware plan (loopUnroll) and kept as loops under the CPU plan's;
// nil when not even fusedloop.wgsl's tile of one key fits. It depends
// on the head dims alone, and a decoding kernel fits only where it does
// (TestPlanDecode, TestPlanLanes).
func (a AdapterPlan) PrefillKernel(mem, d, dv int) FusedKernel {
	if a.Hardware && a.prefillTile(d, dv) {
		if t, ok := a.Tune.tileKernel(mem, d, dv); ok {
			return kernelTile{tile: t, feat: a.Features, sgMin: a.subgroupMin}
		}
	}
	if rows := a.fusedRows(d, dv); rows > 0 {
		return kernelRows{d: d, dv: dv, rows: rows, f16: a.Features.f16}
	}
	if tk, chunk := a.fusedTile(mem, d, dv); tk > 0 {
		un := 1
		if a.Hardware {
			un = a.Tune.loopUnroll
		}
		return kernelLoop{d: d, dv: dv, tk: tk, chunk: chunk, un: un}
	}
	return nil
}

// prefillTile says whether the hardware plan a runs head dims d, dv's
// prefill through fusedtile.wgsl where its tiles fit.
func (a AdapterPlan) prefillTile(d, dv int) bool {
	switch a.Prefill {
	case PrefillTile:
		return true
	case PrefillLoop:
		return false
	}
	return d > LoopPrefillMaxD || dv > LoopPrefillMaxD
}

// prefillSplitting is how a step of a kernel that does not decode splits
// its keys on plan a for value heads of dv (FusedKernel.Splitting).
func (a AdapterPlan) prefillSplitting(dv int) (target, minSplit, parts int) {
	return a.splitTarget(), fusedMinSplit, a.mergeParts(dv)
}

// usesF16 says a kernel that may use WGSL's f16 (f16: the plan's
// feature is on) does for operands stored as q, k, v and bias: where
// one of them is float16.
func usesF16(f16 bool, q, k, v, bias shaders.Elem) bool {
	return f16 && slices.Contains([]shaders.Elem{q, k, v, bias}, shaders.F16)
}
