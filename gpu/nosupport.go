//go:build !cgo || nogpu

package gpu

import "github.com/attn-go/attn/backend"

// unavailableReason says why New fails: go-webgpu needs cgo, and -tags
// nogpu leaves it out on purpose. "auto" falls back to the CPU backend
// with this reason.
const unavailableReason = "this build of attn has no WebGPU backend (built without cgo or with -tags nogpu)"

// Adapters describes the GPU adapters the backend could use. In this build
// there are none: it returns an error wrapping backend.ErrUnavailable that
// says why.
func Adapters() ([]backend.Info, error) {
	return nil, backend.Errorf(backend.ErrUnavailable, "%s", unavailableReason)
}

// Backend is the WebGPU backend's type, kept in this build so that code
// naming it compiles everywhere; New never returns one.
type Backend struct{ backend.Backend }

// Memory reports no device memory.
func (*Backend) Memory() (live, peak int64) { return 0, 0 }

// ResetPeak does nothing: this build allocates no device memory.
func (*Backend) ResetPeak() {}

// New fails in this build with an error wrapping backend.ErrUnavailable
// that says why.
func New() (*Backend, error) {
	return nil, backend.Errorf(backend.ErrUnavailable, "%s", unavailableReason)
}
