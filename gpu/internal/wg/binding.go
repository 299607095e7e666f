//go:build (cgo || gogpu) && !nogpu

package wg

// The shared files (wg.go, adapter.go, limits.go, cmd.go, check.go,
// sleep.go) hold the types and the steps that do not depend on the
// binding; a binding's files hold its calls. What the shared files ask of
// a binding is written out here, so that a third binding is one more set
// of files that satisfies it, and the build of one that does not fails
// on the assertions below, naming what is missing.
//
// A binding's files supply:
//
//   - aliases naming its handle types: NativeAdapter, NativeDevice and
//     NativeBuffer, which the gpu package's API takes and gives, and
//     nativeModule, nativeGroupLayout, nativePipelineLayout,
//     nativePipeline, nativeGroup, nativeQuerySet, nativeEncoder,
//     nativePass and nativeCommands, which only wg holds;
//   - the calls of deviceCalls and encoderCalls, one binding call each;
//   - bindingName, BindingModule, bindingVersion and linked, for
//     Versions; bindingCheck, for Check;
//   - nativeLimits, convertLimits and featureMap, its limits and features
//     between gputypes and its own types, which the shared tests check;
//   - the rest of the package's API, which each binding answers in its
//     own way or with one call of its own: Instance and Device with
//     their methods, Adapter's Info, Limits, Features, RequestDevice and
//     other capabilities, Buffer's Unmap, Encoder's copies and
//     timestamps, Reference, Same, WrapDevice, SetLogLevel,
//     DefaultLimits, the constants that say what the binding can do
//     (MaxQueries, CompilesF16, …), and the waits (wait_*.go).
//
// A buffer's own calls (bufferCalls) are the binding's: the two
// wgpu-native bindings share theirs (wgpunative.go); gogpu/wgpu spells
// them otherwise and has no Destroy. The shared files also call a few
// methods of the binding's handle types: Release on every handle, and a
// pass's SetPipeline, SetBindGroup and DispatchWorkgroups (passCalls). A
// binding whose handle types spell them otherwise, or lack them, names
// wrappers of its own as the handle types (gogpu.go's encoder and pass);
// NativeBuffer, which the gpu package's API gives out, is never wrapped.

// deviceCalls are the binding's calls that cmd.go makes on a device: the
// shared code turns their results into wg's types and, for a pipeline,
// says at which stage the creation failed.
type deviceCalls interface {
	// createBuffer may answer nil and no error, which CreateBuffer
	// reports.
	createBuffer(label string, size uint64, usage Usage) (*NativeBuffer, error)
	createModule(label, wgsl string) (*nativeModule, error)
	// createGroupLayout lays out one bind group of a buffer of each type
	// in binds, at slots 0, 1, …, seen by compute shaders.
	createGroupLayout(label string, binds []BindingType) (*nativeGroupLayout, error)
	createPipelineLayout(label string, bgl *nativeGroupLayout) (*nativePipelineLayout, error)
	createPipeline(label string, layout *nativePipelineLayout, module *nativeModule, entry string) (*nativePipeline, error)
	// createGroup binds entries[i] at slot i of bgl.
	createGroup(bgl *nativeGroupLayout, entries []Entry) (*nativeGroup, error)
	createTimestamps(label string, count uint32) (*nativeQuerySet, error)
	createEncoder() (*nativeEncoder, error)
}

// encoderCalls are the binding's calls that cmd.go makes on a command
// encoder. endPass reports the pass's validation error, if any; the
// shared code releases the pass after it.
type encoderCalls interface {
	beginPass() *nativePass
	endPass(pass *nativePass) error
	finish() (*nativeCommands, error)
}

// bufferCalls are a Buffer's calls on the binding's buffer.
type bufferCalls interface {
	Size() uint64
	Usage() Usage
	// Release drops this handle (and the reference to the device that a
	// binding's handle may hold); the buffer lives on while another
	// handle or the device's work holds it.
	Release()
	// Destroy frees the buffer's memory (after the work submitted with
	// it) and releases the handle.
	Destroy()
	// DestroyOnly frees the buffer's memory and keeps the handle (tests:
	// mapping or binding a destroyed buffer).
	DestroyOnly()
	// Mapped is size bytes of the mapped buffer from offset; valid until
	// Unmap.
	Mapped(offset, size uint64) []byte
	Unmap() error
}

// passCalls are the calls cmd.go makes on a compute pass between its
// begin and end.
type passCalls interface {
	SetPipeline(pipeline *nativePipeline)
	SetBindGroup(index uint32, group *nativeGroup, dynamicOffsets []uint32)
	DispatchWorkgroups(x, y, z uint32)
	Release()
}

var (
	_ deviceCalls  = (*Device)(nil)
	_ encoderCalls = (*Encoder)(nil)
	_ bufferCalls  = (*Buffer)(nil)
	_ passCalls    = (*nativePass)(nil)
)
