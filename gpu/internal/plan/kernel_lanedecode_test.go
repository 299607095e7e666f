package plan

import (
	"fmt"
	"testing"

	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/gogpu/gputypes"
)

// TestPlanLaneDecode checks lanedecode.wgsl's shapes under the hardware
// plan: for every head dim pair, group, query count, workgroup memory
// and least subgroup size, the kernel only with subgroups and a known
// size of 2 or more, teams of a power of two lanes within the tuning's
// 16, the subgroup size and the head dims' vec4s, heads that divide the
// group in balanced tiles of queries, registers and memory within their
// bounds, constants that every dtype's specialisation accepts, and
// fuseddecode.wgsl where it does not fit (FusedFor); the H200's step
// (32 query heads over 8, D = 128) in teams of 16 with all 4 heads of a
// group, its f16 cache a unit of 8 halves a lane (16 lanes a row), its
// q8 and q4 caches a quarter block a lane, its fp8 one a vec4 a load.
func TestPlanLaneDecode(t *testing.T) {
	hw, _ := Choose("hardware", gputypes.DeviceTypeOther)
	off := hw
	off.Features.subgroups = false
	dims := []int{1, 5, 16, 33, 64, 128, 256, 512}
	generated := map[shaders.LaneDecodeConsts]bool{}
	for _, sg := range []int{0, 1, 4, 8, 32, 64} {
		a := hw.WithSubgroupMin(sg)
		for _, mem := range []int{minWorkgroupStorage, 49152} {
			for _, d := range dims {
				for _, dv := range dims {
					for _, g := range []int{1, 3, 4, 8} {
						for _, nq := range []int{0, 1, 3, 16, 17} {
							c, ok := a.LaneDecodeKernel(mem, d, dv, g, nq)
							where := fmt.Sprintf("subgroups of %d: LaneDecodeKernel(%d, %d, %d, %d, %d) = %v, %t", sg, mem, d, dv, g, nq, c, ok)
							if _, on := off.WithSubgroupMin(sg).LaneDecodeKernel(mem, d, dv, g, nq); on {
								t.Fatalf("%s; and without subgroups too", where)
							}
							if !ok {
								if sg >= 2 && nq >= 1 && nq <= decodeMaxNq && d <= 128 && dv <= 128 && d*dv > 1 {
									t.Errorf("%s: want a shape", where)
								}
								if k := a.FusedFor(mem, FusedShape{nq: nq, d: d, dv: dv, g: g}); k != nil {
									if _, lane := k.(kernelLaneDecode); lane {
										t.Errorf("%s, but FusedFor runs %v", where, k)
									}
								}
								continue
							}
							if sg < 2 || nq < 1 || nq > decodeMaxNq {
								t.Fatalf("%s: want none", where)
							}
							if c.lanes < 2 || c.lanes&(c.lanes-1) != 0 || c.lanes > min(decodeLanes, sg, max(CeilDiv(d, 4), CeilDiv(dv, 4))) || DecodeWG%c.lanes != 0 {
								t.Errorf("%s: %d lanes a team", where, c.lanes)
							}
							if g%c.heads != 0 || c.heads*c.rows > laneDecodeRows || c.rows > nq || CeilDiv(nq, CeilDiv(nq, c.rows)) != c.rows {
								t.Errorf("%s: not a tile of the group", where)
							}
							if k, lane := a.FusedFor(mem, FusedShape{nq: nq, d: d, dv: dv, g: g}).(kernelLaneDecode); !lane || k != c {
								t.Errorf("%s, but FusedFor runs %v", where, k)
							}
							for _, e := range []shaders.Elem{shaders.F32, shaders.F16, shaders.Q8, shaders.Q4, shaders.FP8} {
								s := c.Spec(shaders.F32, e, e, shaders.F32).(shaders.LaneDecodeConsts)
								if s.Registers() > laneDecodeRegs || s.WorkgroupBytes() > mem {
									t.Errorf("%s, %v: %d vec4s of registers, %d bytes of workgroup memory", where, e, s.Registers(), s.WorkgroupBytes())
								}
								if !generated[s] {
									generated[s] = true
									if _, err := shaders.LaneDecode.Generate(s); err != nil {
										t.Errorf("%s, %v: %v", where, e, err)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	c, ok := hw.WithSubgroupMin(32).LaneDecodeKernel(49152, 128, 128, 4, 1)
	if !ok || c.lanes != 16 || c.heads != 4 || c.rows != 1 || c.batch != decodeBatch {
		t.Fatalf("the H200's step: %v, %t; want teams of 16, 4 heads, 1 query", c, ok)
	}
	for _, tc := range []struct {
		e      shaders.Elem
		ku, vu int
	}{{shaders.F32, 1, 1}, {shaders.F16, 2, 2}, {shaders.BF16, 2, 2}, {shaders.Q8, 2, 2}, {shaders.Q4, 2, 2}, {shaders.FP8, 1, 1}} {
		s := c.Spec(shaders.F32, tc.e, tc.e, shaders.F32).(shaders.LaneDecodeConsts)
		if s.KUnit() != tc.ku || s.VUnit() != tc.vu {
			t.Errorf("the H200's step, %v: units of %d and %d vec4s, want %d and %d", tc.e, s.KUnit(), s.VUnit(), tc.ku, tc.vu)
		}
	}
}

// TestLaneUnit checks laneUnit: a lane's share of the head dim's vec4s,
// a power of two at most wide for a half operand and at most a block
// for an 8-bit or 4-bit one.
func TestLaneUnit(t *testing.T) {
	for _, tc := range []struct {
		e             shaders.Elem
		d, l, wide, w int
	}{
		{shaders.F16, 128, 16, 4, 2}, {shaders.F16, 128, 8, 4, 4}, {shaders.F16, 128, 4, 4, 4}, {shaders.F16, 128, 4, 2, 2},
		{shaders.F16, 128, 32, 4, 1}, {shaders.F16, 96, 8, 4, 2}, {shaders.F16, 5, 2, 4, 1},
		{shaders.Q8, 128, 4, 4, 8}, {shaders.Q8, 128, 2, 4, 8}, {shaders.Q8, 128, 8, 4, 4}, {shaders.Q4, 128, 16, 4, 2}, {shaders.Q4, 128, 32, 4, 1},
		{shaders.FP8, 128, 8, 4, 4}, {shaders.FP8, 128, 16, 4, 2},
	} {
		if w := laneUnit(tc.e, tc.d, tc.l, tc.wide); w != tc.w {
			t.Errorf("laneUnit(%v, %d, %d, %d) = %d, want %d", tc.e, tc.d, tc.l, tc.wide, w, tc.w)
		}
	}
}
