//go:build amd64 && !purego

package sgemm

import (
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
