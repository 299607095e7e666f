// Package gputest is how attn's tests get a GPU: one place that opens a
// backend or a device, skips the test with the reason when the host has
// no adapter, and fails it instead where $ATTN_REQUIRE_GPU is 1 (CI, whose
// hosts must have lavapipe at least), as Gio's GPU tests get their device
// from one helper. It imports nothing of attn, so package gpu's own tests
// use it as well as the tests of the packages above it.
package gputest

import (
	"os"
	"testing"
)

// EnvRequire names the variable that, set to 1, turns the skip of a test
// that needs an adapter into a failure.
const EnvRequire = "ATTN_REQUIRE_GPU"

// Required reports whether $ATTN_REQUIRE_GPU is 1.
func Required() bool { return os.Getenv(EnvRequire) == "1" }

// Unavailable ends t because what it needs did not open (err says why):
// it fails under ATTN_REQUIRE_GPU=1 and skips otherwise.
func Unavailable(t testing.TB, err error) {
	t.Helper()
	if Required() {
		t.Fatalf("%s=1 but the GPU is unavailable: %v", EnvRequire, err)
	}
	t.Skipf("no WebGPU adapter (%s=1 makes this a failure): %v", EnvRequire, err)
}

// Open returns what open returns (gpu.New, say), closed when the test
// ends; when open fails it ends the test as Unavailable does.
func Open[B interface{ Close() error }](t testing.TB, open func() (B, error)) B {
	t.Helper()
	b, err := open()
	if err != nil {
		Unavailable(t, err)
	}
	t.Cleanup(func() { b.Close() })
	return b
}
