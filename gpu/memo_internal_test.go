//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/attn-go/attn/internal/gputest"
	"github.com/gogpu/gputypes"
)

// TestFusedKernelMemo: kernelFor remembers FusedFor's choices (a
// model's step asks the same question every layer) and answers exactly
// as FusedFor does, for either plan, whichever plan asked first, and for
// problems that differ only in what the choice depends on; FusedSupports
// answers as kernelFor does.
func TestFusedKernelMemo(t *testing.T) {
	b := gputest.Open(t, New)
	mem := int(b.lim.MaxComputeWorkgroupStorageSize)
	probs := []backend.Problem{
		{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: 4096, D: 128, Dv: 128, Causal: true},
		{B: 1, H: 32, KVHeads: 8, Nq: 1, Nk: 100, D: 128, Dv: 128, Causal: true},
		{B: 1, H: 32, KVHeads: 8, Nq: 4, Nk: 4096, D: 128, Dv: 128, Causal: true},
		{B: 1, H: 32, KVHeads: 32, Nq: 1, Nk: 4096, D: 128, Dv: 128},
		{B: 1, H: 8, KVHeads: 8, Nq: 1, Nk: 256, D: 64, Dv: 64, Causal: true},
		{B: 1, H: 8, KVHeads: 8, Nq: 1, Nk: 4096, D: 64, Dv: 64},
		{B: 2, H: 8, KVHeads: 2, Nq: 1024, Nk: 1024, D: 64, Dv: 64},
		{B: 1, H: 4, KVHeads: 4, Nq: 17, Nk: 33, D: 12, Dv: 20},
		{B: 1, H: 3, KVHeads: 1, Nq: 1, Nk: 300, D: 7, Dv: 9},
	}
	cpu, err := plan.Choose("cpu", gputypes.DeviceTypeCPU)
	if err != nil {
		t.Fatal(err)
	}
	hw, err := plan.Choose("hardware", gputypes.DeviceTypeCPU)
	if err != nil {
		t.Fatal(err)
	}
	saved := b.aplan
	defer func() { b.aplan = saved }()
	for round := range 2 {
		for _, a := range []plan.AdapterPlan{cpu, hw, cpu} {
			b.aplan = a
			for _, p := range probs {
				p = p.Resolved()
				want := a.FusedFor(mem, plan.ShapeOf(p))
				got, err := b.kernelFor(p)
				if got != want || (err == nil) != (want != nil) {
					t.Errorf("round %d, plan %v, %+v: kernelFor = %v, %v; fusedFor %v", round, a, p, got, err, want)
				}
				if serr := b.FusedSupports(p); (serr == nil) != (err == nil) {
					t.Errorf("round %d, plan %v, %+v: FusedSupports = %v, kernelFor's error %v", round, a, p, serr, err)
				}
			}
		}
	}
	if len(b.choices.m) == 0 {
		t.Errorf("kernelFor remembered nothing")
	}
}

// TestPipelineMemo: pipeline finds a compiled entry point again by its
// Spec value, the same one its string key names.
func TestPipelineMemo(t *testing.T) {
	b := gputest.Open(t, New)
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, s := range []shaders.Spec{shaders.MergeConsts{WG: 64, L: 4}, shaders.MergeConsts{WG: 64, L: 8}} {
		p1, err := b.pipeline(s, "main")
		if err != nil {
			t.Fatal(err)
		}
		p2, err := b.pipeline(s, "main")
		if err != nil {
			t.Fatal(err)
		}
		if p1 != p2 || b.pipes[s.Kernel().Key(s)+" main"] != p1 {
			t.Errorf("%+v: pipeline gave %p then %p, the string key %p", s, p1, p2, b.pipes[s.Kernel().Key(s)+" main"])
		}
	}
}
