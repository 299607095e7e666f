package bench

import (
	"math"
	"testing"
)

// setCeilings reads a point against the ceilings that apply where it
// ran: with a Sgemm rate of 400 GFLOP/s and a read bandwidth of 50 GB/s
// the ridge is at 8 flop/B; left of it memory bounds the roofline, at it
// and right of it compute does. A point off the host's CPU gets no
// roofline, nor does one of a run that measured only one ceiling, nor
// one that did not run.
func TestSetCeilings(t *testing.T) {
	const sgemm, bw = 400, 50
	for _, c := range []struct {
		name              string
		intensity, gflops float64 // of a point of 1000 bytes; 0 GFLOP/s: did not run
		at                placement
		sgemm, bw         float64
		wantBW, wantRoof  float64
		wantBound         string
	}{
		{"compute-bound", 16, 300, hostCPU, sgemm, bw, 300.0 / 16 / bw, 0.75, BoundCompute},
		{"memory-bound", 2, 50, hostCPU, sgemm, bw, 0.5, 0.5, BoundMemory},
		{"at the ridge", 8, 200, hostCPU, sgemm, bw, 0.5, 0.5, BoundCompute},
		{"bf16 past the f32 ceiling", 64, 500, hostCPU, sgemm, bw, 500.0 / 64 / bw, 1.25, BoundCompute},
		{"no Sgemm rate", 16, 300, hostCPU, 0, bw, 300.0 / 16 / bw, 0, ""},
		{"no bandwidth", 16, 300, hostCPU, sgemm, 0, 0, 0, ""},
		{"neither ceiling", 2, 50, hostCPU, 0, 0, 0, 0, ""},
		{"integrated GPU", 2, 50, hostMemory, sgemm, bw, 0.5, 0, ""},
		{"discrete GPU", 2, 50, offHost, sgemm, bw, 0, 0, ""},
		{"failed", 16, 0, hostCPU, sgemm, bw, 0, 0, ""},
	} {
		pt := Point{Status: StatusOK}
		flops := c.intensity * 1000
		if c.gflops > 0 {
			pt.Runs, pt.Bytes, pt.GFLOPS = 3, 1000, c.gflops
			pt.MedianS = flops / c.gflops / 1e9
			pt.GBPS = float64(pt.Bytes) / pt.MedianS / 1e9
		} else {
			pt.Status = StatusFailed
		}
		pt.setCeilings(flops, c.at, c.bw, c.sgemm)
		near := func(got, want float64) bool { return math.Abs(got-want) <= 1e-12*max(1, want) }
		if !near(pt.ReadBWFrac, c.wantBW) || !near(pt.RooflineFrac, c.wantRoof) || pt.Bound != c.wantBound {
			t.Errorf("%s: of BW %v, of roof %v %q; want %v, %v %q", c.name, pt.ReadBWFrac, pt.RooflineFrac, pt.Bound, c.wantBW, c.wantRoof, c.wantBound)
		}
		wantI := c.intensity // every point that ran has one, wherever it ran
		if c.gflops == 0 {
			wantI = 0
		}
		if pt.Intensity != wantI {
			t.Errorf("%s: intensity %v, want %v", c.name, pt.Intensity, wantI)
		}
	}
}

// roofline is the lower ceiling, and names it.
func TestRoofline(t *testing.T) {
	for _, c := range []struct {
		intensity, sgemm, bw float64
		want                 float64
		bound                string
	}{
		{0.5, 400, 50, 25, BoundMemory},
		{7.99, 400, 50, 7.99 * 50, BoundMemory},
		{8, 400, 50, 400, BoundCompute},
		{1000, 400, 50, 400, BoundCompute},
	} {
		if got, bound := roofline(c.intensity, c.sgemm, c.bw); got != c.want || bound != c.bound {
			t.Errorf("roofline(%v, %v, %v) = %v, %s; want %v, %s", c.intensity, c.sgemm, c.bw, got, bound, c.want, c.bound)
		}
	}
}

// setFMAFrac gives a point on the host's CPU its fraction of the FMA
// peak, and nothing to a GPU's point, to a run that did not measure the
// peak, or to a point that did not run.
func TestSetFMAFrac(t *testing.T) {
	for _, c := range []struct {
		name   string
		gflops float64 // 0: did not run
		at     placement
		fma    float64
		want   float64
	}{
		{"CPU", 300, hostCPU, 400, 0.75},
		{"bf16 past the f32 peak", 500, hostCPU, 400, 1.25},
		{"no FMA peak (purego)", 300, hostCPU, 0, 0},
		{"integrated GPU", 300, hostMemory, 400, 0},
		{"discrete GPU", 300, offHost, 400, 0},
		{"failed", 0, hostCPU, 400, 0},
	} {
		pt := Point{GFLOPS: c.gflops}
		if c.gflops > 0 {
			pt.Runs, pt.Bytes, pt.GBPS = 3, 1000, 1
		}
		pt.setFMAFrac(c.at, c.fma)
		if pt.FMAFrac != c.want {
			t.Errorf("%s: of FMA %v, want %v", c.name, pt.FMAFrac, c.want)
		}
	}
}

// setAMXFrac gives a bfloat16 point of the CPU backend whose bfloat16
// arithmetic ran on AMX's tiles its fraction of the tiles' peak, and
// nothing to another dtype, to a backend that widened or multiplied
// bfloat16 on vectors, to a GPU's point, to a run without the peak, or
// to a point that did not run.
func TestSetAMXFrac(t *testing.T) {
	onTiles := "linux/amd64, " + amxDetail + " 32×32 tiles (AVX512_BF16 8×32 at the edges)"
	for _, c := range []struct {
		name     string
		gflops   float64 // 0: did not run
		dtype    string
		version  string
		strategy string
		at       placement
		amx      float64
		want     float64
	}{
		{"bf16 on the tiles", 1000, "bf16", onTiles, "fused", hostCPU, 4000, 0.25},
		{"staged, widened", 300, "bf16", onTiles, "staged", hostCPU, 4000, 0},
		{"f32", 300, "", onTiles, "fused", hostCPU, 4000, 0},
		{"f16", 300, "f16", onTiles, "fused", hostCPU, 4000, 0},
		{"bf16 widened", 300, "bf16", "linux/amd64, bfloat16 widened", "fused", hostCPU, 4000, 0},
		{"no AMX peak", 1000, "bf16", onTiles, "fused", hostCPU, 0, 0},
		{"GPU", 1000, "bf16", onTiles, "fused", offHost, 4000, 0},
		{"failed", 0, "bf16", onTiles, "fused", hostCPU, 4000, 0},
	} {
		pt := Point{GFLOPS: c.gflops, Version: c.version, Strategy: c.strategy}
		pt.DType = c.dtype
		if c.gflops > 0 {
			pt.Runs, pt.Bytes, pt.GBPS = 3, 1000, 1
		}
		pt.setAMXFrac(c.at, c.amx)
		if pt.AMXFrac != c.want {
			t.Errorf("%s: of AMX %v, want %v", c.name, pt.AMXFrac, c.want)
		}
	}
}

// ceilingFlag says by how much a point stands above each ceiling and
// what may explain it, probe noise last; a point below every one has
// none.
// The roofline chart rings the flagged points' dots.
func TestCeilingFlag(t *testing.T) {
	for _, c := range []struct {
		name          string
		roof, fma, bw float64
		bound         string
		dtype         string
		want          string
	}{
		{"below every one", 0.9, 0.95, 0.8, BoundCompute, "", ""},
		{"at the roof", 1, 0.5, 1, BoundCompute, "", ""},
		{"above both", 1.58, 1.25, 0, BoundCompute, "", "above roof 1.58× C, FMA 1.25×: probe noise?"},
		{"past Sgemm", 1.1, 0.6, 0, BoundCompute, "", "above roof 1.10× C: faster than Sgemm or probe noise?"},
		{"memory-bound", 2, 0.1, 2, BoundMemory, "", "above roof 2.00× M, BW 2.00×: data in cache or probe noise?"},
		{"past the bandwidth only", 0.6, 0.2, 1.49, BoundCompute, "", "above BW 1.49×: data in cache or probe noise?"},
		{"bf16 past FMA", 0.8, 1.3, 0, BoundCompute, "bf16", "above FMA 1.30×: half arithmetic or probe noise?"},
		{"f16 past Sgemm", 1.2, 0.7, 0, BoundCompute, "f16", "above roof 1.20× C: faster than Sgemm or half arithmetic or probe noise?"},
	} {
		pt := Point{RooflineFrac: c.roof, FMAFrac: c.fma, ReadBWFrac: c.bw, Bound: c.bound}
		pt.DType = c.dtype
		if got := pt.ceilingFlag(); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		if pt.aboveRoof() != (c.want != "") {
			t.Errorf("%s: aboveRoof %v", c.name, pt.aboveRoof())
		}
	}
	r := &Report{Points: []Point{
		{Intensity: 4, GFLOPS: 90, RooflineFrac: 0.9},
		{Intensity: 8, GFLOPS: 300, RooflineFrac: 1.5, Flag: "above roof 1.50× C: probe noise?"},
	}}
	if got := r.flaggedDots(); len(got) != 1 || got[0].X != 8 || got[0].Y != 300 {
		t.Errorf("flagged dots %v, want the second point's", got)
	}
}
