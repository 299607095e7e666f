//go:build (cgo || gogpu) && !nogpu

package gpu

import "github.com/attn-go/attn/backend"

// RefuseBackward is what Backward refuses after BackwardParams.Validate
// (refuseBackward), for a test that holds it to its refusals whatever
// Validate accepts.
func RefuseBackward(p backend.BackwardParams, q, k, v, o, lse, dO, dQ, dK, dV backend.Buffer, dSinks []float32) error {
	return refuseBackward(p, q, k, v, o, lse, dO, dQ, dK, dV, dSinks)
}

// SetBackwardChunks bounds the rows and keys of Backward's dispatches
// to n (0: the plan's bounds alone) and returns the bound it replaces.
func SetBackwardChunks(n int) int {
	old := backwardChunks
	backwardChunks = n
	return old
}
