// copy: copies elements into a float32 buffer, one element an invocation.
//
//   o[o_off + i] = src_at(src_off + i)     (i in [0, n))
//
// Backend.Copy into a float32 buffer runs it (pack.wgsl copies into a
// half one): src is F32, F16 or BF16, widened exactly by its loader.
// A float32 value goes through a register unchanged, but a GPU may flush
// a subnormal to zero on the way (backend.Caps.FlushesSubnormals).
//
// Bindings: P (Params), src (read), o (read_write).
// Grid: x = tiles of WG elements in [0, n).
// Limits: no loop.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let i = gid.x;
    if (i >= P.n) {
        return;
    }
    o[P.o_off + i] = src_at(P.src_off + i);
}
