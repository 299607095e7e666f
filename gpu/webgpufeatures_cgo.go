//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/wg"
	"github.com/gogpu/gputypes"
)

// DescribeAdapters is Adapters with each adapter's WebGPU features.
func DescribeAdapters() ([]AdapterDescription, error) {
	inst, err := newInstance()
	if err != nil {
		return nil, err
	}
	defer inst.Release()
	var out []AdapterDescription
	for _, a := range inst.Adapters() {
		enc, pass := a.TimestampsInside()
		lo, hi := a.SubgroupSize()
		out = append(out, AdapterDescription{
			Info:   describeAdapter(a),
			WebGPU: webGPUFeatures(a.Features(), enc, pass, lo, hi, a.ProbeCoopMatrix()),
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
// than the adapter's, and the adapter's subgroup sizes. Where the device
// has subgroups and the binding does not report their sizes
// (wgpu-native 29 on lavapipe), the first call measures them by running
// a kernel (subgroups.wgsl: the sizes one workgroup of 256 invocations runs in)
// and says so (SubgroupSizeMeasured). Zero once the backend is closed.
func (b *Backend) WebGPU() WebGPUFeatures {
	f, ok := b.webGPU()
	if !ok || !f.Subgroups || f.SubgroupMaxSize != 0 {
		return f
	}
	b.sgSizes.once.Do(func() {
		// A failure leaves the sizes unreported, as the binding does.
		b.sgSizes.lo, b.sgSizes.hi, _ = b.measureSubgroups(context.Background())
	})
	if b.sgSizes.hi != 0 {
		f.SubgroupMinSize, f.SubgroupMaxSize = b.sgSizes.lo, b.sgSizes.hi
		f.SubgroupSizeUnreported, f.SubgroupSizeMeasured = "", true
	}
	return f
}

// webGPU is WebGPU as the binding reports it; false once the backend is
// closed.
func (b *Backend) webGPU() (WebGPUFeatures, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed || b.dev == nil {
		return WebGPUFeatures{}, false
	}
	enc, pass := b.dev.TimestampsInside()
	var lo, hi uint32
	if b.adapter != nil {
		lo, hi = b.adapter.SubgroupSize()
	}
	return webGPUFeatures(b.dev.Features(), enc, pass, lo, hi, b.dev.CoopMatrix()), true
}

func webGPUFeatures(fs gputypes.Features, enc, pass bool, lo, hi uint32, coop wg.CoopMatrix) WebGPUFeatures {
	f := WebGPUFeatures{
		ShaderF16:            fs.Contains(gputypes.FeatureShaderF16),
		Subgroups:            fs.Contains(gputypes.FeatureSubgroupOperations),
		TimestampQuery:       fs.Contains(gputypes.FeatureTimestampQuery),
		TimestampsInEncoders: enc,
		TimestampsInPasses:   pass,
		SubgroupMinSize:      lo,
		SubgroupMaxSize:      hi,
		CoopMatrix:           CoopMatrix(coop),
	}
	if hi == 0 {
		f.SubgroupSizeUnreported = wg.SubgroupSizeUnreported
	}
	return f
}
