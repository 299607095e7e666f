package gpu

import "github.com/attn-go/attn/backend"

// Priority is the gpu backend's place in "auto": above the CPU's 0, so a
// working adapter is preferred where one is built in.
const Priority = 10

// Every build has New() (*Backend, error): the real backend with cgo, the
// stub that reports ErrUnavailable without it or with -tags nogpu.
func init() {
	backend.Register("gpu", Priority, func() (backend.Backend, error) {
		b, err := New()
		if err != nil {
			return nil, err // not a typed nil *Backend inside the interface
		}
		return b, nil
	})
}
