// merge: folds one chunk's partial result into the running one, exactly.
//
//   L  = log(exp(lse) + exp(plse))
//   O  = exp(lse − L)·O + exp(plse − L)·PO
//   lse = L
//
// (O, lse) hold the result over the keys seen so far and (PO, plse) that
// of the next chunk, both normalised, as fused.wgsl writes them. A side
// with LSE = −Inf saw no key and weighs nothing; when both are −Inf the
// row stays zeros with LSE −Inf.
//
// Bindings: P (Params), po, plse (read), o, lse (read_write).
// Grid: x = tiles of WG query rows in [i0, i1), y = heads bh0, bh0+1, ….
// Limits: Dv loop iterations per invocation.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let bh = P.bh0 + wid.y;
    let b = bh / P.H;
    let h = bh % P.H;
    let i = P.i0 + wid.x * WG + t;
    if (i >= P.i1) {
        return;
    }
    let la_at = b * P.lse_b + h * P.lse_h + i * P.lse_r - P.lse_base;
    let lb = plse[b * P.plse_b + h * P.plse_h + i * P.plse_r - P.plse_base];
    if (bitcast<u32>(lb) == NEG_INF) {
        return;
    }
    let la = lse[la_at];
    let oa = b * P.o_b + h * P.o_h + i * P.o_r - P.o_base;
    let pa = b * P.po_b + h * P.po_h + i * P.po_r - P.po_base;
    if (bitcast<u32>(la) == NEG_INF) {
        for (var d = 0u; d < P.Dv; d++) {
            o[oa + d] = po[pa + d];
        }
        lse[la_at] = lb;
        return;
    }
    let mx = max(la, lb);
    let wa = exp(la - mx);
    let wb = exp(lb - mx);
    let inv = 1.0 / (wa + wb);
    for (var d = 0u; d < P.Dv; d++) {
        o[oa + d] = (wa * o[oa + d] + wb * po[pa + d]) * inv;
    }
    lse[la_at] = mx + log(wa + wb);
}
