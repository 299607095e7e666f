package cpu_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/attn-go/attn/cpu"
)

func TestSgemmRate(t *testing.T) {
	// Small orders: the products' sizes are data, and CeilingSizes' 2048
	// took most of ./cpu's time under qemu-aarch64 in CI's arm64 step.
	sizes := cpu.CeilingSizes
	cpu.CeilingSizes = []int{64, 96, 128}
	defer func() { cpu.CeilingSizes = sizes }()
	checkRates(t, "Sgemm", cpu.SgemmRate)
}

// checkRates holds rate (SgemmRate, FMARate, AMXRate) to its arguments:
// a positive, finite rate on one or two threads, an error without a
// thread, a pass or a budget.
func checkRates(t *testing.T, name string, rate func(threads, passes int, budget time.Duration) (float64, error)) {
	t.Helper()
	for _, tt := range []struct {
		threads, passes int
		budget          time.Duration
		ok              bool
	}{
		{1, 1, 5 * time.Millisecond, true},
		{2, 2, 10 * time.Millisecond, true},
		{0, 1, time.Millisecond, false},
		{1, 0, time.Millisecond, false},
		{1, 1, 0, false},
	} {
		r, err := rate(tt.threads, tt.passes, tt.budget)
		if (err == nil) != tt.ok {
			t.Errorf("%sRate(%d, %d, %v) error %v, want ok = %v", name, tt.threads, tt.passes, tt.budget, err, tt.ok)
			continue
		}
		if tt.ok && (!(r > 0) || math.IsInf(r, 0)) {
			t.Errorf("%sRate(%d, %d, %v) = %v GFLOP/s, want a positive finite rate", name, tt.threads, tt.passes, tt.budget, r)
		}
	}
}

// TestPeakRates holds FMARate and AMXRate to their arguments and to a
// positive, finite rate where their loop runs, and to their sentinels
// where it does not (AMX's on every CPU without the tiles).
func TestPeakRates(t *testing.T) {
	for _, pk := range []struct {
		name   string
		kernel func() (string, error)
		rate   func(threads, passes int, budget time.Duration) (float64, error)
		none   error
	}{
		{"FMA", cpu.FMAKernel, cpu.FMARate, cpu.ErrNoFMA},
		{"AMX", cpu.AMXKernel, cpu.AMXRate, cpu.ErrNoAMX},
	} {
		t.Run(pk.name, func(t *testing.T) {
			if name, err := pk.kernel(); err != nil {
				if !errors.Is(err, pk.none) || name != "" {
					t.Fatalf("%sKernel() = %q, %v, want an error wrapping %v", pk.name, name, err, pk.none)
				}
				if _, err := pk.rate(1, 1, time.Millisecond); !errors.Is(err, pk.none) {
					t.Fatalf("no %s kernel, but the rate's error is %v, want %v", pk.name, err, pk.none)
				}
				t.Skipf("no %s kernel (%v): an x86 CPU with FMA or an arm64 one runs FMA's, a Sapphire Rapids or later AMX's", pk.name, err)
			}
			checkRates(t, pk.name, pk.rate)
		})
	}
}
