package plan

import (
	"slices"

	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file sizes the backward pass's kernels (shaders/backkv.wgsl,
// backq.wgsl, backdelta.wgsl; gpu's Backward). No cgo, as kernel.go.

// BackWG is the invocations a workgroup of each backward kernel: keys
// of backkv.wgsl, query rows of backq.wgsl and backdelta.wgsl.
const BackWG = 64

// backMaxTile is the most query rows backkv.wgsl stages at a time, and
// keys backq.wgsl does.
const backMaxTile = 32

// BackwardPlan is how the backward pass runs head dims D and Dv: TQ
// query rows a tile of backkv.wgsl and at most Rows query rows (of one
// query head) a dispatch of it, TK keys a tile of backq.wgsl and at most
// Keys keys a dispatch of it, and at most Terms terms of each dBias
// element a dispatch of backbias.wgsl (Unbounded without a loop cap).
//
// F16 says the plan's kernels may bind float16 operands as WGSL f16
// arrays (KernelFeatures' f16, as the forward's kernels do): UsesF16
// says whether a kernel with given operands does.
//
// LanesKV and LanesQ are the invocations of backkv.wgsl that share a
// key and of backq.wgsl that share a row (1, or more under the hardware
// plan with subgroups: backLanes).
//
// Under an index list, Entries is the most loop iterations an
// invocation of backidxkv.wgsl or backidxq.wgsl may spend walking its
// list a dispatch (Unbounded without a loop cap): IndexEntries says how
// many entries that is.
type BackwardPlan struct {
	TQ, Rows int
	TK, Keys int
	Terms    int
	Entries  int
	LanesKV  int
	LanesQ   int
	F16      bool
}

// backLaneRegs is the most vec4s of its arrays one invocation of
// backkv.wgsl (a key's K and V rows and their sums: 2·D4 + 2·DV4 at
// one lane a key) or backq.wgsl (a row's q, dO and sums: 2·D4 + DV4)
// should hold: 128 floats, half of what an NVIDIA thread can address,
// where backkv.wgsl at D = 128 would take 512, all spilled.
const backLaneRegs = 32

// backLanes is the lanes a key or row shares under a where one lane
// would hold vec4s of head dims of d4 and dv4 vec4s: 1 but under the
// hardware plan with subgroups, then the fewest (a power of two
// dividing d4 and dv4, within the device's least subgroup size and at
// most 4: 256 invocations) that bring a lane's share within
// backLaneRegs.
func (a AdapterPlan) backLanes(vec4s, d4, dv4 int) int {
	l := 1
	if !a.Hardware || !a.Features.subgroups {
		return l
	}
	for vec4s > backLaneRegs*l && 2*l <= min(4, a.subgroupMin) && d4%(2*l) == 0 && dv4%(2*l) == 0 {
		l *= 2
	}
	return l
}

// UsesF16 says whether a backward kernel reading operands stored as
// elems binds them as f16 arrays under bp: where the plan's f16 is on
// and one of them is float16.
func (bp BackwardPlan) UsesF16(elems ...shaders.Elem) bool {
	return bp.F16 && slices.Contains(elems, shaders.F16)
}

// IdxKV is backidxkv.wgsl's Spec.
func (bp BackwardPlan) IdxKV(d, dv int) shaders.BackIdxKVConsts {
	return shaders.BackIdxKVConsts{WG: BackWG, D: d, DV: dv}
}

// IdxQ is backidxq.wgsl's Spec.
func (bp BackwardPlan) IdxQ(d, dv int) shaders.BackIdxQConsts {
	return shaders.BackIdxQConsts{WG: BackWG, D: d, DV: dv}
}

// IndexEntries is the most entries of its list an invocation of
// backidxkv.wgsl (kv: each entry a loop over the g query heads of its
// group, counted with it) and of backidxq.wgsl (q: one iteration an
// entry) walks a dispatch under bp, at least 1.
func (bp BackwardPlan) IndexEntries(g int) (kv, q int) {
	if bp.Entries == Unbounded {
		return Unbounded, Unbounded
	}
	return max(1, bp.Entries/(1+g)), max(1, bp.Entries)
}

// Bias is backbias.wgsl's Spec.
func (bp BackwardPlan) Bias(d, dv int) shaders.BackBiasConsts {
	return shaders.BackBiasConsts{WG: BackWG, D: d, DV: dv}
}

// KV is backkv.wgsl's Spec under bp.
func (bp BackwardPlan) KV(d, dv int) shaders.BackKVConsts {
	l := max(bp.LanesKV, 1)
	return shaders.BackKVConsts{WG: BackWG * l, TQ: bp.TQ, D: d, DV: dv, L: l, SG: l > 1}
}

// Q is backq.wgsl's Spec under bp.
func (bp BackwardPlan) Q(d, dv int) shaders.BackQConsts {
	l := max(bp.LanesQ, 1)
	return shaders.BackQConsts{WG: BackWG * l, TK: bp.TK, D: d, DV: dv, L: l, SG: l > 1}
}

// Backward plans the backward pass of head dims d, dv on mem bytes of
// workgroup memory: the largest tiles (up to backMaxTile) that fit it,
// and under a loop cap the rows and keys a dispatch may take so that no
// invocation loops past it (counting every loop of backkv.wgsl and
// backq.wgsl, nested ones for each of their iterations, staging and
// skipped tiles included). ok is false when no tile fits.
func (a AdapterPlan) Backward(mem, d, dv int) (bp BackwardPlan, ok bool) {
	d4, dv4 := CeilDiv(d, 4), CeilDiv(dv, 4)
	tile := func(bytes func(int) int) int {
		t := backMaxTile
		for t > 0 && bytes(t) > mem {
			t /= 2
		}
		return t
	}
	bp.TQ = tile(func(t int) int { return shaders.BackKVConsts{WG: BackWG, TQ: t, D: d, DV: dv, L: 1}.WorkgroupBytes() })
	bp.TK = tile(func(t int) int { return shaders.BackQConsts{WG: BackWG, TK: t, D: d, DV: dv, L: 1}.WorkgroupBytes() })
	if bp.TQ == 0 || bp.TK == 0 {
		return bp, false
	}
	bp.F16 = a.Features.f16
	bp.LanesKV, bp.LanesQ = a.backLanes(2*d4+2*dv4, d4, dv4), a.backLanes(2*d4+dv4, d4, dv4)
	if a.loopCap == 0 {
		bp.Rows, bp.Keys, bp.Terms, bp.Entries = Unbounded, Unbounded, Unbounded, Unbounded
		return bp, true
	}
	// The kernels unroll their loops over the head dims: what loops is
	// the tiles, their staging and the rows (keys) of each, counted
	// twice for a margin.
	fixed := 16
	perTile := 2 + CeilDiv(bp.TQ*d4, BackWG) + CeilDiv(bp.TQ*dv4, BackWG) + CeilDiv(bp.TQ, BackWG) + 2*bp.TQ
	bp.Rows = (a.loopCap - fixed) / perTile * bp.TQ
	perTile = 2 + CeilDiv(bp.TK*d4, BackWG) + CeilDiv(bp.TK*dv4, BackWG) + 2*bp.TK
	bp.Keys = (a.loopCap - fixed) / perTile * bp.TK
	// backbias.wgsl loops once a term, the head dims unrolled.
	bp.Terms = (a.loopCap - fixed) / 2
	// The index kernels loop once an entry (and backidxkv.wgsl once
	// more a query head of it), the head dims unrolled.
	bp.Entries = (a.loopCap - fixed) / 2
	return bp, bp.Rows > 0 && bp.Keys > 0
}
