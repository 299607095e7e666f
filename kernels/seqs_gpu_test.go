//go:build (cgo || gogpu) && !nogpu

package kernels_test

import (
	"testing"

	"github.com/attn-go/attn/backend"
)

// The GPU joins seqsBackends where the build has it: its cases run while
// it claims Caps.Seqs and must be refused with ErrUnsupported while it
// does not. Without an adapter they skip, failing instead under
// ATTN_REQUIRE_GPU=1.
func init() {
	seqsBackends = append(seqsBackends, struct {
		name string
		open func(testing.TB) backend.Backend
	}{"gpu", openGPU})
}
