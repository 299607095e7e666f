package gpu

import (
	"github.com/attn-go/attn/backend"
)

// Priority is the gpu backend's place in "auto": above the CPU's 0, so a
// working adapter is preferred.
const Priority = 10

func init() {
	backend.Register("gpu", Priority, func() (backend.Backend, error) { return New() })
}

// New opens the WebGPU backend. In this build it always fails with an
// error wrapping backend.ErrUnavailable that says why.
func New() (backend.Backend, error) {
	return nil, backend.Errorf(backend.ErrUnavailable, "%s", unavailableReason)
}
