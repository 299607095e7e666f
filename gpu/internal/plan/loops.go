package plan

import (
	"math/bits"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file counts the loop iterations the kernels run, each kernel's
// count written apart from the planners' (which size its chunks), so that
// tests check the planners against them: this package's, and package
// gpu's on a device (its tests that run the hardware plan on lavapipe
// keep to problems within LoopBudget). Nothing but tests calls it.

// fusedLoops bounds the loop iterations one invocation of fusedloop.wgsl
// runs over a chunk of keys, counting every iteration of every loop
// (lavapipe stops an invocation after about 65 535 in all):
//
//	D4 + DV4                          load q, write o
//	+ tiles·(1                        the tile loop
//	  + ⌈TK·D4/WG⌉ + ⌈TK·DV4/WG⌉      stage K and V
//	  + TK·(1 + D4 + 2·DV4))          per key: score, rescale, accumulate
func fusedLoops(tk, d, dv, keys int) int {
	d4, dv4 := CeilDiv(d, 4), CeilDiv(dv, 4)
	tiles := CeilDiv(keys, tk)
	return d4 + dv4 + tiles*(1+CeilDiv(tk*d4, FusedWG)+CeilDiv(tk*dv4, FusedWG)+tk*(1+d4+2*dv4))
}

// decodeLoops bounds the loop iterations one invocation of
// fuseddecode.wgsl runs over a split of keys (its header's count):
//
//	⌈QS/WG⌉                                load the queries
//	+ tiles·(1                             the tile loop (K staged written out)
//	  + SSTEPS·(1 + D4)                    scores
//	  + TK                                 a row's maximum
//	  + SSTEPS                             weights
//	  + ⌈TK/KG⌉)                           P·V (its rows written out)
//	+ KG                                   the key groups' sums
func decodeLoops(t DecodeTile, d, dv, keys int) int {
	v := derivedOf(t.Consts(d, dv))
	d4, r, kg, steps, lpr := v["D4"], v["R"], v["KG"], v["SSTEPS"], v["LPR"]
	tiles := CeilDiv(keys, t.tk)
	perTile := 1 + steps*(2+d4) + CeilDiv(t.tk, lpr) + bits.Len(uint(lpr)) - 1 + CeilDiv(t.tk, kg)
	return CeilDiv(r*d4, t.wg) + tiles*perTile + kg
}

// derivedOf is s's derived constants by name.
func derivedOf(s shaders.Spec) map[string]int {
	v := map[string]int{}
	for _, c := range shaders.Derived(s) {
		v[c.Name] = c.Value
	}
	return v
}

// MergeLoops bounds the loop iterations one invocation of merge.wgsl
// specialised as m runs folding parts partial results of Dv columns (its
// header's count).
func MergeLoops(parts, dv int, m shaders.MergeConsts) int {
	if m.PG > 1 {
		return 2*CeilDiv(parts, m.WG) + CeilDiv(dv, 4*m.L)*(CeilDiv(parts, m.PG*max(m.UN, 1))+m.PG) + 2*bits.Len(uint(m.WG))
	}
	return 2*parts + max(CeilDiv(dv, 4*m.L)*(parts+1), CeilDiv(dv, m.L))
}

// KernelLoops bounds the loop iterations one invocation of the fused
// kernel c runs over keys keys, each kernel's count written apart from
// the planners' (which size its chunk).
func KernelLoops(c FusedKernel, d, dv, keys int) int {
	switch c := c.(type) {
	case kernelDecode:
		return decodeLoops(c.t, d, dv, keys)
	case kernelLaneDecode:
		return laneDecodeLoops(c, keys)
	case kernelRows:
		return keys + 2*c.rows*(CeilDiv(d, 4)+CeilDiv(dv, 4))
	case kernelTile:
		return c.tile.Iterations(keys)
	case KernelLanes:
		// Its share of the keys; for each row the lanes' maxima and sums,
		// and its columns' sums in blocks of at most 16 vec4s.
		dv4 := CeilDiv(dv, 4)
		return CeilDiv(keys, laneWG) + c.hg*c.rows*(2*laneWG+CeilDiv(dv4, 16)*CeilDiv(min(dv4, 16), laneWG)*(laneWG+1))
	case kernelLoop:
		return fusedLoops(c.tk, d, dv, keys)
	}
	return 0
}

// Loops bounds the loop iterations any one invocation runs for p
// under plan a on a device with mem bytes of workgroup memory: the fused
// kernel over its largest chunk, scores over its head-dim chunk, context
// over its key chunk (mmIters a step of MmStep), softmax's normalize over
// its chunks and merge over Dv. The tests that run the hardware plan on
// lavapipe keep to problems where this stays within LoopBudget.
func Loops(a AdapterPlan, p backend.Problem, mem int) int {
	fused := 0
	if c := a.FusedFor(mem, ShapeOf(p)); c != nil {
		_, chunk := c.Keys()
		fused = KernelLoops(c, p.D, p.Dv, min(chunk, p.Nk))
	}
	scores := mmIters * CeilDiv(min(a.MmChunk(), p.D), MmStep)
	context := mmIters * CeilDiv(min(a.MmChunk(), p.Nk), MmStep)
	softmax := CeilDiv(p.Nk, SmWG*SmPer) + SmPer + 64
	return max(fused, scores, context, softmax, p.Dv)
}
