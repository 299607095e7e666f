package plan

import (
	"fmt"

	"github.com/attn-go/attn/gpu/internal/shaders"
)

// fused.wgsl with key lanes: the CPU plan's decoding kernel (FusedFor).
// No cgo, as kernel.go.

const (
	// The CPU plan's decoding kernel, fused.wgsl with key lanes
	// (LaneKernel): laneWG invocations a workgroup, each holding all its
	// query rows (heads of one KV head × queries), more than one only
	// while R·(⌈D/4⌉ + ⌈Dv/4⌉) stays within laneUnroll (laneLongUnroll
	// over laneLongKeys keys or more), one while ⌈D/4⌉ + ⌈Dv/4⌉ does
	// within laneMaxUnroll; split, when its steps have too few
	// workgroups, into pieces of at least laneMinKeys keys a lane. 16
	// lanes: a step of 8 heads (MHA) over 256 keys took lavapipe less
	// device time with them than with 32 or with 8 (its lanes' sums at
	// the end cost as much as their keys there), and a step over 4096
	// keys as long with 16 as with 32 (the commit that set it has the
	// measurements).
	laneWG         = 16
	laneUnroll     = 32
	laneLongUnroll = 128
	laneLongKeys   = 2048
	laneMaxUnroll  = 256
	laneMinKeys    = 16
)

// The CPU plan runs fused.wgsl with key lanes (LaneKernel) for a step
// of at most cpuDecodeMaxNq queries a sequence over at least
// cpuDecodeMinKeys keys, with head dims that are multiples of 4 (its
// vec4 loads): a model's decoding step (one token, or a few drafted ones)
// over a cache worth splitting. Elsewhere the row kernels' sequential keys
// cost little, and each specialisation of a decoding kernel costs
// lavapipe's compiler more than one of them: run for every short problem,
// as 702e030 did with fuseddecode.wgsl, it took CI's GPU suite on Mesa
// 25's lavapipe from a cold shader cache from about 12 to 36 minutes, the
// many small problems of the tests each compiling one.
const (
	cpuDecodeMaxNq   = 4
	cpuDecodeMinKeys = 128
)

// cpuDecodes says the CPU plan runs a step of shape s through its
// decoding kernel, fused.wgsl's key lanes.
func cpuDecodes(s FusedShape) bool {
	return s.nq <= cpuDecodeMaxNq && s.nk >= cpuDecodeMinKeys && s.d%4 == 0 && s.dv%4 == 0
}

// KernelLanes is fused.wgsl with key lanes: laneWG invocations a
// workgroup, each over its share of the keys for all of the workgroup's
// query rows, hg query heads of one KV head × rows queries of each
// (R = hg·rows), at most chunk keys a split;
// f16 and subgroups as feat says.
//
// On lavapipe (Mesa 22.3) the compiled kernel widens a half query again
// for every key, though fused.wgsl widens it once before them: 4 times
// the step's time at 32 heads, D = 128. So Fused widens a half Q into
// float32 scratch first (WidensQ), and the kernel reads float32.
type KernelLanes struct {
	d, dv    int
	hg, rows int
	chunk    int
	feat     KernelFeatures
}

// Spec is FusedKernel.Spec: fused.wgsl with laneWG lanes.
func (c KernelLanes) Spec(q, k, v, bias shaders.Elem) shaders.Spec {
	return shaders.FusedConsts{WG: laneWG, R: c.hg * c.rows, D: c.d, DV: c.dv, NQ: c.rows, Q: q, K: k, V: v, Bias: bias,
		F16: usesF16(c.feat.f16, q, k, v, bias), SG: c.feat.subgroups}
}

// TileRows is FusedKernel.TileRows: rows queries of each head.
func (c KernelLanes) TileRows() int { return c.rows }

// Heads is FusedKernel.Heads: hg query heads of one KV head.
func (c KernelLanes) Heads() int { return c.hg }

// Keys is FusedKernel.Keys: a key a tile, chunk keys a split.
func (c KernelLanes) Keys() (tile, chunk int) { return 1, c.chunk }

// WidensQ is FusedKernel.WidensQ: true (see KernelLanes).
func (c KernelLanes) WidensQ() bool { return true }

// String is FusedKernel.String.
func (c KernelLanes) String() string { return fmt.Sprintf("fused lanes %d×%d", c.hg, c.rows) }

// Splitting: pieces of at least laneMinKeys keys a lane.
func (c KernelLanes) Splitting(a AdapterPlan) (target, minSplit, parts int) {
	return a.splitTarget(), laneWG * laneMinKeys, a.mergeParts(c.dv)
}

// LaneKernel is how the CPU plan runs a decoding step of at most nq
// queries a sequence, g query heads a KV head and head dims d, dv on mem
// bytes of workgroup memory: fused.wgsl with key lanes, a workgroup
// holding the most heads of the group (a divisor of g) whose rows
// (heads × nq queries, then balanced tiles of half as many queries …)
// keep R·(⌈d/4⌉ + ⌈dv/4⌉) within laneUnroll, or laneLongUnroll over a
// cache of nk ≥ laneLongKeys keys; ok is false when a row's head dims
// pass laneMaxUnroll, or the lanes' sums do not fit mem.
//
// Each query row a lane holds costs lavapipe's compiler time: Mesa
// 22.3's grows steeply with R·(⌈d/4⌉ + ⌈dv/4⌉), to tens of seconds at
// 256 on a 2-core Xeon, Mesa 25's is several times that (and it takes
// long over fuseddecode.wgsl too), and every dtype mix is a kernel of its
// own; each K and V row a lane loads serves its R rows. At 32 query heads
// over 8 KV heads, D = 128, 4096 keys, a step took far less time with
// R = 2 than with R = 1, and a little less again with R = 4 (float32 and
// float16 K and V alike; the commit that set laneLongUnroll has the
// measurements). So a short cache, whose steps are short, gets the quick
// compile and a long one two rows a lane.
//
// On a CPU-type adapter every load an invocation makes is paid for
// lane by lane, and fuseddecode.wgsl makes many: each score reads its
// query and key from workgroup memory a vec4 at a time, each P·V
// invocation reads every weight of its rows. Here each lane loads a key's
// K and V rows once, a vec4 at a time, straight from k and v, for all
// its rows, whose queries and sums stay in its registers: about
// ⌈d/4⌉ + ⌈dv/4⌉ loads a key, against R·⌈d/4⌉·2 for the scores alone.
func (a AdapterPlan) LaneKernel(mem, d, dv, g, nq, nk int) (KernelLanes, bool) {
	d4, dv4 := CeilDiv(d, 4), CeilDiv(dv, 4)
	unroll := laneUnroll
	if nk >= laneLongKeys {
		unroll = laneLongUnroll
	}
	if nq < 1 || g < 1 || d4+dv4 > laneMaxUnroll || (shaders.FusedConsts{WG: laneWG, R: 1, D: d, DV: dv, NQ: 1}).WorkgroupBytes() > mem {
		return KernelLanes{}, false
	}
	for hg := g; hg >= 1; hg-- {
		if g%hg != 0 {
			continue
		}
		for most := nq; most >= 1; most /= 2 {
			rows := CeilDiv(nq, CeilDiv(nq, most))
			if hg*rows > 1 && hg*rows*(d4+dv4) > unroll {
				continue
			}
			c := KernelLanes{d: d, dv: dv, hg: hg, rows: rows, feat: a.Features}
			fc := shaders.FusedConsts{WG: laneWG, R: hg * rows, D: d, DV: dv, NQ: rows}
			if perLane := a.loopCap - fc.Iterations(0); a.loopCap == 0 {
				c.chunk = Unbounded
			} else if perLane > 0 {
				c.chunk = perLane * laneWG
			} else {
				continue
			}
			return c, true
		}
	}
	return KernelLanes{}, false
}
