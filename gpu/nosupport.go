package gpu

// unavailableReason says why New fails. The WGSL kernels and their
// go-webgpu driver are not part of this version of attn yet; "auto" falls
// back to the CPU backend with this reason.
const unavailableReason = "the WebGPU backend is not built into this version of attn (CPU only)"
