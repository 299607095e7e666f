package cpu

import (
	"os"
	"strings"
	"testing"

	"github.com/attn-go/attn/cpu/internal/sgemm"
)

// TestKernelsExpected logs the kernels this CPU runs and, where
// ATTN_EXPECT_KERNELS lists family=name pairs (comma-separated), fails
// unless each family runs that kernel: CI says what the emulated CPU
// must pick, e.g. "sgemm=NEON 8×12,bf16narrow=integer NEON" under qemu's
// cortex-a72, which lacks FEAT_BF16, so that a fallback is seen to run
// rather than assumed.
func TestKernelsExpected(t *testing.T) {
	have := map[string]string{"sgemm": sgemm.Kernel()}
	for k, v := range archKernels() {
		have[k] = v
	}
	t.Logf("kernels: %v", have)
	want := os.Getenv("ATTN_EXPECT_KERNELS")
	if want == "" {
		return
	}
	for _, kv := range strings.Split(want, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("ATTN_EXPECT_KERNELS: %q is not family=name", kv)
		}
		if got, ok := have[k]; !ok || got != v {
			t.Errorf("%s runs %q, ATTN_EXPECT_KERNELS wants %q", k, got, v)
		}
	}
}
