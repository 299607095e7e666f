//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"fmt"
	"testing"

	"github.com/attn-go/attn/gpu/internal/wg"
	"github.com/attn-go/attn/internal/gputest"
)

// dispatchKernels are the kernels BenchmarkDispatch times: one that does
// nothing, one that waits at a barrier, and one that declares workgroup
// memory (which WGSL zero-fills behind a barrier before the body runs),
// as every fused kernel but fused.wgsl's rows does.
var dispatchKernels = []struct{ name, wgsl string }{
	{"empty", `@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
	if (g.x == 0xffffffffu) { o[0] = 1.0; }
}`},
	{"barrier", `@group(0) @binding(0) var<storage, read_write> o: array<f32>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>) {
	workgroupBarrier();
	if (g.x == 0xffffffffu) { o[0] = 1.0; }
}`},
	{"workgroup-memory", `@group(0) @binding(0) var<storage, read_write> o: array<f32>;
var<workgroup> w: array<f32, 1024>;
@compute @workgroup_size(64) fn main(@builtin(global_invocation_id) g: vec3<u32>, @builtin(local_invocation_index) l: u32) {
	if (g.x == 0xffffffffu) { o[0] = w[l]; }
}`},
}

// BenchmarkDispatch is what a dispatch costs the adapter with no work in
// it: 32 dispatches of each kernel in one compute pass, one submission
// and one wait per op, for 1 and 256 workgroups; ns/op is the whole
// submission, µs/dispatch its share a dispatch. empty/roundtrip is one
// dispatch a submission: what a single op waits for at the least. A
// decoding step's kernel and its merge are two such dispatches, and a
// model's step of L layers 2L: this bounds how short a step can be
// (docs/gpu.md, Device time).
//
//	go test -run '^$' -bench Dispatch -count 6 ./gpu
func BenchmarkDispatch(b *testing.B) {
	be := gputest.Open(b, New)
	const perPass = 32
	buf, err := be.dev.CreateBuffer("dispatch bench", 256, wg.UsageStorage)
	if err != nil {
		b.Fatal(err)
	}
	defer buf.Release()
	for _, k := range dispatchKernels {
		pipe, err := be.dev.CreatePipeline(k.name, k.wgsl, "main", []wg.BindingType{wg.BindStorage})
		if err != nil {
			b.Fatal(err)
		}
		bg, err := be.dev.CreateBindGroup(pipe, []wg.Entry{{Buffer: buf, Size: 256}})
		if err != nil {
			b.Fatal(err)
		}
		// Where n is 1, one dispatch of one workgroup a submission: the
		// round trip that bounds a single op's wall time (submit, the
		// device's start, the wait) with no work to hide it.
		for _, c := range []struct {
			groups uint32
			n      int
		}{{1, perPass}, {256, perPass}, {1, 1}} {
			groups, n := c.groups, c.n
			name := fmt.Sprintf("%s/groups=%d", k.name, groups)
			if n == 1 {
				if k.name != "empty" {
					continue
				}
				name = "empty/roundtrip"
			}
			b.Run(name, func(b *testing.B) {
				ds := make([]wg.Dispatch, n)
				for i := range ds {
					ds[i] = wg.Dispatch{Pipeline: pipe, Group: bg, Grid: [3]uint32{groups, 1, 1}}
				}
				for b.Loop() {
					enc, err := be.dev.CreateEncoder()
					if err != nil {
						b.Fatal(err)
					}
					if err := enc.ComputePass(ds); err != nil {
						b.Fatal(err)
					}
					cmd, err := enc.Finish()
					enc.Release()
					if err != nil {
						b.Fatal(err)
					}
					if err := be.dev.Submit(cmd); err != nil {
						b.Fatal(err)
					}
					cmd.Release()
					done, err := be.dev.OnWorkDone()
					if err != nil {
						b.Fatal(err)
					}
					if err := done.Wait(pollSpin); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/dispatch")
			})
		}
		bg.Release()
		pipe.Release()
	}
}
