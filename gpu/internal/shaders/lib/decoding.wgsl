// The decoding kernels' shared parts (fuseddecode.wgsl, lanedecode.wgsl);
// their scores' masks are lib/score.wgsl's.

// Split is what a decoding workgroup works on (split_of): batch b, its
// first query head h0 and their KV head kh; query rows [row0, i1), i1
// the end of its rows in the sequence (row0 ≥ i1: none, and nothing else
// is set); the sequence's first packed row q0; the split's keys
// [jstart, jend) that its rows see, within [.., j1); whether K and V are
// paged; the KV head's element offsets ka and va in k and v, a dense or
// packed batch's first key row included (a paged cache's rows are looked
// up a key at a time, kv_row); its scales of K and V (kvsc: 1 without
// F_SCALES); ALiBi's position of the batch (apos); and whether the sink
// joins this split (the first only).
struct Split {
    b: u32,
    h0: u32,
    kh: u32,
    row0: u32,
    i1: u32,
    q0: u32,
    j1: u32,
    jstart: u32,
    jend: u32,
    paged: bool,
    ka: u32,
    va: u32,
    kvsc: vec2<f32>,
    apos: i32,
    sink: bool,
}

// split_of is workgroup wid's Split: HG heads from group wid.y, NQ
// query rows from tile wid.x, split wid.z of P.sk keys.
fn split_of(wid: vec3<u32>) -> Split {
    var w: Split;
    let bhw = P.bh0 + wid.y * HG;
    w.b = bhw / P.H;
    w.h0 = bhw % P.H;
    w.kh = w.h0 / P.G;
    w.row0 = P.i0 + wid.x * NQ;
    // A packed sequence's rows end at its own count.
    w.i1 = min(P.i1, seq_rows(w.b));
    if (w.row0 >= w.i1) {
        return w;
    }
    w.q0 = seq_q0(w.b);
    let j0 = P.j0 + wid.z * P.sk;
    w.j1 = min(P.j1, j0 + P.sk);
    // Keys outside [first row's lo, last row's hi) are seen by no row of
    // this workgroup.
    w.jstart = max(j0, key_range(w.b, w.row0).x);
    w.jend = min(w.j1, key_range(w.b, min(w.row0 + NQ, w.i1) - 1u).y);
    w.paged = (P.flags & F_PAGED) != 0u;
    w.ka = w.kh * P.k_h - P.k_base;
    w.va = w.kh * P.v_h - P.v_base;
    if (!w.paged) {
        w.ka += kv_row(w.b, 0u, P.k_b, P.k_r);
        w.va += kv_row(w.b, 0u, P.v_b, P.v_r);
    }
    w.kvsc = kv_scales(w.kh);
    w.apos = alibi_pos(w.b);
    w.sink = (P.flags & F_SINK) != 0u && wid.z == 0u;
    return w;
}

// store_o4 stores y as elements ec … ec+3 of the O row at element oa0,
// those below DV.
fn store_o4(oa0: u32, ec: u32, y: vec4<f32>) {
    let oa = oa0 + ec;
    o[oa] = y.x;
    if (ec + 1u < DV) { o[oa + 1u] = y.y; }
    if (ec + 2u < DV) { o[oa + 2u] = y.z; }
    if (ec + 3u < DV) { o[oa + 3u] = y.w; }
}
