//go:build cgo && !nogpu && !gowebgpu && !gogpu

package wg

// Limits and features between the binding's types and gputypes', and
// WebGPU's default limits written out (the binding's are all undefined).

import (
	"slices"

	"github.com/gogpu/gputypes"
	"github.com/oliverbestmann/webgpu/wgpu"
)

func timestampsInside(fs []wgpu.FeatureName) (encoders, passes bool) {
	for _, f := range fs {
		switch f {
		case wgpu.NativeFeatureTimestampQueryInsideEncoders:
			encoders = true
		case wgpu.NativeFeatureTimestampQueryInsidePasses:
			passes = true
		}
	}
	return encoders, passes
}

// featuresOf lists the features wg knows of (featureMap's, where
// timestamps may be written, cooperative matrices) that has reports.
// Asking one at a time, where the binding's GetFeatures hands the list
// to free() (memory wgpu-native owns, and on an empty list a pointer no
// allocator gave).
func featuresOf(has func(wgpu.FeatureName) bool) []wgpu.FeatureName {
	var fs []wgpu.FeatureName
	for n := range featureMap {
		if has(n) {
			fs = append(fs, n)
		}
	}
	for _, n := range []wgpu.FeatureName{wgpu.NativeFeatureTimestampQueryInsideEncoders,
		wgpu.NativeFeatureTimestampQueryInsidePasses, wgpu.NativeFeatureCooperativeMatrix} {
		if has(n) {
			fs = append(fs, n)
		}
	}
	return fs
}

// DefaultLimits is WebGPU's default limits (wgpu's Limits::default; the
// binding's DefaultLimits is all "undefined").
func DefaultLimits() gputypes.Limits {
	return gputypes.Limits{
		MaxTextureDimension1D: 8192, MaxTextureDimension2D: 8192, MaxTextureDimension3D: 2048,
		MaxTextureArrayLayers: 256, MaxBindGroups: 4, MaxBindingsPerBindGroup: 1000,
		MaxDynamicUniformBuffersPerPipelineLayout: 8, MaxDynamicStorageBuffersPerPipelineLayout: 4,
		MaxSampledTexturesPerShaderStage: 16, MaxSamplersPerShaderStage: 16,
		MaxStorageBuffersPerShaderStage: 8, MaxStorageTexturesPerShaderStage: 4,
		MaxUniformBuffersPerShaderStage: 12, MaxUniformBufferBindingSize: 64 << 10,
		MaxStorageBufferBindingSize: 128 << 20, MinUniformBufferOffsetAlignment: 256,
		MinStorageBufferOffsetAlignment: 256, MaxVertexBuffers: 8, MaxBufferSize: 256 << 20,
		MaxVertexAttributes: 16, MaxVertexBufferArrayStride: 2048, MaxInterStageShaderVariables: 16,
		MaxColorAttachments: 8, MaxColorAttachmentBytesPerSample: 32,
		MaxComputeWorkgroupStorageSize: 16384, MaxComputeInvocationsPerWorkgroup: 256,
		MaxComputeWorkgroupSizeX: 256, MaxComputeWorkgroupSizeY: 256, MaxComputeWorkgroupSizeZ: 64,
		MaxComputeWorkgroupsPerDimension: 65535,
	}
}

// nativeLimits is l as the binding's device request takes it: the
// binding's defaults, all undefined, overwritten by limitNames' and by
// push constants, where l asks for some.
func nativeLimits(l gputypes.Limits) wgpu.Limits {
	n := wgpu.DefaultLimits()
	copyLimits(&n, &l)
	if l.MaxPushConstantSize != 0 {
		// wgpu 29 renamed push constants immediates.
		n.MaxImmediateSize = l.MaxPushConstantSize
	}
	return n
}

// convertLimits copies every limit gputypes has a field for and the
// binding reports: not MaxBindGroupsPlusVertexBuffers (the binding's
// Limits has no field for it), nor a device's
// MaxColorAttachmentBytesPerSample (its Device.GetLimits leaves it out);
// neither bounds compute. Push constants are immediates in wgpu 29.
func convertLimits(n wgpu.Limits) gputypes.Limits {
	var l gputypes.Limits
	copyLimits(&l, &n)
	l.MaxPushConstantSize = n.MaxImmediateSize
	return l
}

// featureMap pairs each wgpu feature with its gputypes flag; the others
// are dropped. TimestampQuery counts only with timestamps inside
// encoders (convertFeatures), where attn writes them.
var featureMap = map[wgpu.FeatureName]gputypes.Feature{
	wgpu.FeatureNameDepthClipControl:                       gputypes.FeatureDepthClipControl,
	wgpu.FeatureNameDepth32FloatStencil8:                   gputypes.FeatureDepth32FloatStencil8,
	wgpu.FeatureNameTimestampQuery:                         gputypes.FeatureTimestampQuery,
	wgpu.FeatureNameTextureCompressionBC:                   gputypes.FeatureTextureCompressionBC,
	wgpu.FeatureNameTextureCompressionETC2:                 gputypes.FeatureTextureCompressionETC2,
	wgpu.FeatureNameTextureCompressionASTC:                 gputypes.FeatureTextureCompressionASTC,
	wgpu.FeatureNameIndirectFirstInstance:                  gputypes.FeatureIndirectFirstInstance,
	wgpu.FeatureNameShaderF16:                              gputypes.FeatureShaderF16,
	wgpu.FeatureNameRG11B10UfloatRenderable:                gputypes.FeatureRG11B10UfloatRenderable,
	wgpu.FeatureNameBGRA8UnormStorage:                      gputypes.FeatureBGRA8UnormStorage,
	wgpu.FeatureNameFloat32Filterable:                      gputypes.FeatureFloat32Filterable,
	wgpu.NativeFeaturePipelineStatisticsQuery:              gputypes.FeaturePipelineStatisticsQuery,
	wgpu.NativeFeatureImmediates:                           gputypes.FeaturePushConstants,
	wgpu.NativeFeatureTextureAdapterSpecificFormatFeatures: gputypes.FeatureTextureAdapterSpecificFormatFeatures,
	wgpu.NativeFeatureMultiDrawIndirectCount:               gputypes.FeatureMultiDrawIndirectCount,
	wgpu.NativeFeatureShaderF64:                            gputypes.FeatureShaderFloat64,
	wgpu.NativeFeatureVertexAttribute64bit:                 gputypes.FeatureVertexAttribute64bit,
	wgpu.NativeFeatureSubgroup:                             gputypes.FeatureSubgroupOperations,
	wgpu.NativeFeatureSubgroupBarrier:                      gputypes.FeatureSubgroupBarrier,
}

// convertFeatures converts a feature list to a gputypes set.
func convertFeatures(fs []wgpu.FeatureName) gputypes.Features {
	set := featureSet(featureMap, fs)
	if !slices.Contains(fs, wgpu.NativeFeatureTimestampQueryInsideEncoders) {
		set.Remove(gputypes.FeatureTimestampQuery)
	}
	return set
}
