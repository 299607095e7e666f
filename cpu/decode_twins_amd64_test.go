//go:build amd64 && !purego

package cpu

import "testing"

// The decoding kernels this CPU does not pick (the L1's prefetches where
// it takes the L2 twins, the twins where it takes the L1's: prefetchL2)
// pass the same kernel tests as the ones it does, so that both are
// tested on either maker's CPU: the sixteen-lane ones with AVX-512F, the
// eight-lane ones under GODEBUG=cpu.avx512f=off (and the AVX2 integer
// P·V kernel with either).
func TestPrefetchTwins(t *testing.T) {
	if !hasDecode() {
		t.Skip("no decoding kernels on this CPU")
	}
	defer usePrefetch(0, !prefetchL2[0])()
	defer usePrefetch(1, !prefetchL2[1])()
	t.Run("DecodeKernels", TestDecodeKernels)
	t.Run("QuantDecodeKernels", TestQuantDecodeKernels)
	t.Run("QuantDecodeEdges", TestQuantDecodeEdges)
	t.Run("AxpyInt", TestAxpyInt)
	t.Run("DotInt", TestDotInt)
}
