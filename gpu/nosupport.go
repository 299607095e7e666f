//go:build (!cgo && !gogpu) || nogpu

package gpu

import (
	"context"
	"io"
	"time"

	"github.com/attn-go/attn/backend"
)

// unavailableReason says why New fails: wgpu-native needs cgo (the
// pure-Go binding, gogpu/wgpu, is built only with -tags gogpu), and
// -tags nogpu leaves the backend out on purpose. "auto" falls back to
// the CPU backend with this reason.
const unavailableReason = "this build of attn has no WebGPU backend (built without cgo and without -tags gogpu, or with -tags nogpu)"

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

// Backward fails with ErrUnavailable: New never returns a Backend in
// this build.
func (*Backend) Backward(context.Context, backend.BackwardParams, backend.Buffer, backend.Buffer, backend.Buffer, backend.Buffer, backend.Buffer,
	backend.Buffer, backend.Buffer, backend.Buffer, backend.Buffer, []float32) error {
	return backend.Errorf(backend.ErrUnavailable, "%s", unavailableReason)
}

// CheckBackward fails with ErrUnavailable, as Backward does.
func (*Backend) CheckBackward(backend.BackwardParams, backend.Buffer, backend.Buffer, backend.Buffer, backend.Buffer, backend.Buffer,
	backend.Buffer, backend.Buffer, backend.Buffer, backend.Buffer, []float32) error {
	return backend.Errorf(backend.ErrUnavailable, "%s", unavailableReason)
}

// New fails in this build with an error wrapping backend.ErrUnavailable
// that says why.
func New() (*Backend, error) {
	return nil, backend.Errorf(backend.ErrUnavailable, "%s", unavailableReason)
}

// NewWithDevice, Import and Export take the WebGPU binding's types, and it
// builds only with cgo: a program holding a *wgpu.Device is built with
// cgo already, so this build has none of the three. Record is kept, so
// that code written for steps compiles everywhere.

// Step records ops without a host wait (see the cgo build); in this build
// every method returns an error wrapping backend.ErrUnavailable.
type Step struct{}

// Record returns a Step whose methods fail with ErrUnavailable.
func (*Backend) Record() *Step { return &Step{} }

func stepUnavailable() error {
	return backend.Errorf(backend.ErrUnavailable, "%s", unavailableReason)
}

// Fused fails with ErrUnavailable.
func (*Step) Fused(context.Context, backend.FusedParams, backend.Buffer, backend.Buffer, backend.Buffer, backend.Buffer, backend.Buffer) error {
	return stepUnavailable()
}

// Scores fails with ErrUnavailable.
func (*Step) Scores(context.Context, backend.ScoresParams, backend.Buffer, backend.Buffer, backend.Buffer) error {
	return stepUnavailable()
}

// Softmax fails with ErrUnavailable.
func (*Step) Softmax(context.Context, backend.SoftmaxParams, backend.Buffer) error {
	return stepUnavailable()
}

// Context fails with ErrUnavailable.
func (*Step) Context(context.Context, backend.ContextParams, backend.Buffer, backend.Buffer, backend.Buffer) error {
	return stepUnavailable()
}

// Submit fails with ErrUnavailable.
func (*Step) Submit() error { return stepUnavailable() }

// Wait fails with ErrUnavailable.
func (*Step) Wait() error { return stepUnavailable() }

// Tune fails with ErrUnavailable: this build has no adapter to tune.
func Tune(context.Context, time.Duration, io.Writer, ...string) (string, error) {
	return "", backend.Errorf(backend.ErrUnavailable, "%s", unavailableReason)
}

// Ceilings fails with ErrUnavailable: this build has no device to
// measure.
func (*Backend) Ceilings(context.Context) (Ceilings, error) {
	return Ceilings{}, backend.Errorf(backend.ErrUnavailable, "%s", unavailableReason)
}
