package cpu

import (
	"errors"
	"testing"
)

// TestFMAKernel checks that the FMA peak's loop does the flops FMARate
// counts: after n steps each of its chains·lanes accumulators has gained
// exactly n·x·y (values chosen so that every sum is exact in float32),
// so each lane of each chain did n FMAs, no more and no fewer, and the
// memory around acc is left alone.
func TestFMAKernel(t *testing.T) {
	k := fmaPeak
	if k == nil {
		name, err := FMAKernel()
		if !errors.Is(err, ErrNoFMA) || name != "" {
			t.Fatalf("no FMA kernel, but FMAKernel() = %q, %v, want an error wrapping ErrNoFMA", name, err)
		}
		t.Skipf("no FMA kernel (%v): an x86 CPU with FMA, or an arm64 one, runs this test", err)
	}
	if name, err := FMAKernel(); err != nil || name != k.name {
		t.Fatalf("FMAKernel() = %q, %v, want %q", name, err, k.name)
	}
	const guard = 16
	for _, n := range []int{0, 1, 2, 5, 37, 1000} {
		x, y := make([]float32, k.lanes), make([]float32, k.lanes)
		buf := make([]float32, k.lanes*k.chains+2*guard)
		acc := buf[guard : guard+k.lanes*k.chains]
		for l := range x {
			x[l], y[l] = float32(l%4+1), float32(l%3+1)/2
		}
		for i := range buf {
			buf[i] = float32(i)
		}
		k.fn(n, &x[0], &y[0], &acc[0])
		for i, v := range buf {
			want := float32(i) // the guards
			if c := i - guard; c >= 0 && c < len(acc) {
				// The Go model of chain c/lanes, lane c%lanes.
				want = float32(i)
				for range n {
					want += x[c%k.lanes] * y[c%k.lanes]
				}
			}
			if v != want {
				t.Fatalf("%s, n=%d: value %d (acc[%d]) = %v, want %v", k.name, n, i, i-guard, v, want)
			}
		}
	}
}
