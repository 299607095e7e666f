package plan

import (
	"fmt"

	"github.com/attn-go/attn/gpu/internal/shaders"
)

// lanedecode.wgsl: the hardware plan's decoding kernel where the device
// has subgroups (FusedFor). No cgo, as kernel.go.

const (
	// decodeLanes is the most lanes a team of lanedecode.wgsl shares one
	// key among (LaneDecodeConsts.L; ATTN_GPU_TUNE=decode.lanes=N; 1:
	// fuseddecode.wgsl instead), within the device's least subgroup size
	// and the head dims' vec4s: 16, so that a 32-wide subgroup holds two
	// teams and a lane at D = 128 holds two vec4s of each query row and
	// sum. A team's score costs each lane log2 L shuffles a row; its
	// registers hold R·(D + Dv)/(4L) vec4s.
	decodeLanes = 16
	// decodeBatch is the keys a team takes a trip, their K and V loads
	// all issued before the first score (LaneDecodeConsts.KB;
	// ATTN_GPU_TUNE=decode.batch=N), and its rows rescaled once.
	decodeBatch = 2
	// laneDecodeRegs bounds the vec4s a lane holds through a trip
	// (LaneDecodeConsts.Registers): 48, 192 of the 255 registers an
	// NVIDIA thread may have, so that a workgroup of 256 keeps two a
	// compute unit at least.
	laneDecodeRegs = 48
	// laneDecodeRows caps a workgroup's query rows (R): the kernel writes
	// each row's scores and sums out for each key of a trip, so its code
	// grows with R·KB, and lavapipe (LLVM) compiles 12 rows × 2 keys in
	// seconds, near the Go fuzzer's 10 s an input on CI's 2 cores. A
	// speculative step of 4 queries over a group of 4 takes two
	// workgroups, each reading the keys once.
	laneDecodeRows = 8
)

// kernelLaneDecode is lanedecode.wgsl: wg invocations a workgroup in
// teams of lanes, batch keys a team a trip, heads query heads of one KV
// head × rows queries of each, head dims d, dv, units of K and V at most
// wide vec4s a load; f16 as feat says.
type kernelLaneDecode struct {
	wg, lanes, batch int
	heads, rows      int
	d, dv            int
	wide             int
	feat             KernelFeatures
}

// consts is the kernel's specialisation for K and V stored as k and v.
func (c kernelLaneDecode) consts(k, v shaders.Elem) shaders.LaneDecodeConsts {
	return shaders.LaneDecodeConsts{WG: c.wg, HG: c.heads, NQ: c.rows, L: c.lanes, KB: c.batch, D: c.d, DV: c.dv,
		KW: laneUnit(k, c.d, c.lanes, c.wide), VW: laneUnit(v, c.dv, c.lanes, c.wide), K: k, V: v, SG: c.lanes > 1}
}

func (c kernelLaneDecode) Spec(q, k, v, bias shaders.Elem) shaders.Spec {
	s := c.consts(k, v)
	s.Q, s.Bias, s.F16 = q, bias, usesF16(c.feat.f16, q, k, v, bias)
	return s
}

func (c kernelLaneDecode) TileRows() int { return c.rows }
func (c kernelLaneDecode) Heads() int    { return c.heads }

// Keys: a trip's keys (KB a team) a tile; a split unbounded, as the
// hardware plan has no loop cap.
func (c kernelLaneDecode) Keys() (tile, chunk int) { return c.batch * c.wg / c.lanes, Unbounded }
func (c kernelLaneDecode) WidensQ() bool           { return false }
func (c kernelLaneDecode) String() string {
	return fmt.Sprintf("lanedecode %d×%d, %d lanes a key, %d keys a trip", c.heads, c.rows, c.lanes, c.batch)
}

// Splitting is fuseddecode.wgsl's.
func (c kernelLaneDecode) Splitting(a AdapterPlan) (target, minSplit, parts int) {
	return kernelDecode{}.Splitting(a)
}

// laneUnit is the KW (VW) of lanedecode.wgsl for an operand stored as e
// with head dim d shared by l lanes: the vec4s of a lane's share of a
// row (a power of two), so that every lane of a team loads, at most wide
// for a half one and a block (8) for an 8-bit or 4-bit one, which the
// shaders read as much of a block as that allows (shaders' laneUnit).
func laneUnit(e shaders.Elem, d, l, wide int) int {
	most := wide
	if e.Quant() {
		most = 8
	}
	kw, share := 1, CeilDiv(d, 4)/l
	for 2*kw <= min(share, most) {
		kw *= 2
	}
	return kw
}

// LaneDecodeKernel is lanedecode.wgsl as plan a runs a step of at most nq
// queries a sequence, g query heads a KV head and head dims d, dv on mem
// bytes of workgroup memory: teams of the tuning's lanes, within the
// device's least subgroup size and the head dims' vec4s, holding the
// most heads of the group (a divisor of g), then the queries of each in
// balanced tiles (groupTiles), at most laneDecodeRows rows whose
// registers keep within laneDecodeRegs. ok is false without subgroups,
// for lanes below 2 (the tuning's 1 or a subgroup size the plan does not
// know), for more than decodeMaxNq queries, and where no shape fits.
func (a AdapterPlan) LaneDecodeKernel(mem, d, dv, g, nq int) (kernelLaneDecode, bool) {
	l := 1
	for 2*l <= min(a.Tune.decodeLanes, a.subgroupMin, max(CeilDiv(d, 4), CeilDiv(dv, 4))) {
		l *= 2
	}
	wg := a.Tune.decodeWG
	if !a.Features.subgroups || l < 2 || wg%l != 0 || nq < 1 || nq > decodeMaxNq || g < 1 {
		return kernelLaneDecode{}, false
	}
	var c kernelLaneDecode
	if !groupTiles(g, nq, min(a.Tune.decodeRows, wg, laneDecodeRows), func(hg, rows int) bool {
		c = kernelLaneDecode{wg: wg, lanes: l, batch: a.Tune.decodeBatch, heads: hg, rows: rows, d: d, dv: dv, wide: a.Tune.decodeWide, feat: a.Features}
		s := c.consts(shaders.F32, shaders.F32)
		return s.Registers() <= laneDecodeRegs && s.WorkgroupBytes() <= mem && shaders.Check(s) == nil
	}) {
		return kernelLaneDecode{}, false
	}
	return c, true
}

// laneDecodeLoops bounds the loop iterations one invocation of
// lanedecode.wgsl runs over keys keys (its header's count): the trips,
// each row's maximum over the teams, and the passes adding the teams'
// sums.
func laneDecodeLoops(c kernelLaneDecode, keys int) int {
	v := derivedOf(c.consts(shaders.F32, shaders.F32))
	t, tp := v["T"], v["TP"]
	passes := CeilDiv(t-1, tp)
	return CeilDiv(keys, c.batch*t) + v["R"]*t + passes*(1+tp)
}
