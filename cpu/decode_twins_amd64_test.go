//go:build amd64 && !purego

package cpu

import "testing"

// The sixteen-lane kernels this CPU does not pick (the L1's prefetches on
// AMD's, the L2 twins on Intel's: prefetchL2) pass the same kernel tests
// as the ones it does, so that both are tested on either maker's CPU.
func TestPrefetchTwins(t *testing.T) {
	if !hasAVX512 {
		t.Skip("no AVX-512F: the sixteen-lane kernels do not run")
	}
	defer usePrefetch(!prefetchL2)()
	t.Run("DecodeKernels", TestDecodeKernels)
	t.Run("QuantDecodeKernels", TestQuantDecodeKernels)
	t.Run("QuantDecodeEdges", TestQuantDecodeEdges)
	t.Run("AxpyInt", TestAxpyInt)
}
