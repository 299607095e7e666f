package shaders

import "fmt"

// lanedecode.wgsl's specialisation, apart from params.go's other kernels.

// LaneDecodeConsts specialises lanedecode.wgsl: WG invocations a
// workgroup, which holds NQ query rows of each of HG query heads that
// share one KV head (R = HG·NQ rows), as T = WG/L teams of L lanes that
// each take KB keys a trip, for head dims D and DV; the operands' storage
// as in FusedConsts. L is a power of two from 2 that divides WG, and it
// needs subgroups (SG) whose every size L divides, which the host
// checks, as the kernel cannot.
type LaneDecodeConsts struct {
	WG, HG, NQ, L, KB, D, DV int
	VR                       int `shaders:"input"` // as FusedConsts.VR
	// KW and VW cap the vec4s of a K and a V unit, a lane's load
	// (laneUnit): 2, 4 or 8 (a q8 or q4 block), or 0 or 1 for a vec4.
	KW            int `shaders:"input"`
	VW            int `shaders:"input"`
	Q, K, V, Bias Elem
	// F16 and SG are modes (see modes): float16 operands as WGSL f16, and
	// a team's sums of its lanes' shares by subgroup shuffles.
	F16, SG bool
}

func (LaneDecodeConsts) Kernel() *Kernel { return &LaneDecode }

// derived of lanedecode.wgsl: R rows; K units of KU vec4s (NKU a row,
// KPL a lane) and V units of VU (NVU, VPL), KU and VU by laneUnit; T
// teams; and the teams' final sums, TP teams a pass through RED vec4s
// (at least a team's, at most laneDecodeRed where a team's fits), LRED
// f32s of p's sums and WM of maxima.
func (c LaneDecodeConsts) derived() []Const {
	d4, dv4 := ceil4(c.D), ceil4(c.DV)
	r, t := c.HG*c.NQ, c.WG/max(c.L, 1)
	ku, vu := c.KUnit(), c.VUnit()
	nku, nvu := d4/ku, dv4/vu
	tp := max(1, min(t-1, laneDecodeRed/(r*dv4)))
	return []Const{{"DV4", dv4}, {"VA", VAlign(c.DV, c.VR)}, {"R", r}, {"T", t},
		{"KU", ku}, {"VU", vu}, {"NKU", nku}, {"NVU", nvu},
		{"KPL", (nku + c.L - 1) / max(c.L, 1)}, {"VPL", (nvu + c.L - 1) / max(c.L, 1)},
		{"TP", tp}, {"RED", tp * r * dv4}, {"LRED", tp * r}, {"WM", t * r}}
}

// laneDecodeRed is the most vec4s of lanedecode.wgsl's teams' sums one
// pass holds where a team's sums fit (4 KiB).
const laneDecodeRed = 256

// KUnit is the vec4s of K one lanedecode.wgsl lane reads a load
// (laneUnit of K). VUnit: of V.
func (c LaneDecodeConsts) KUnit() int { return laneUnit(c.K, c.D, c.KW) }

// VUnit: see KUnit.
func (c LaneDecodeConsts) VUnit() int { return laneUnit(c.V, VAlign(c.DV, c.VR), c.VW) }

// laneUnit is the vec4s of a K or V of head dim d stored as e that a
// lanedecode.wgsl lane reads a load, at most kw (LaneDecodeConsts.KW):
// decodeUnit's for a float or half one; for a q8 or q4 one its whole
// block (8) or part of it (4 or 2, one load of the codes' vec4<u32>,
// writePartLoader), for an fp8 one its 16 values (4); else 1, a vec4 a
// load.
func laneUnit(e Elem, d, kw int) int {
	switch u := LoadUnit(e, d); {
	case e.Blocked() && u == 8 && kw >= 2:
		return min(kw, 8)
	case e == FP8 && u == 4 && kw >= 4:
		return 4
	case e.Quant():
		return 1
	}
	return decodeUnit(e, d, kw)
}

// Registers is about the vec4s one lanedecode.wgsl lane holds through a
// trip: its rows' query units and sums, and the trip's K and V units.
func (c LaneDecodeConsts) Registers() int {
	v := derivedValues(c)
	k, vv := v["KPL"]*v["KU"], v["VPL"]*v["VU"]
	return v["R"]*(k+vv) + c.KB*(k+vv)
}

// WorkgroupBytes is the workgroup memory lanedecode.wgsl declares: the
// teams' maxima, a pass's sums (vec4s) and sums of p.
func (c LaneDecodeConsts) WorkgroupBytes() int {
	v := derivedValues(c)
	return 4*v["WM"] + 16*v["RED"] + 4*v["LRED"]
}

func (c LaneDecodeConsts) check() error {
	if c.L < 2 || c.L&(c.L-1) != 0 || c.WG%c.L != 0 {
		return fmt.Errorf("L = %d lanes a team: want a power of two from 2 that divides WG = %d", c.L, c.WG)
	}
	if !c.SG {
		return fmt.Errorf("L = %d lanes a team sum their shares by subgroup shuffles: SG must be set", c.L)
	}
	return nil
}
