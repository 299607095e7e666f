// Package wg is attn's one door to the WebGPU binding: every call the gpu
// backend makes into WebGPU goes through it, so that the rest of gpu/
// (plans, kernels, steps, pools, waits, timing) names none of the
// binding's types and another binding is one more implementation of this
// package, chosen by a build tag.
//
// Its API is what attn needs, not a mirror of WebGPU: an instance on the
// Vulkan backend; adapters described in gputypes terms; a Device that
// holds its queue; buffers with map and unmap; compute pipelines made
// from WGSL with an explicit bind group layout; bind groups; a command
// Encoder with one compute pass at a time; timestamp query sets; and
// requests (map, work done) waited for by polling (wait_*.go), whose
// completion, on wgpu-native, lands in memory no collection moves or
// frees.
//
// Three bindings implement it, one per build:
//
//   - oliverbestmann*.go and wait_oliverbestmann.go, the default:
//     github.com/oliverbestmann/webgpu v1.36.0, wgpu-native 29.0.1.1,
//     with a cgo shim over its handles for the few calls it lacks
//     (oliverbestmann_layout.go says which and how the handles are read;
//     include/ holds the binding's own webgpu.h and wgpu.h for the shim,
//     which a test holds byte for byte to the binding's);
//   - gowebgpu.go and wait_gowebgpu.go, with -tags gowebgpu:
//     github.com/rajveermalviya/go-webgpu/wgpu v0.17.1, wgpu-native 0.17;
//   - gogpu*.go and wait_gogpu.go, with -tags gogpu: github.com/gogpu/wgpu
//     v0.31.5, WebGPU in Go (Vulkan through goffi, WGSL compiled by
//     gogpu/naga), which builds without cgo.
//
// The two wgpu-native bindings share wgpunative.go and sleep_cgo.go; the
// gogpu binding sleeps without the C library (sleep_*_gogpu.go).
//
// The bindings sit behind one internal contract (binding.go): the files
// that do not depend on the binding (wg.go, adapter.go, limits.go,
// cmd.go, check.go, sleep.go) hold the types and the steps, such as a
// pipeline's creation stage by stage, the recording of a compute pass,
// the limits and features carried between gputypes and the binding, an
// adapter's description and the versions; a binding's files hold its
// calls, its tables of names and what only it does. Another binding is
// one more set of files that meets binding.go's interfaces, chosen by a
// build tag.
//
// The binding's own Adapter, Device and Buffer types, which the gpu
// package's public API (NewWithDevice, Import, Export) takes and gives,
// are NativeAdapter, NativeDevice and NativeBuffer: aliases of the
// binding's types in each build.
//
// The package builds with cgo or with -tags gogpu; otherwise, or with
// -tags nogpu, it is empty, as the gpu backend is then a stub.
package wg
