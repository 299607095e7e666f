// Package conformance runs the conformance suite (backendtest.Run) on the
// GPU backend, in a test binary of its own: `go test ./...` runs it beside
// package gpu's tests, not after them. On lavapipe, CI's adapter, the
// tests' time is mostly LLVM compiling each kernel's pipelines on one
// thread, so two test binaries side by side use both cores where one left
// the second idle. The package has no code: only its test.
package conformance
