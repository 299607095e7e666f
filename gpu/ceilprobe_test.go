//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/x448/float16"

	"github.com/attn-go/attn/backend/backendtest"
)

// TestCeilings runs the three probes as a caller does and holds their
// rates to positive, finite numbers, the f16 one present exactly where
// the device compiles f16; lavapipe's rates are the host's CPU running
// WGSL, no hardware's.
func TestCeilings(t *testing.T) {
	b := newTestBackend(t)
	live, _ := b.Memory()
	start := time.Now()
	c, err := b.Ceilings(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("%s (%s): read %.2f GB/s, f32 FMA %.2f GFLOP/s, f16 FMA %.2f GFLOP/s in %v; %s",
		b.info.Adapter.Name, b.info.Adapter.DeviceType, c.ReadGBPS, c.FMAGFLOPS, c.F16GFLOPS, took.Round(time.Millisecond), c.Note)
	ok := func(x float64) bool { return x > 0 && !math.IsInf(x, 0) && !math.IsNaN(x) }
	if !ok(c.ReadGBPS) || !ok(c.FMAGFLOPS) {
		t.Errorf("read %v GB/s, f32 FMA %v GFLOP/s: want positive, finite rates", c.ReadGBPS, c.FMAGFLOPS)
	}
	pr := &probe{b: b}
	if f16 := pr.noF16() == ""; f16 != ok(c.F16GFLOPS) {
		t.Errorf("f16 FMA %v GFLOP/s where the device compiles f16 is %v (%s)", c.F16GFLOPS, f16, c.Note)
	}
	if c.Note == "" {
		t.Error("no note of how the probes were timed")
	}
	if now, _ := b.Memory(); now != live {
		t.Errorf("the probes left the backend's memory at %d bytes, from %d", now, live)
	}
}

// TestCeilingSums holds each probe's kernel to the sum its work makes,
// so that a kernel whose loads or fmas a compiler may drop (a result
// not written, a loop cut short) fails: the read's sum is its buffer's
// times the repetitions of a pass, whatever the tail of a buffer not a
// whole number of the grid's loads; the FMA's, at fixed trips, what the
// same chains make on the host.
func TestCeilingSums(t *testing.T) {
	b := newTestBackend(t)
	ctx := context.Background()
	pr, err := b.newProbe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.close()
	for _, vecs := range []uint64{probeWG, probeWG*readLoads*3 + 5, probeWG*readLoads*7 - 1} {
		m, err := pr.read(ctx, 16*vecs)
		if err != nil {
			t.Fatal(err)
		}
		want := float64(readSum(4*vecs) * m.param)
		if m.sum != want || m.param < 1 {
			t.Errorf("read of %d vec4s, %d repetitions, %d workgroups: the workgroups sum to %v, want %v", vecs, m.param, m.groups, m.sum, want)
		}
		if work := float64(16*vecs) * float64(m.param); m.work != work || m.t <= 0 || m.rate != rate(work, m.t) {
			t.Errorf("read of %d vec4s, %d repetitions: %v GB/s of %v bytes in %v, want %v bytes", vecs, m.param, m.rate, m.work, m.t, work)
		}
	}
	for _, c := range []struct {
		f16   bool
		trips uint32
	}{{false, 1}, {false, 3}, {true, 1}, {true, 2}} {
		if c.f16 && pr.noF16() != "" {
			t.Logf("f16: %s", pr.noF16())
			continue
		}
		m, err := pr.fma(ctx, c.f16, c.trips)
		if err != nil {
			t.Fatal(err)
		}
		want := float64(m.groups) * fmaChainSum(c.f16, int(c.trips)*fmaDepth)
		tol := 1e-5
		if c.f16 {
			tol = 2e-3
		}
		if m.param != c.trips || backendtest.Exceeds(math.Abs(m.sum-want), tol*want) {
			t.Errorf("FMA f16 %v at %d trips (ran %d), %d workgroups: the workgroups sum to %v, want %v", c.f16, c.trips, m.param, m.groups, m.sum, want)
		}
		// Each invocation's trips of fmaChains × fmaDepth vec4 fmas.
		flops := 2 * float64(m.groups) * probeWG * float64(c.trips) * fmaChains * fmaDepth * 4
		if m.work != flops || m.t <= 0 || m.rate != rate(flops, m.t) {
			t.Errorf("FMA f16 %v at %d trips: %v GFLOP/s of %v flops in %v, want %v flops", c.f16, c.trips, m.rate, m.work, m.t, flops)
		}
	}
}

// fmaChainSum is what one workgroup of the FMA probe sums to after
// steps fmas on each chain: every invocation's chains from their starts,
// stepped on the host in the probe's precision (f16 rounded after each
// fma, as a fused one is).
func fmaChainSum(f16 bool, steps int) float64 {
	sum := 0.0
	for l := range probeWG {
		for k := range fmaChains {
			for j := range 4 {
				a := float64((l+4*k+j)&15) * 0.0625
				for range steps {
					a = math.FMA(a, 0.75, 0.25)
					if f16 {
						a = float64(float16.Fromfloat32(float32(a)).Float32())
					} else {
						a = float64(float32(a))
					}
				}
				sum += a
			}
		}
	}
	return sum
}

// TestReadProbeRefuses: a buffer the read probe cannot sum whole is
// refused, the error naming its size.
func TestReadProbeRefuses(t *testing.T) {
	b := newTestBackend(t)
	ctx := context.Background()
	pr, err := b.newProbe(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.close()
	for _, size := range []uint64{0, 16, 16*probeWG + 4, 1 << 40} {
		if _, err := pr.read(ctx, size); err == nil {
			t.Errorf("a read probe of %d bytes: no error", size)
		} else if !containsNumber(err.Error(), size) {
			t.Errorf("a read probe of %d bytes: %v does not name the size", size, err)
		}
	}
}

// containsNumber reports whether s says n in decimal.
func containsNumber(s string, n uint64) bool {
	return strings.Contains(s, strconv.FormatUint(n, 10))
}
