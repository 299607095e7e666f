package gpu

import (
	"testing"
	"time"
)

// TestCeilingRates holds the probes' arithmetic: a rate is work over
// seconds in billions, an FMA two flops of each lane, and the read
// probe's sum that of its buffer's pattern, to the brute-force sum.
func TestCeilingRates(t *testing.T) {
	for _, c := range []struct {
		work float64
		d    time.Duration
		want float64
	}{
		{1e9, time.Second, 1},
		{512 << 20, time.Millisecond, 536.870912},
		{3e12, 2 * time.Millisecond, 1.5e6},
		{1e9, 0, 0},
		{1e9, -time.Second, 0},
	} {
		if got := rate(c.work, c.d); got != c.want {
			t.Errorf("rate(%v, %v) = %v, want %v", c.work, c.d, got, c.want)
		}
	}
	for _, c := range []struct {
		groups, wg, trips, chains, depth, lanes int
		want                                    float64
	}{
		{1, 1, 1, 1, 1, 1, 2},
		{1, 1, 1, 1, 1, 4, 8},
		{16, 256, 10, 4, 8, 4, 2 * 16 * 256 * 10 * 128},
		{65535, 256, 64, 4, 8, 4, 2 * 65535 * 256 * 64 * 128},
	} {
		if got := fmaFlops(c.groups, c.wg, c.trips, c.chains, c.depth, c.lanes); got != c.want {
			t.Errorf("fmaFlops(%d groups, %d, %d trips, %d chains, %d deep, %d lanes) = %v, want %v",
				c.groups, c.wg, c.trips, c.chains, c.depth, c.lanes, got, c.want)
		}
	}
	// The hash's known values (lowbias32, computed apart).
	for _, c := range []struct{ x, want uint32 }{{0, 0}, {1, 0x688990c0}, {0xffffffff, 0x6768824a}} {
		if got := fillHash(c.x); got != c.want {
			t.Errorf("fillHash(%#x) = %#x, want %#x", c.x, got, c.want)
		}
	}
	if got, want := readSum(3), fillHash(0)+fillHash(1)+fillHash(2); got != want {
		t.Errorf("readSum(3) = %#x, want %#x", got, want)
	}
}
