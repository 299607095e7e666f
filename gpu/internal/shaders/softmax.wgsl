// softmax: row-wise, numerically stable, in place on S, in two passes.
//
//   P[i,j] = exp(S[i,j] − M_i) / L_i    for the keys row i sees, 0 elsewhere
//   M_i = max_j S[i,j],  L_i = Σ_j exp(S[i,j] − M_i),  LSE_i = M_i + log L_i
//
// with the sink logit of the row's head joining M and L as one more seen
// score when F_SINK is set.
//
// A row is cut into chunks of CW = WG·PER columns. Entry point stats: a
// workgroup reduces one chunk of one row to its (max, sum) pair with an
// online softmax per invocation and a tree reduction in workgroup memory,
// and stores the pair in st. Entry point normalize (dispatched after all
// stats): a workgroup combines the row's nc pairs into (M, L) and rewrites
// its chunk as weights; chunk 0 writes the LSE when flagged. Keys a row
// may not see (outside key_range under F_RANGE, keep-mask 0, a score of
// −Inf) weigh 0; a row that sees none becomes zeros with LSE −Inf, or the
// sink logit under F_SINK.
//
// Bindings: P (Params), keep, vars (read), s, st, lse (read_write).
// Grid: x = chunks of the row range [j0, j1) (j0 a multiple of CW),
// y = query rows i0 + y, z = heads bh0 + z.
// Workgroup memory: 2·WG floats.
// Limits: PER + log2 WG loop iterations per invocation in stats,
// nc + PER in normalize; the host bounds nc.

var<workgroup> red_m: array<f32, WG>;
var<workgroup> red_l: array<f32, WG>;

// seen_score returns the score of key j of the row at sa (keep-mask row
// at ka) and whether the row sees it.
fn seen_score(sa: u32, ka: u32, j: u32, kr: vec2<u32>) -> vec2<f32> {
    if (j < kr.x || j >= kr.y) {
        return vec2<f32>(0.0, 0.0);
    }
    if ((P.flags & F_KEEP) != 0u) {
        if (keep[ka + j * P.keep_c] == 0.0) {
            return vec2<f32>(0.0, 0.0);
        }
    }
    let x = s[sa + j];
    if (bitcast<u32>(x) == NEG_INF) {
        return vec2<f32>(0.0, 0.0);
    }
    return vec2<f32>(x, 1.0);
}

// combine merges two (max, sum) pairs; a sum of 0 means "no key".
fn combine(a: vec2<f32>, b: vec2<f32>) -> vec2<f32> {
    if (b.y == 0.0) {
        return a;
    }
    if (a.y == 0.0) {
        return b;
    }
    let mx = max(a.x, b.x);
    return vec2<f32>(mx, a.y * exp(a.x - mx) + b.y * exp(b.x - mx));
}

@compute @workgroup_size(WG)
fn stats(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let bh = P.bh0 + wid.z;
    let b = bh / P.H;
    let h = bh % P.H;
    let i = P.i0 + wid.y;
    let c = P.j0 / CW + wid.x;
    let kr0 = key_range(b, i);
    let kr = vec2<u32>(kr0.x, min(kr0.y, min((c + 1u) * CW, P.Nk)));
    let sa = b * P.s_b + h * P.s_h + i * P.s_r - P.s_base;
    let ka = b * P.keep_b + h * P.keep_h + i * P.keep_r - P.keep_base;
    var ml = vec2<f32>(0.0, 0.0);
    for (var e = 0u; e < PER; e++) {
        let x = seen_score(sa, ka, c * CW + e * WG + t, kr);
        if (x.y != 0.0) {
            ml = combine(ml, vec2<f32>(x.x, 1.0));
        }
    }
    red_m[t] = ml.x;
    red_l[t] = ml.y;
    for (var stride = WG / 2u; stride > 0u; stride /= 2u) {
        workgroupBarrier();
        if (t < stride) {
            let r = combine(vec2<f32>(red_m[t], red_l[t]), vec2<f32>(red_m[t + stride], red_l[t + stride]));
            red_m[t] = r.x;
            red_l[t] = r.y;
        }
    }
    if (t == 0u) {
        let at = b * P.st_b + h * P.st_h + i * P.st_r + 2u * c - P.st_base;
        st[at] = red_m[0];
        st[at + 1u] = red_l[0];
    }
}

@compute @workgroup_size(WG)
fn normalize(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let bh = P.bh0 + wid.z;
    let b = bh / P.H;
    let h = bh % P.H;
    let i = P.i0 + wid.y;
    let c = P.j0 / CW + wid.x;
    let ta = b * P.st_b + h * P.st_h + i * P.st_r - P.st_base;
    var ml = vec2<f32>(0.0, 0.0);
    for (var cc = 0u; cc < P.nc; cc++) {
        ml = combine(ml, vec2<f32>(st[ta + 2u * cc], st[ta + 2u * cc + 1u]));
    }
    if ((P.flags & F_SINK) != 0u) {
        ml = combine(ml, vec2<f32>(sink_logit(h), 1.0));
    }
    let end = min((c + 1u) * CW, P.Nk);
    let kr0 = key_range(b, i);
    let kr = vec2<u32>(kr0.x, min(kr0.y, end));
    let sa = b * P.s_b + h * P.s_h + i * P.s_r - P.s_base;
    let ka = b * P.keep_b + h * P.keep_h + i * P.keep_r - P.keep_base;
    var inv = 0.0;
    if (ml.y > 0.0) {
        inv = 1.0 / ml.y;
    }
    for (var e = 0u; e < PER; e++) {
        let j = c * CW + e * WG + t;
        if (j >= end) {
            break;
        }
        let x = seen_score(sa, ka, j, kr);
        var w = 0.0;
        if (x.y != 0.0) {
            w = exp(x.x - ml.x) * inv;
        }
        s[sa + j] = w;
    }
    if (c == 0u && t == 0u && (P.flags & F_LSE) != 0u) {
        var r = bitcast<f32>(NEG_INF);
        if (ml.y > 0.0) {
            r = ml.x + log(ml.y);
        }
        lse[b * P.lse_b + h * P.lse_h + i * P.lse_r - P.lse_base] = r;
    }
}
