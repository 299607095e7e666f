package backendtest_test

import (
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cpu"
)

// A backend's conformance test: one call, which holds every op and
// every capability the backend claims to the float64 reference. open
// makes a fresh backend for each part of the suite (Run closes it), and
// skips where the device is absent, saying where the test would run.
func ExampleRun() {
	testConformance := func(t *testing.T) {
		backendtest.Run(t, func(t testing.TB) backend.Backend {
			be, err := cpu.New(cpu.WithThreads(2))
			if err != nil {
				t.Skipf("no CPU backend here (%v): runs wherever cpu.New succeeds", err)
			}
			return be
		})
	}
	_ = testConformance // in a _test.go file: func TestConformance(t *testing.T)
}
