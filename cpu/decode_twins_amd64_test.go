//go:build amd64 && !purego

package cpu

import (
	"reflect"
	"testing"
)

// Every decoding kernel with either prefetch (the L1's and the L2
// twins: prefetchL2), whichever the CPU picks, passes the same kernel
// tests, so that both are tested on either maker's CPU: the sixteen-lane
// ones with AVX-512F, the eight-lane ones under GODEBUG=cpu.avx512f=off
// (and the AVX2 integer P·V kernel with either). Each width runs its
// kernels all with one prefetch, then all with the other: the CPU's own
// pick (the eight-lane 8-bit scores kernels on the L1's beside the L2
// twins, prefetchQuantDotL1) is what the other tests run.
func TestPrefetchTwins(t *testing.T) {
	if !hasDecode() {
		t.Skip("no decoding kernels on this CPU: an x86 CPU with AVX2, FMA and F16C runs this test")
	}
	for _, l2 := range []bool{false, true} {
		name := map[bool]string{false: "L1", true: "L2"}[l2]
		t.Run(name, func(t *testing.T) {
			// The uniform choice, even where the CPU mixes them.
			defer func(keep bool) { prefetchQuantDotL1 = keep }(prefetchQuantDotL1)
			prefetchQuantDotL1 = false
			defer usePrefetch(0, l2)()
			defer usePrefetch(1, l2)()
			t.Run("DecodeKernels", TestDecodeKernels)
			t.Run("QuantDecodeKernels", TestQuantDecodeKernels)
			t.Run("QuantDecodeEdges", TestQuantDecodeEdges)
			t.Run("AxpyInt", TestAxpyInt)
			t.Run("DotInt", TestDotInt)
		})
	}
}

// Where the eight-lane kernels take the L2 twins and the CPU keeps the
// widening 8-bit scores on the L1's (prefetchQuantDotL1), the table holds
// the L1's q8 and fp8 scores kernels and every other kernel's twin (the
// integer scores kernel's too); where it does not, every twin.
func TestPrefetchMixed(t *testing.T) {
	same := func(a, b any) bool { return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer() }
	defer func(keep bool) { prefetchQuantDotL1 = keep }(prefetchQuantDotL1)
	for _, mixed := range []bool{true, false} {
		prefetchQuantDotL1 = mixed
		restore := usePrefetch(0, true)
		got := quantKernelSets[0]
		l1, l2 := quantByPrefetch[0][0], quantByPrefetch[0][1]
		dots := l2
		if mixed {
			dots = l1
		}
		if !same(got.dotQ8, dots.dotQ8) || !same(got.dotFP8, dots.dotFP8) {
			t.Errorf("mixed=%v: the 8-bit scores kernels are not the %s ones", mixed, map[bool]string{true: "L1", false: "L2"}[mixed])
		}
		if !same(got.axpyQ8, l2.axpyQ8) || !same(got.axpyFP8, l2.axpyFP8) || !same(dotKernels[0][0], dotByPrefetch[0][1][0]) ||
			!same(axpyKernels[0][1], axpyByPrefetch[0][1][1]) || !same(intAVX2.run, intByPrefetch[0][1]) ||
			!same(intDotAVX2.run2, intDot2ByPrefetch[1]) {
			t.Errorf("mixed=%v: a kernel other than the 8-bit scores is not its L2 twin", mixed)
		}
		restore()
	}
}
