package gpu

import "github.com/attn-go/attn/backend"

// WebGPUFeatures is what attn's kernels can use of a GPU, or may come to:
// the WebGPU features that decide their variants and their timing, beside
// the gputypes set of backend.Info.Features, which names some of them and
// cannot name where timestamps may be written or the subgroup size.
type WebGPUFeatures struct {
	ShaderF16 bool // WGSL's f16 type ("shader-f16")
	Subgroups bool // subgroup operations (wgpu-native's Subgroup feature)
	// TimestampQuery is timestamp query sets, which attn writes between
	// passes; wgpu-native 27's counts only with TimestampsInEncoders.
	TimestampQuery bool
	// TimestampsInEncoders and TimestampsInPasses are timestamps written
	// on a command encoder between passes and inside a compute pass
	// (wgpu-native's TimestampQueryInsideEncoders and
	// TimestampQueryInsidePasses).
	TimestampsInEncoders, TimestampsInPasses bool
	// SubgroupMinSize and SubgroupMaxSize bound the adapter's subgroup
	// size: both 0 where the binding does not report it, and
	// SubgroupSizeUnreported then says so ("not reported by wgpu-native
	// 27").
	SubgroupMinSize, SubgroupMaxSize uint32
	SubgroupSizeUnreported           string
	// SubgroupSizeMeasured: the sizes were measured by running a kernel
	// on the device (Backend.WebGPU), not reported by the binding.
	SubgroupSizeMeasured bool
}

// AdapterDescription is one GPU adapter as DescribeAdapters describes it:
// what Adapters reports and its WebGPU features.
type AdapterDescription struct {
	Info   backend.Info
	WebGPU WebGPUFeatures
}
