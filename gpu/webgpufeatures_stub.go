//go:build (!cgo && !gogpu) || nogpu

package gpu

import "github.com/attn-go/attn/backend"

// DescribeAdapters is Adapters with each adapter's WebGPU features. In
// this build there are none: it returns Adapters' error.
func DescribeAdapters() ([]AdapterDescription, error) {
	return nil, backend.Errorf(backend.ErrUnavailable, "%s", unavailableReason)
}

// WebGPU reports no features: New never returns a Backend in this build.
func (*Backend) WebGPU() WebGPUFeatures { return WebGPUFeatures{} }
