// subgroups: each of a workgroup's first n invocations writes the size
// of the subgroup it runs in, so that the host learns the adapter's
// subgroup sizes where the binding does not report them (wgpu-native 27
// does not: gpu.Backend.WebGPU). Only a device with subgroups compiles
// it.
//
//   o[t] = subgroup_size of invocation t        (t in [0, n))
//
// Bindings: P (Params), o (read_write).
// Grid: one workgroup.
// Limits: no loop.

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_index) t: u32, @builtin(subgroup_size) sgs: u32) {
    if (t < P.n) {
        o[t] = f32(sgs);
    }
}
