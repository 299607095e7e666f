// kv_row is where key j of batch b starts in k or v, before the KV head's
// term and the window's base, for an operand of batch (or page) stride sb
// and row stride sr:
//
//   dense    b·sb + j·sr
//   packed   (k0_b + j)·sr               under F_PACKK (sb = 0; k0_b = seq_k0(b), lib/seqs.wgsl)
//   paged    page·sb + (j mod P.page)·sr  under F_PAGED, page = vars[P.table + b·P.per_seq + j / P.page]
//
// in wrapping u32 arithmetic, as every index (see package shaders). The
// block table entries read are those of keys below batch b's length,
// which name pages of the pool; the rest (−1, say) are never read.
fn kv_row(b: u32, j: u32, sb: u32, sr: u32) -> u32 {
    if ((P.flags & F_PAGED) != 0u) {
        let page = u32(vars[P.table + b * P.per_seq + j / P.page]);
        return page * sb + (j % P.page) * sr;
    }
    return b * sb + (seq_k0(b) + j) * sr;
}

// kv_scales is KV head kh's scales of K (x) and V (y), from vars at P.scl
// under F_SCALES (backend.Scales: K's multiplies the scores' scale, V's
// the output), else 1.
fn kv_scales(kh: u32) -> vec2<f32> {
    if ((P.flags & F_SCALES) == 0u) {
        return vec2<f32>(1.0, 1.0);
    }
    return vec2<f32>(bitcast<f32>(vars[P.scl + 2u * kh]), bitcast<f32>(vars[P.scl + 2u * kh + 1u]));
}
