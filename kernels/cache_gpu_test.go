//go:build (cgo || gogpu) && !nogpu

package kernels_test

import (
	"testing"

	"github.com/attn-go/attn/backend"
)

// TestCacheDecodeGPU is TestCacheDecode's decoding loop on the GPU for
// 8-bit caches (q8, and fp8 with a scale a KV head), contiguous and
// paged in both layouts: appends quantized on the host (Write), the
// fused kernels widening the stored bytes, the scales applied in them.
// Without an adapter it skips, failing instead under ATTN_REQUIRE_GPU=1.
func TestCacheDecodeGPU(t *testing.T) {
	testCacheDecode(t, openGPU(t), backend.Quants)
}
