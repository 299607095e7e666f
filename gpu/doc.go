// Package gpu is attn's WebGPU backend: WGSL compute shaders run through
// go-webgpu on a Vulkan adapter (Mesa lavapipe on CPU-only machines).
//
// Importing it registers the backend "gpu" with backend.Register, at a
// priority above the CPU's, so backend.Open("auto") prefers it. In this
// version the package holds only the fallback: New returns an error
// wrapping backend.ErrUnavailable, and "auto" reports it and opens the CPU
// backend instead.
package gpu
