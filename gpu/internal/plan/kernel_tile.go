package plan

import (
	"fmt"

	"github.com/attn-go/attn/gpu/internal/shaders"
)

// fusedtile.wgsl: the hardware plan's prefill kernel past head dims of
// LoopPrefillMaxD where its tiles fit (PrefillKernel). No cgo, as
// kernel.go.

// The hardware plan's prefill kernel, fusedtile.wgsl (tileKernel):
// tileWG invocations a workgroup, at most tileMaxRows query rows and
// tileMaxKeys keys a tile, register blocks of at most tileMaxReg
// vec4s (an invocation's output sums, and its block of scores).
const (
	tileWG      = 128
	tileMaxRows = 64
	tileMaxKeys = 32
	tileMaxReg  = 16
	// tileUnroll is how many iterations of each of fusedtile.wgsl's loops
	// with a constant trip count one trip writes out (FusedTileConsts.UN).
	// wgpu-native 27 bounds every loop with a counter (naga's loop
	// bounding) that keeps the driver from unrolling it. Four a trip, an
	// H100 runs f32 prefill at D = 64 and 128 faster than with the
	// loops, about as fast as 32 a trip and as wgpu-native 0.17, which
	// bounds no loop, with the loops as loops (docs/gpu.md, Tuning).
	tileUnroll = 4
	// tileAhead is the most vec4s of a K or V tile an invocation loads
	// ahead into registers (FusedTileConsts.AH; 1: none): at D = 128 on
	// an H100's 64 × 16 tiles, four of each, 32 registers. A tile's
	// loads waited for at once after each barrier left the workgroup
	// idle for a device-memory round trip a tile, which the few
	// workgroups a compute unit holds (48 KiB of workgroup memory each)
	// cannot cover; FlashAttention-2 loads the next tile while it
	// computes on this one for the same reason. Not yet timed on a GPU
	// (bench/gpu-hw.sh's prefill-ahead sweep sets tile.ahead=1 beside it).
	tileAhead = 8
)

// kernelTile is fusedtile.wgsl shaped as tile says (its head dims
// included; its operands' dtypes are spec's), its splits unbounded; feat
// says whether it widens float16 operands as WGSL f16 and whether each
// row's key groups meet by subgroup shuffles (subgroups and
// tileSubgroups both on, and the groups, sgMin the device's least
// subgroup size, within one subgroup: tileShuffles).
type kernelTile struct {
	tile  shaders.FusedTileConsts
	feat  KernelFeatures
	sgMin int
}

func (c kernelTile) Spec(q, k, v, bias shaders.Elem) shaders.Spec {
	s := c.tile
	s.Q, s.K, s.V, s.Bias, s.F16 = q, k, v, bias, usesF16(c.feat.f16, q, k, v, bias)
	s.SG = c.feat.subgroups && c.feat.tileSubgroups && tileShuffles(c.tile, c.sgMin)
	return s
}

// tileShuffles says whether the NKG invocations that share a row of t
// can meet by shuffles on a device whose subgroups hold at least sgMin
// invocations: NKG a power of two within sgMin.
func tileShuffles(t shaders.FusedTileConsts, sgMin int) bool {
	nkg := derivedOf(t)["NKG"]
	return nkg&(nkg-1) == 0 && nkg <= sgMin
}

func (c kernelTile) TileRows() int           { return c.tile.BR }
func (c kernelTile) Heads() int              { return 1 }
func (c kernelTile) Keys() (tile, chunk int) { return c.tile.BC, Unbounded }
func (c kernelTile) Splitting(a AdapterPlan) (target, minSplit, parts int) {
	return a.prefillSplitting(c.tile.DV)
}
func (c kernelTile) WidensQ() bool { return false }
func (c kernelTile) String() string {
	return fmt.Sprintf("fusedtile %d rows, %d keys", c.tile.BR, c.tile.BC)
}

// tileKernel is the shape of fusedtile.wgsl's workgroups for head dims
// d, dv on mem bytes of workgroup memory: t.tileWG invocations (tileWG
// by default), the most query rows (up to t.tileRows: tileMaxRows), then
// the largest register block of rows, then the most keys a tile (up to
// t.tileKeys: tileMaxKeys) that fit mem, with each invocation's output
// sums (RM·CN vec4s) and block of scores (RM·RN) within t.tileReg
// (tileMaxReg); ok is false when none fits, and fusedloop.wgsl runs.
// Rows first: each K and V tile staged serves them all. The order is a
// first choice, tuned on hardware (bench/gpu-hw.sh tune sweeps the sizes
// and measures ATTN_GPU_PREFILL=tile beside the plan's choice).
func (t Tuning) tileKernel(mem, d, dv int) (shaders.FusedTileConsts, bool) {
	for br := min(t.tileRows, t.tileWG); br >= 8; br /= 2 {
		for rm := 4; rm >= 1; rm /= 2 {
			nrg := br / rm
			if br%rm != 0 || t.tileWG%nrg != 0 {
				continue
			}
			nkg := t.tileWG / nrg
			for bc := t.tileKeys; bc >= nkg; bc /= 2 {
				c := shaders.FusedTileConsts{WG: t.tileWG, BR: br, BC: bc, RM: rm, RN: bc / nkg, D: d, DV: dv, UN: t.tileUnroll}
				if t.tileAhead > 1 && c.Ahead() <= t.tileAhead {
					c.AH = 1
				}
				cn := CeilDiv(CeilDiv(dv, 4), nkg)
				if bc%nkg != 0 || rm*cn > t.tileReg || rm*c.RN > t.tileReg || c.WorkgroupBytes() > mem || shaders.Check(c) != nil {
					continue
				}
				return c, true
			}
		}
	}
	return shaders.FusedTileConsts{}, false
}
