package plan

// These tests need no device (kernel.go has no cgo), so they run in
// every build, CGO_ENABLED=0 and -tags nogpu included.

import (
	"fmt"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/gogpu/gputypes"
)

// TestShapeOf checks what the choice of a fused kernel reads of a
// problem: its longest sequence's queries, its group and sizes; and that
// a problem FusedSupports has not validated gives a shape without
// panicking or looping over a batch it does not hold.
func TestShapeOf(t *testing.T) {
	for _, c := range []struct {
		p    backend.Problem
		want FusedShape
	}{
		{backend.Problem{B: 2, H: 8, KVHeads: 2, Nq: 3, Nk: 100, D: 64, Dv: 32}, FusedShape{nq: 3, d: 64, dv: 32, g: 4, nk: 100}},
		{backend.Problem{B: 0, H: 8, KVHeads: 2, Nq: 3, Nk: 100, D: 64, Dv: 64}, FusedShape{nq: 0, d: 64, dv: 64, g: 4, nk: 100}},
		{backend.Problem{B: 3, H: 8, KVHeads: 2, Nq: 40, Nk: 100, D: 64, Dv: 64, Packed: &backend.Packed{CuQ: []int{0, 1, 17, 19}}},
			FusedShape{nq: 16, d: 64, dv: 64, g: 4, nk: 100}},
		// Not valid: CuQ too short, no heads, a batch far larger than memory.
		{backend.Problem{B: 3, H: 8, KVHeads: 2, Nq: 40, Nk: 100, D: 64, Dv: 64, Packed: &backend.Packed{CuQ: []int{0, 1}}},
			FusedShape{nq: 40, d: 64, dv: 64, g: 4, nk: 100}},
		{backend.Problem{B: 1, Nq: 1, Nk: 1, D: 8, Dv: 8}, FusedShape{nq: 1, d: 8, dv: 8, nk: 1}},
		{backend.Problem{B: 1 << 60, H: 1, KVHeads: 1, Nq: 2, Nk: 1, D: 8, Dv: 8}, FusedShape{nq: 2, d: 8, dv: 8, g: 1, nk: 1}},
	} {
		if got := ShapeOf(c.p.Resolved()); got != c.want {
			t.Errorf("shapeOf(%+v) = %+v, want %+v", c.p, got, c.want)
		}
	}
}

// TestPlanLanes checks LaneKernel, the CPU plan's decoding kernel: where
// it fits, so does PrefillKernel's (FusedSupports relies on it, as on
// TestPlanDecode's check of fuseddecode.wgsl), its constants pass the
// kernel's own check, and its splits keep an invocation within the loop
// cap.
func TestPlanLanes(t *testing.T) {
	cpu, _ := Choose("cpu", gputypes.DeviceTypeCPU)
	dims := []int{4, 8, 16, 64, 128, 256, 512, 1024, 4096}
	checked := map[shaders.FusedConsts]bool{}
	for _, mem := range []int{minWorkgroupStorage, 32768, 49152} {
		for _, d := range dims {
			for _, dv := range dims {
				for _, g := range []int{1, 3, 4, 8, 32} {
					for _, nq := range []int{1, 2, 3, 4} {
						for _, nk := range []int{cpuDecodeMinKeys, laneLongKeys, 32768} {
							c, ok := cpu.LaneKernel(mem, d, dv, g, nq, nk)
							if !ok {
								continue
							}
							where := fmt.Sprintf("cpu: laneKernel(%d, %d, %d, %d, %d, %d) = %v", mem, d, dv, g, nq, nk, c)
							if cpu.PrefillKernel(mem, d, dv) == nil {
								t.Errorf("%s, but no prefill kernel fits", where)
							}
							s := c.Spec(shaders.F32, shaders.F32, shaders.F32, shaders.F32).(shaders.FusedConsts)
							if !checked[s] {
								checked[s] = true
								if err := shaders.Check(s); err != nil {
									t.Errorf("%s: %v", where, err)
								}
							}
							if g%c.hg != 0 || c.rows > nq {
								t.Errorf("%s: not a tile of the group", where)
							}
							if _, chunk := c.Keys(); chunk < 1 || KernelLoops(c, d, dv, chunk) > LoopBudget {
								t.Errorf("%s: splits of %d keys run %d loop iterations, more than %d", where, chunk, KernelLoops(c, d, dv, chunk), LoopBudget)
							}
						}
					}
				}
			}
		}
	}
	if len(checked) == 0 {
		t.Error("laneKernel fitted nothing")
	}
}
