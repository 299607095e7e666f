// copy: copies ranges of elements into o, each rounded to o's storage,
// the ranges read from a table: a row of workgroups a range.
//
//   element e of o from unit o_off's first = src_at(src_off + e)     (e in [lo, hi), each range)
//
// Backend.Copy runs it for every pair of float32 and half buffers (and
// Fused to widen a half Q): src is F32, F16 or BF16, widened exactly by
// its loader. Range r of the dispatch is table entry P.first + r, the
// four words vars[4(P.first + r)] … +3: o_off, src_off, lo, hi. A unit
// is one element of o where O is F32 (OW = 1): element o_off + e takes
// src's element src_off + e, and a float32 value goes through a register
// unchanged, but a GPU may flush a subnormal to zero on the way
// (backend.Caps.FlushesSubnormals). Where O is F16 or BF16 (OW = 2) a
// unit is a u32 word of o, each word one invocation, as in pack.wgsl
// (which says why an op cannot write halves itself): word o_off + w
// holds elements 2w and 2w + 1 counted from the range's first word, those
// in [lo, hi) rounded by o_bits (lib/half.wgsl), the others kept; lo is
// 0 or 1, and src_off may wrap (u32 arithmetic modulo 2³²) as pack.wgsl's.
// Two ranges that share a word of o must not be in one dispatch (the
// host puts them in two, which WebGPU orders): each would write the word
// back with its own half only.
//
// The host runs it two ways (gpu/copy.go says why): the small ranges of
// a call (the rows of a gather or a scatter) many a dispatch, a
// workgroup a range (grid.x = 1), each invocation looping over the
// range's units WG apart; a large range in dispatches of its own
// (grid.y = 1), a workgroup a WG units, each invocation one unit.
//
// Bindings: P (Params), src (read), vars (read), o (read_write): vars
// the table, as u32 words.
// Grid: x = workgroups a range, y = the P.n ranges from table entry
// P.first.
// Limits: an invocation loops ⌈units / (WG · grid.x)⌉ times; the host
// keeps that to 16 (gpu's copyLoop).

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
    if (wid.y >= P.n) {
        return;
    }
    let at = 4u * (P.first + wid.y);
    let o_off = vars[at];
    let src_off = vars[at + 1u];
    let lo = vars[at + 2u];
    let hi = vars[at + 3u];
    let units = (hi + OW - 1u) / OW;
    for (var u = lo / OW + wid.x * WG + lid.x; u < units; u += nwg.x * WG) {
{{- if eq .OW 1}}
        o[o_off + u] = src_at(src_off + u);
{{- else}}
        let e = 2u * u;
        var word = 0u;
        if (e < lo || e + 1u >= hi) {
            word = o[o_off + u];
        }
        if (e >= lo && e < hi) {
            word = (word & 0xffff0000u) | o_bits(src_at(src_off + e));
        }
        if (e + 1u >= lo && e + 1u < hi) {
            word = (word & 0xffffu) | (o_bits(src_at(src_off + e + 1u)) << 16u);
        }
        o[o_off + u] = word;
{{- end}}
    }
}
