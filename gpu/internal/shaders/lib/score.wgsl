// The fused kernels' masked score, one (row, key) at a time
// (fuseddecode.wgsl, lanedecode.wgsl, fusedtile.wgsl).

// masked_score is the score of query row i of head h (batch b) for key
// j from their scaled dot product dp: −Inf where the row may not see the
// key (seen false, j outside the row's span of keys, a keep of 0, a
// block that is off, a −Inf bias), else cap(dp) + bias − ALiBi's term,
// each under its flag.
fn masked_score(b: u32, h: u32, i: u32, j: u32, seen: bool, span: vec2<u32>, dp: f32, apos: i32) -> f32 {
    let ninf = bitcast<f32>(NEG_INF);
    if (!seen || j < span.x || j >= span.y) {
        return ninf;
    }
    if ((P.flags & F_KEEP) != 0u && keep[b * P.keep_b + h * P.keep_h + i * P.keep_r + j * P.keep_c - P.keep_base] == 0.0) {
        return ninf;
    }
    if ((P.flags & F_BLOCKS) != 0u && !block_on(b, h, i, j)) {
        return ninf;
    }
    var s = soft_cap(dp);
    if ((P.flags & F_BIAS) != 0u) {
        let bv = bias_at(b * P.bias_b + h * P.bias_h + i * P.bias_r + j * P.bias_c - P.bias_base);
        s = select(s + bv, ninf, bitcast<u32>(bv) == NEG_INF);
    }
    return s + alibi_slope(h) * alibi_dist(apos + i32(i), j);
}
