// A block mask (backend.BlockMask) as vars holds it from P.blk under
// F_BLOCKS (gpu/internal/plan's BlockWords): one i32 a block of
// P.blk_size query rows by P.blk_size keys, nonzero on, strided by
// P.blk_b, P.blk_h, P.blk_r and P.blk_c. Its own file, not pages.wgsl's,
// so that the backward kernels, which read no paged cache, read it
// without the paged cache's Params. Rows and keys are a sequence's own
// (from 0), as the key range's.

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
