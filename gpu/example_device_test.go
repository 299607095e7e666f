//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"context"
	"math"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
)

// The example of attn inside a GPU program of its own is written once
// for each binding (example_device_*_test.go); its kernels and its check
// are here.

// fillWGSL is the program's own kernel that writes its weights: a
// pseudo-random value in [-0.5, 0.5) from each element's index.
const fillWGSL = `
@group(0) @binding(0) var<storage, read_write> x: array<f32>;

@compute @workgroup_size(64)
fn main(@builtin(global_invocation_id) id: vec3<u32>) {
	if (id.x < arrayLength(&x)) {
		x[id.x] = fract(f32(id.x) * 0.618034) - 0.5;
	}
}`

// sumWGSL is the program's own kernel that consumes attn's output: one
// workgroup sums the bound array into total[0].
const sumWGSL = `
@group(0) @binding(0) var<storage, read> o: array<f32>;
@group(0) @binding(1) var<storage, read_write> total: array<f32>;
var<workgroup> part: array<f32, 64>;

@compute @workgroup_size(64)
fn main(@builtin(local_invocation_index) t: u32) {
	var s = 0.0;
	for (var i = t; i < arrayLength(&o); i += 64u) {
		s += o[i];
	}
	part[t] = s;
	workgroupBarrier();
	for (var w = 32u; w > 0u; w >>= 1u) {
		if (t < w) {
			part[t] += part[t + w];
		}
		workgroupBarrier();
	}
	if (t == 0u) {
		total[0] = part[0];
	}
}`

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

// cpuLayers runs the example's 32 layers on attn's CPU backend, from the
// weights fillWGSL writes (n of them, slots of slot floats), and returns
// the sum of the last output.
func cpuLayers(p backend.Problem, layers int, n uint64, slot int) float32 {
	w := make([]float32, n)
	for i := range w {
		f := float32(i) * 0.618034
		w[i] = f - float32(math.Floor(float64(f))) - 0.5
	}
	c, _ := cpu.New()
	defer c.Close()
	buf := func(off, n int) backend.Buffer {
		x, _ := c.Alloc(backend.Float32, n)
		c.Write(x, 0, w[off:off+n])
		return x
	}
	q := buf(0, p.QLen())
	for l := range layers {
		o, _ := c.Alloc(backend.Float32, p.OLen())
		c.Fused(context.Background(), backend.FusedParams{Problem: p}, q, buf((1+2*l)*slot, p.KLen()), buf((2+2*l)*slot, p.VLen()), o, nil)
		q = o
	}
	out := make([]float32, p.OLen())
	c.Read(out, q, 0)
	var s float32
	for _, v := range out {
		s += v
	}
	return s
}
