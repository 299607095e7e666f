package bench

import (
	"math"
	"testing"
)

// setGPUFracs reads a point of attn's GPU backend against the GPU's
// ceilings by its device time where it has one, else by its wall time,
// against the FMA ceiling of its dtype (f16's for f16 where measured),
// and gives nothing to other implementations, to a point that did not
// run or to ceilings not measured.
func TestSetGPUFracs(t *testing.T) {
	ceil := Ceilings{GPUReadGBPS: 100, GPUFMAGFLOPS: 1000, GPUF16GFLOPS: 4000}
	for _, c := range []struct {
		name               string
		impl, dtype        string
		gbps, gflops, gpus float64 // the wall time is 2 ms; gpus 0: no device time
		ceil               Ceilings
		wantBW, wantFMA    float64
	}{
		{"f32 by device time", "attn-gpu", "", 20, 100, 1e-3, ceil, 0.4, 0.2},
		{"f32 by wall time", "attn-gpu", "", 20, 100, 0, ceil, 0.2, 0.1},
		{"f16 against f16's", "attn-gpu", "f16", 20, 400, 1e-3, ceil, 0.4, 0.2},
		{"f16 without f16's", "attn-gpu", "f16", 20, 400, 1e-3, Ceilings{GPUReadGBPS: 100, GPUFMAGFLOPS: 1000}, 0.4, 0.8},
		{"bf16 against f32's", "attn-gpu", "bf16", 20, 400, 1e-3, ceil, 0.4, 0.8},
		{"q8 against f32's", "attn-gpu", "q8", 20, 400, 1e-3, ceil, 0.4, 0.8},
		{"above both", "attn-gpu", "", 80, 1000, 1e-3, ceil, 1.6, 2},
		{"read ceiling only", "attn-gpu", "", 20, 100, 1e-3, Ceilings{GPUReadGBPS: 100}, 0.4, 0},
		{"not measured", "attn-gpu", "", 20, 100, 1e-3, Ceilings{ReadGBPS: 50, FMAGFLOPS: 300}, 0, 0},
		{"the CPU backend", "attn-cpu", "", 20, 100, 0, ceil, 0, 0},
		{"a GPU peer", "torch-cuda-sdpa", "", 20, 100, 1e-3, ceil, 0, 0},
		{"did not run", "attn-gpu", "", 0, 0, 0, ceil, 0, 0},
	} {
		pt := Point{Impl: c.impl, GBPS: c.gbps, GFLOPS: c.gflops, GPUS: c.gpus}
		pt.DType = c.dtype
		if c.gbps > 0 {
			pt.Runs, pt.MedianS = 3, 2e-3
		}
		pt.GPUReadFrac, pt.GPUFMAFrac = 9, 9 // cleared where none applies
		pt.setGPUFracs(c.ceil)
		if !same(pt.GPUReadFrac, c.wantBW) || !same(pt.GPUFMAFrac, c.wantFMA) {
			t.Errorf("%s: of GPU BW %v, of GPU FMA %v; want %v, %v", c.name, pt.GPUReadFrac, pt.GPUFMAFrac, c.wantBW, c.wantFMA)
		}
	}
}

// A point above a GPU ceiling is flagged as one above the host's is:
// by how much, and what may explain it, probe noise last.
func TestGPUCeilingFlag(t *testing.T) {
	for _, c := range []struct {
		name     string
		bw, fma  float64
		dtype    string
		hostRoof float64
		want     string
	}{
		{"below both", 0.9, 0.99, "", 0, ""},
		{"at both", 1, 1, "f16", 0, ""},
		{"past the read", 1.3, 0.2, "", 0, "above GPU BW 1.30×: data in cache or probe noise?"},
		{"past the FMA", 0.5, 1.1, "", 0, "above GPU FMA 1.10×: probe noise?"},
		{"q8 past the f32 FMA", 0.5, 1.2, "q8", 0, "above GPU FMA 1.20×: half arithmetic or probe noise?"},
		{"f16 past both", 2, 1.5, "f16", 0, "above GPU FMA 1.50×, GPU BW 2.00×: data in cache or half arithmetic or probe noise?"},
		{"lavapipe past the host's roof too", 1.5, 0.5, "", 1.2, "above roof 1.20× M, GPU BW 1.50×: data in cache or probe noise?"},
	} {
		pt := Point{GPUReadFrac: c.bw, GPUFMAFrac: c.fma}
		pt.DType = c.dtype
		if c.hostRoof > 0 {
			pt.RooflineFrac, pt.Bound = c.hostRoof, BoundMemory
		}
		if got := pt.ceilingFlag(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if pt.aboveRoof() != (c.want != "") {
			t.Errorf("%s: aboveRoof %v", c.name, pt.aboveRoof())
		}
	}
}

// The GPU's ceilings are each the best of the probes, its note the last
// probe's that has one, and a probe that raises one is a rise.
func TestGPUCeilingsBest(t *testing.T) {
	a := Ceilings{ReadGBPS: 10, GPUReadGBPS: 100, GPUFMAGFLOPS: 1000, GPUNote: "first"}
	b := Ceilings{ReadGBPS: 9, GPUReadGBPS: 90, GPUFMAGFLOPS: 1200, GPUF16GFLOPS: 2000}
	got := a.best(b)
	if want := (Ceilings{ReadGBPS: 10, GPUReadGBPS: 100, GPUFMAGFLOPS: 1200, GPUF16GFLOPS: 2000, GPUNote: "first"}); got != want {
		t.Errorf("best %+v, want %+v", got, want)
	}
	for _, c := range []struct {
		o    Ceilings
		rose bool
	}{
		{Ceilings{GPUReadGBPS: 104}, false},
		{Ceilings{GPUReadGBPS: 106}, true},
		{Ceilings{GPUFMAGFLOPS: 1100}, true},
		{Ceilings{GPUF16GFLOPS: 1}, true}, // from none
	} {
		if r := a.rose(c.o); r != c.rose {
			t.Errorf("%+v rose over %+v: %v, want %v", c.o, a, r, c.rose)
		}
	}
}

// same is a == b but for the last bits of a float64's rounding.
func same(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }
