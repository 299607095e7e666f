//go:build amd64 && !purego

package sgemm

import (
	"math"
	"slices"
	"strings"
	"testing"
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
		t.Skip("no bfloat16 kernel on this CPU")
	}
	for _, fk := range kernels {
		r := measureBF16(bf16Kernels[0], fk)
		if !(r > 0) || math.IsInf(r, 0) {
			t.Fatalf("%s against %s: ratio %v", bf16Kernels[0].name, fk.name, r)
		}
		t.Logf("%s: %.2f× %s", bf16Kernels[0].name, r, fk.name)
	}
}
