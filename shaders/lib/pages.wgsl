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

// block_on reports whether the block mask keeps element (b, h, i, j):
// the entry of query row i's block and key j's in vars at P.blk (under
// F_BLOCKS; true without it). A block past the mask's (rows and keys
// past every sequence's) is off.
fn block_on(b: u32, h: u32, i: u32, j: u32) -> bool {
    if ((P.flags & F_BLOCKS) == 0u) {
        return true;
    }
    return vars[P.blk + b * P.blk_b + h * P.blk_h + (i / P.blk_size) * P.blk_r + (j / P.blk_size) * P.blk_c] != 0;
}

// blocks_any reports whether the block mask keeps some element of rows
// [i0, i1) and keys [j0, j1) of head h in batch b (true without
// F_BLOCKS): a tile of them it leaves wholly off is skipped. Both ranges
// are within the problem's rows and keys, and not empty.
fn blocks_any(b: u32, h: u32, i0: u32, i1: u32, j0: u32, j1: u32) -> bool {
    if ((P.flags & F_BLOCKS) == 0u) {
        return true;
    }
    let at = P.blk + b * P.blk_b + h * P.blk_h;
    for (var bi = i0 / P.blk_size; bi <= (i1 - 1u) / P.blk_size; bi++) {
        for (var bj = j0 / P.blk_size; bj <= (j1 - 1u) / P.blk_size; bj++) {
            if (vars[at + bi * P.blk_r + bj * P.blk_c] != 0) {
                return true;
            }
        }
    }
    return false;
}
