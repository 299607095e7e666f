//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file says what a caller's device must have (NewWithDevice).

// Need is one device limit attn's kernels need: the device's value must
// be at least Min.
type Need struct {
	Limit string // as WebGPU names it: maxStorageBuffersPerShaderStage …
	Min   uint64
}

// DeviceNeeds lists the limits a device must have for NewWithDevice.
// They come from the kernels of package shaders (the storage buffers one
// binds, its uniform) and the workgroups this package dispatches (their
// invocations, their sizes, the workgroup memory of the staged kernels'
// fixed tiles); the fused kernels size their tiles to the device.
func DeviceNeeds() []Need {
	storage, uniform, bindings := 0, 0, 0
	for _, k := range shaders.All {
		s, u := 0, 0
		for _, bd := range k.Bindings {
			if bd.Access == shaders.Uniform {
				u++
			} else {
				s++
			}
		}
		storage, uniform, bindings = max(storage, s), max(uniform, u), max(bindings, len(k.Bindings))
	}
	mmWG := (plan.MmTile / plan.MmReg) // scores.wgsl and context.wgsl: mmWG × mmWG invocations
	invocations := max(mmWG*mmWG, plan.SmWG, plan.FusedWG, plan.MergeWG, packWG, plan.DecodeWG)
	sizeX := max(mmWG, plan.SmWG, plan.FusedWG, plan.MergeWG, packWG, plan.DecodeWG)
	// scores.wgsl keeps a tile of Q and of K, context.wgsl of P and of V:
	// two plan.MmTile × plan.MmStep float32 tiles.
	wgMem := 2 * plan.MmTile * plan.MmStep * 4
	return []Need{
		{"maxBindGroups", 1},
		{"maxBindingsPerBindGroup", uint64(bindings)},
		{"maxStorageBuffersPerShaderStage", uint64(storage)},
		{"maxUniformBuffersPerShaderStage", uint64(uniform)},
		{"maxComputeInvocationsPerWorkgroup", uint64(invocations)},
		{"maxComputeWorkgroupSizeX", uint64(sizeX)},
		{"maxComputeWorkgroupSizeY", uint64(mmWG)},
		{"maxComputeWorkgroupSizeZ", 1},
		{"maxComputeWorkgroupStorageSize", uint64(wgMem)},
		{"maxComputeWorkgroupsPerDimension", 1},
		// A dummy operand is a 256-byte binding; Params need a few words.
		{"maxStorageBufferBindingSize", 256},
		{"maxUniformBufferBindingSize", 256},
		{"maxBufferSize", stagingBytes}, // the staging buffer Read copies through
	}
}
