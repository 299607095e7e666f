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
		r, err := cpu.SgemmRate(tt.threads, tt.passes, tt.budget)
		if (err == nil) != tt.ok {
			t.Errorf("SgemmRate(%d, %d, %v) error %v, want ok = %v", tt.threads, tt.passes, tt.budget, err, tt.ok)
			continue
		}
		if tt.ok && (!(r > 0) || math.IsInf(r, 0)) {
			t.Errorf("SgemmRate(%d, %d, %v) = %v GFLOP/s, want a positive finite rate", tt.threads, tt.passes, tt.budget, r)
		}
	}
}

func TestFMARate(t *testing.T) {
	if _, err := cpu.FMAKernel(); err != nil {
		if _, err := cpu.FMARate(1, 1, time.Millisecond); !errors.Is(err, cpu.ErrNoFMA) {
			t.Fatalf("no FMA kernel, but FMARate's error is %v, want ErrNoFMA", err)
		}
		t.Skipf("no FMA kernel (%v): an x86 CPU with FMA, or an arm64 one, runs this test", err)
	}
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
		r, err := cpu.FMARate(tt.threads, tt.passes, tt.budget)
		if (err == nil) != tt.ok {
			t.Errorf("FMARate(%d, %d, %v) error %v, want ok = %v", tt.threads, tt.passes, tt.budget, err, tt.ok)
			continue
		}
		if tt.ok && (!(r > 0) || math.IsInf(r, 0)) {
			t.Errorf("FMARate(%d, %d, %v) = %v GFLOP/s, want a positive finite rate", tt.threads, tt.passes, tt.budget, r)
		}
	}
}
