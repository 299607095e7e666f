// Package shaders will hold attn's WGSL compute kernels (scores, softmax,
// context, fused, merge), embedded with go:embed and specialised from Go
// constants — go-webgpu v0.17.1 cannot set WGSL override constants, so
// tile sizes, workgroup size and head dim are written into the source by
// the same constants that size each dispatch.
//
// It holds no kernel yet: the WebGPU backend that runs them is the next
// piece of work, and until it lands package gpu reports itself
// unavailable.
package shaders
