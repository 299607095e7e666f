//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"flag"
	"os"
	"strings"
	"testing"

	"github.com/attn-go/attn/gpu"
	"github.com/attn-go/attn/gpu/internal/testhook"
	"github.com/attn-go/attn/internal/gputest"
)

// deviceExamples need an adapter, and an example cannot skip as a test
// does (gputest.Unavailable): TestMain leaves them out where no adapter
// opens, unless ATTN_REQUIRE_GPU=1 makes that a failure.
var deviceExamples = []string{"ExampleNewWithDevice"}

func TestMain(m *testing.M) {
	flag.Parse()
	// Every test runs with poisoned scratch: a kernel that reads an
	// element of pooled scratch that no kernel of its op wrote reads NaN.
	// Benchmarks time what callers run.
	testhook.PoisonScratch = flag.Lookup("test.bench").Value.String() == ""
	if !gputest.Required() {
		if _, err := gpu.Adapters(); err != nil {
			skip := "^(" + strings.Join(deviceExamples, "|") + ")$"
			if old := flag.Lookup("test.skip").Value.String(); old != "" {
				skip = old + "|" + skip
			}
			flag.Set("test.skip", skip)
		}
	}
	os.Exit(m.Run())
}
