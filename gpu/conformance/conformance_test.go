//go:build (cgo || gogpu) && !nogpu

package conformance_test

import (
	"os"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/gpu/internal/testhook"
	"github.com/attn-go/attn/internal/gputest"
)

func TestMain(m *testing.M) {
	// Every op runs with poisoned scratch, as in package gpu's tests: a
	// kernel that reads an element of pooled scratch that no kernel of its
	// op wrote reads NaN.
	testhook.PoisonScratch = true
	os.Exit(m.Run())
}

// TestConformance holds the GPU backend to the float64 reference over
// the whole suite: every op, layout, variant and storage dtype. It opens
// a backend as package gpu's tests do (gputest.Open: required under
// ATTN_REQUIRE_GPU=1, else skipped where no adapter opens).
func TestConformance(t *testing.T) {
	backendtest.Run(t, func(t testing.TB) backend.Backend { return gputest.Open(t, gpu.New) })
}
