//go:build amd64 && !purego

package sgemm

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// The AVX-512 kernels' order follows the vendor (amd64Kernels says why),
// AVX2's comes last, and GODEBUG's switches take kernels out.
func TestAMD64Kernels(t *testing.T) {
	for _, c := range []struct {
		avx512, avx2, intel bool
		want                []string
	}{
		{true, true, true, []string{"AVX-512 6×64", "AVX-512 8×32", "AVX2+FMA 6×16"}},
		{true, true, false, []string{"AVX-512 8×32", "AVX-512 6×64", "AVX2+FMA 6×16"}},
		{false, true, true, []string{"AVX2+FMA 6×16"}},
		{false, false, false, nil},
	} {
		var got []string
		for _, k := range amd64Kernels(c.avx512, c.avx2, c.intel) {
			got = append(got, k.name)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("amd64Kernels(avx512 %t, avx2 %t, intel %t) = %v, want %v", c.avx512, c.avx2, c.intel, got, c.want)
		}
	}
	v := x86Vendor()
	if len(v) != 12 || strings.TrimSpace(v) == "" {
		t.Errorf("x86Vendor() = %q", v)
	}
	t.Logf("vendor %s, kernel %s", v, Kernel())
}

// measureBF16 gives a positive, finite ratio of rates where the CPU has
// a bfloat16 kernel, for each float32 kernel it may be measured against
// ($ATTN_CPU_KERNEL picks which Sgemm runs); bf16Slow decides by it.
func TestMeasureBF16(t *testing.T) {
	if len(bf16Kernels) == 0 {
		t.Skip("no bfloat16 kernel on this CPU: one with AVX512_BF16 (Zen 4 and 5, the Xeons) runs this test")
	}
	for _, fk := range kernels {
		r := measureBF16(bf16Kernels[0], fk)
		if !(r > 0) || math.IsInf(r, 0) {
			t.Fatalf("%s against %s: ratio %v", bf16Kernels[0].name, fk.name, r)
		}
		t.Logf("%s: %.2f× %s", bf16Kernels[0].name, r, fk.name)
	}
}

// measureBF16 is the rate of the bfloat16 kernel kn over that of the
// float32 kernel fk, in flops as the product counts them (2·m·n·k), each
// on four blocks of its own rows by its own columns over k = 128, its
// operands in L1: the median of nine rounds a millisecond apart, each
// timing the two in turn, so that a neighbour's load on the core falls
// on both alike and a burst of it that slows one kernel alone (seen on a
// shared 2-core Zen 4: one of them several times slower for a
// millisecond or two, now and then) moves only the rounds it falls in. About 10 ms.
func measureBF16(kn *bf16Kernel, fk *kernel) float64 {
	const k, blocks, reps, rounds = 128, 4, 16, 9
	a16 := make([]uint16, blocks*kn.mr*k)
	for i := range a16 {
		a16[i] = 0x3f80 // 1
	}
	b16 := make([]uint32, k/2*kn.nr)
	for i := range b16 {
		b16[i] = 0x3f003f00 // (½, ½)
	}
	c16 := make([]float32, blocks*kn.mr*kn.nr)
	a32 := make([]float32, blocks*fk.mr*k)
	for i := range a32 {
		a32[i] = 1
	}
	b32 := make([]float32, k*fk.nr)
	for i := range b32 {
		b32[i] = 0.5
	}
	c32 := make([]float32, blocks*fk.mr*fk.nr)
	ratios := make([]float64, rounds)
	for r := range ratios {
		if r > 0 {
			time.Sleep(time.Millisecond)
		}
		start := time.Now()
		for range reps {
			for bl := range blocks {
				kn.fn(k/2, &a16[bl*kn.mr*k], k, &b16[0], &c16[bl*kn.mr*kn.nr], kn.nr, 1, 0)
			}
		}
		t16 := time.Since(start)
		start = time.Now()
		for range reps {
			fk.fn(k, &a32[0], k, &b32[0], fk.nr, &c32[0], fk.nr, 1, 0, blocks)
		}
		t32 := time.Since(start)
		// Each kernel's flops over its time, the same reps, blocks and k.
		ratios[r] = float64(kn.mr*kn.nr) * t32.Seconds() / (float64(fk.mr*fk.nr) * max(t16.Seconds(), 1e-9))
	}
	slices.Sort(ratios)
	return ratios[rounds/2]
}
