// merge: folds the partial results of P.parts key ranges into the running
// one, exactly.
//
//   M   = max(lse, plse_0, …, plse_{parts−1})
//   L   = M + log(exp(lse − M) + Σ_z exp(plse_z − M))
//   O   = exp(lse − L)·O + Σ_z exp(plse_z − L)·PO_z
//   lse = L
//
// (O, lse) hold the result over the keys seen so far and (PO_z, plse_z),
// z < parts, those of further key ranges (the splits of one dispatch of
// fused.wgsl, side by side po_z and plse_z elements apart), all
// normalised, as fused.wgsl writes them. Under P.init (O, lse) hold
// nothing yet: the parts are all of the row's first keys, and the row is
// written from them alone. A side with LSE = −Inf saw no key and weighs
// nothing; when every side is −Inf the row is zeros with LSE −Inf (left
// as it is when not init).
//
// Packed query rows (F_PACKQ): batch b's rows start at seq_q0(b) in o,
// lse, po and plse and end at seq_rows(b) (lib/seqs.wgsl).
//
// Bindings: P (Params), po, plse, vars (read), o, lse (read_write); vars
// is only read under F_PACKQ.
// Grid: x = tiles of WG query rows in [i0, i1), y = heads bh0, bh0+1, ….
// Limits: parts·(Dv + 2) + Dv loop iterations per invocation; the host
// bounds parts.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let bh = P.bh0 + wid.y;
    let b = bh / P.H;
    let h = bh % P.H;
    let i = P.i0 + wid.x * WG + t;
    if (i >= min(P.i1, seq_rows(b))) {
        return;
    }
    let r = seq_q0(b) + i;
    let la_at = b * P.lse_b + h * P.lse_h + r * P.lse_r - P.lse_base;
    let pl_at = b * P.plse_b + h * P.plse_h + r * P.plse_r - P.plse_base;
    let oa = b * P.o_b + h * P.o_h + r * P.o_r - P.o_base;
    let pa = b * P.po_b + h * P.po_h + r * P.po_r - P.po_base;
    let ninf = bitcast<f32>(NEG_INF);
    let init = P.init != 0u;
    var la = ninf;
    if (!init) {
        la = lse[la_at];
    }
    var mx = la;
    for (var z = 0u; z < P.parts; z++) {
        let lb = plse[pl_at + z * P.plse_z];
        if (bitcast<u32>(lb) != NEG_INF) {
            if (bitcast<u32>(mx) == NEG_INF) {
                mx = lb;
            } else {
                mx = max(mx, lb);
            }
        }
    }
    if (bitcast<u32>(mx) == NEG_INF) {
        // No side saw a key.
        if (init) {
            for (var d = 0u; d < P.Dv; d++) {
                o[oa + d] = 0.0;
            }
            lse[la_at] = ninf;
        }
        return;
    }
    var sum = 0.0;
    if (bitcast<u32>(la) != NEG_INF) {
        sum = exp(la - mx);
    }
    for (var z = 0u; z < P.parts; z++) {
        let lb = plse[pl_at + z * P.plse_z];
        if (bitcast<u32>(lb) != NEG_INF) {
            sum += exp(lb - mx);
        }
    }
    let inv = 1.0 / sum;
    // O's own weight first (0 when it saw nothing or holds nothing yet),
    // then each part's, accumulated in place.
    var wa = 0.0;
    if (bitcast<u32>(la) != NEG_INF) {
        wa = exp(la - mx) * inv;
    }
    for (var d = 0u; d < P.Dv; d++) {
        o[oa + d] = select(0.0, wa * o[oa + d], wa != 0.0);
    }
    for (var z = 0u; z < P.parts; z++) {
        let lb = plse[pl_at + z * P.plse_z];
        if (bitcast<u32>(lb) == NEG_INF) {
            continue;
        }
        let wb = exp(lb - mx) * inv;
        let pz = pa + z * P.po_z;
        for (var d = 0u; d < P.Dv; d++) {
            o[oa + d] += wb * po[pz + d];
        }
    }
    lse[la_at] = mx + log(sum);
}
