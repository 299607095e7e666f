package backendtest

import "github.com/attn-go/attn/backend"

// WithoutHalf is be as a backend without half storage: Caps().Half is
// false and a half Alloc is ErrUnsupported, as on a backend that has
// none; every other method is be's. Tests of code that must serve both
// kinds of backend (kernels' host path for halves, bench's unavailable
// points) run it beside be.
func WithoutHalf(be backend.Backend) backend.Backend { return withoutHalf{be} }

type withoutHalf struct{ backend.Backend }

func (w withoutHalf) Caps() backend.Caps {
	c := w.Backend.Caps()
	c.Half = false
	return c
}

func (w withoutHalf) Alloc(t backend.DType, n int) (backend.Buffer, error) {
	if t.Half() {
		return nil, backend.Errorf(backend.ErrUnsupported, "%s without halves: alloc of %d %v elements", w.Name(), n, t)
	}
	return w.Backend.Alloc(t, n)
}
