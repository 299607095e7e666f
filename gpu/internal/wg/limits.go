//go:build (cgo || gogpu) && !nogpu

package wg

// Limits and features between gputypes' types and a binding's own, for
// every binding that names them as wgpu-native's webgpu.h does.

import (
	"reflect"

	"github.com/gogpu/gputypes"
)

// limitNames are the limits that gputypes.Limits and a binding's limits
// struct both name alike, which copyLimits carries: all of gputypes' but
// MaxPushConstantSize, which a binding carries itself (wgpu 29 calls it
// MaxImmediateSize), MaxBindGroupsPlusVertexBuffers, which neither
// binding's struct has, and MaxNonSamplerBindings, which go-webgpu's
// lacks and which a request through oliverbestmann/webgpu leaves
// undefined (DefaultLimits has it 0, which would bound it). A list, not
// every field both structs have, so that a field either module adds is
// not asked for as 0 unseen.
var limitNames = [...]string{
	"MaxTextureDimension1D", "MaxTextureDimension2D", "MaxTextureDimension3D", "MaxTextureArrayLayers",
	"MaxBindGroups", "MaxBindingsPerBindGroup",
	"MaxDynamicUniformBuffersPerPipelineLayout", "MaxDynamicStorageBuffersPerPipelineLayout",
	"MaxSampledTexturesPerShaderStage", "MaxSamplersPerShaderStage", "MaxStorageBuffersPerShaderStage",
	"MaxStorageTexturesPerShaderStage", "MaxUniformBuffersPerShaderStage",
	"MaxUniformBufferBindingSize", "MaxStorageBufferBindingSize",
	"MinUniformBufferOffsetAlignment", "MinStorageBufferOffsetAlignment",
	"MaxVertexBuffers", "MaxBufferSize", "MaxVertexAttributes", "MaxVertexBufferArrayStride",
	"MaxInterStageShaderVariables", "MaxColorAttachments", "MaxColorAttachmentBytesPerSample",
	"MaxComputeWorkgroupStorageSize", "MaxComputeInvocationsPerWorkgroup",
	"MaxComputeWorkgroupSizeX", "MaxComputeWorkgroupSizeY", "MaxComputeWorkgroupSizeZ",
	"MaxComputeWorkgroupsPerDimension",
}

// copyLimits sets each of limitNames in *dst to its value in *src, one
// of them a gputypes.Limits and the other a binding's limits struct. It
// panics where either lacks one or types it otherwise (a test runs it
// both ways for each binding).
func copyLimits[D, S any](dst *D, src *S) {
	d, s := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for _, name := range limitNames {
		d.FieldByName(name).Set(s.FieldByName(name))
	}
}

// featureSet is the gputypes set of the features in fs that m, a
// binding's table, pairs with a flag; the others are dropped.
func featureSet[N comparable](m map[N]gputypes.Feature, fs []N) gputypes.Features {
	var set gputypes.Features
	for _, f := range fs {
		if g, ok := m[f]; ok {
			set.Insert(g)
		}
	}
	return set
}

// featureNames is the binding's names for fs, as m pairs them: a device
// request's list. A feature that m does not pair is not asked for.
func featureNames[N comparable](m map[N]gputypes.Feature, fs []gputypes.Feature) []N {
	var names []N
	for _, f := range fs {
		for n, g := range m {
			if g == f {
				names = append(names, n)
			}
		}
	}
	return names
}
