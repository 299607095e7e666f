//go:build cgo && !nogpu

package gpu

import (
	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/wg"
	"github.com/gogpu/gputypes"
)

// DescribeAdapters is Adapters with each adapter's WebGPU features.
func DescribeAdapters() ([]AdapterDescription, error) {
	inst := newInstance()
	defer inst.Release()
	var out []AdapterDescription
	for _, a := range inst.Adapters() {
		enc, pass := a.TimestampsInside()
		lo, hi := a.SubgroupSize()
		out = append(out, AdapterDescription{
			Info:   describeAdapter(a),
			WebGPU: webGPUFeatures(a.Features(), enc, pass, lo, hi),
		})
		a.Release()
	}
	if len(out) == 0 {
		return nil, backend.Errorf(backend.ErrUnavailable, "%s", noAdapterHint)
	}
	return out, nil
}

// WebGPU is the WebGPU features of the backend's device: those the
// backend asked the adapter for (Info().Features), which may be fewer
// than the adapter's, and the adapter's subgroup size. Zero once the
// backend is closed.
func (b *Backend) WebGPU() WebGPUFeatures {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.dev == nil {
		return WebGPUFeatures{}
	}
	enc, pass := b.dev.TimestampsInside()
	var lo, hi uint32
	if b.adapter != nil {
		lo, hi = b.adapter.SubgroupSize()
	}
	return webGPUFeatures(b.dev.Features(), enc, pass, lo, hi)
}

func webGPUFeatures(fs gputypes.Features, enc, pass bool, lo, hi uint32) WebGPUFeatures {
	f := WebGPUFeatures{
		ShaderF16:            fs.Contains(gputypes.FeatureShaderF16),
		Subgroups:            fs.Contains(gputypes.FeatureSubgroupOperations),
		TimestampQuery:       fs.Contains(gputypes.FeatureTimestampQuery),
		TimestampsInEncoders: enc,
		TimestampsInPasses:   pass,
		SubgroupMinSize:      lo,
		SubgroupMaxSize:      hi,
	}
	if hi == 0 {
		f.SubgroupSizeUnreported = wg.SubgroupSizeUnreported
	}
	return f
}
