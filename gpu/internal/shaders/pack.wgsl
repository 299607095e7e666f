// pack: stores elements as halves, one u32 word an invocation.
//
//   o[w] = o_bits(src_at(2w)) | o_bits(src_at(2w + 1)) << 16     (elements of [lo, hi))
//
// The ops compute a half output in a float32 scratch (context.wgsl,
// fused.wgsl, fusedloop.wgsl and merge.wgsl write f32) and this kernel
// rounds it into the output's buffer. They cannot write halves
// themselves: WGSL has no 16-bit store, and two of their invocations may
// own the two halves of one word (the end of one row and the start of the
// next, with an odd Dv), so a read-modify-write of the word would race;
// here every word has one invocation. An element of a boundary word
// outside [lo, hi) keeps what the word holds (the buffer's neighbouring
// element, not this op's). src may be any Elem, widened exactly by its
// loader; copy.wgsl, which Backend.Copy runs, stores halves the same way
// (a word an invocation, o_bits). src_off may wrap (u32 arithmetic modulo 2³²): the
// first word's element 0 can lie before the bound window of src when lo
// is 1, and the kernel never reads an element outside [lo, hi). o_bits (lib/half.wgsl) rounds to nearest, ties
// to even, and stores a finite value beyond the half's range as ± its
// largest finite value, in integer arithmetic: WGSL lets pack2x16float
// round to either neighbour and leaves its result for a value out of
// binary16's range indeterminate.
//
// Bindings: P (Params), src (read), o (read_write).
// Grid: x = tiles of WG words in [0, nw).
// Limits: no loop.

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
    let w = gid.x;
    if (w >= P.nw) {
        return;
    }
    let e = 2u * w;
    let at = P.o_off + w;
    var word = 0u;
    if (e < P.lo || e + 1u >= P.hi) {
        word = o[at];
    }
    if (e >= P.lo && e < P.hi) {
        word = (word & 0xffff0000u) | o_bits(src_at(P.src_off + e));
    }
    if (e + 1u >= P.lo && e + 1u < P.hi) {
        word = (word & 0xffffu) | (o_bits(src_at(P.src_off + e + 1u)) << 16u);
    }
    o[at] = word;
}
