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
	// passes; wgpu-native 29's counts only with TimestampsInEncoders.
	TimestampQuery bool
	// TimestampsInEncoders and TimestampsInPasses are timestamps written
	// on a command encoder between passes and inside a compute pass
	// (wgpu-native's TimestampQueryInsideEncoders and
	// TimestampQueryInsidePasses).
	TimestampsInEncoders, TimestampsInPasses bool
	// SubgroupMinSize and SubgroupMaxSize bound the adapter's subgroup
	// size: both 0 where the binding does not report it, and
	// SubgroupSizeUnreported then says so ("not reported by the
	// adapter").
	SubgroupMinSize, SubgroupMaxSize uint32
	SubgroupSizeUnreported           string
	// SubgroupSizeMeasured: the sizes were measured by running a kernel
	// on the device (Backend.WebGPU), not reported by the binding.
	SubgroupSizeMeasured bool
	// CoopMatrix is what became of cooperative matrices (tensor cores),
	// which attn's kernels do not use yet.
	CoopMatrix CoopMatrix
}

// CoopMatrix is what became of wgpu-native's experimental
// cooperative-matrix feature (NativeFeature_CooperativeMatrix, wgpu 29;
// 8×8 f32 tiles on Vulkan): whether the adapter offers it and, where a
// device was asked for it, whether the device got it or wgpu-native's
// words for refusing it. New asks for it wherever the adapter offers it;
// DescribeAdapters asks each such adapter for a device with it alone,
// and releases the device.
type CoopMatrix struct {
	Offered, Requested, Granted bool
	Refused                     string // wgpu-native's words, when Requested and not Granted
}

// String says the outcome in a few words: "not offered", "granted",
// "refused: …", or "offered" where no device was asked for it.
func (c CoopMatrix) String() string {
	switch {
	case !c.Offered:
		return "not offered by the adapter"
	case c.Granted:
		return "offered and granted"
	case c.Requested:
		return "offered, refused: " + c.Refused
	}
	return "offered (not requested)"
}

// AdapterDescription is one GPU adapter as DescribeAdapters describes it:
// what Adapters reports and its WebGPU features.
type AdapterDescription struct {
	Info   backend.Info
	WebGPU WebGPUFeatures
}
