// Package testhook holds what attn's GPU tests switch on inside the
// backend: package gpu's own tests and the test packages beside it
// (gpu/conformance), which cannot reach package gpu's unexported names.
// Nothing outside attn's tests sets it.
package testhook

// PoisonScratch makes the scratch pool fill every buffer it hands out with
// NaNs, so that a kernel reading an element no kernel of its op wrote
// fails the tests (gpu/pool.go). A test binary's TestMain sets it before
// any backend opens (gpu/main_test.go, gpu/conformance); the backend only
// reads it.
var PoisonScratch bool
