// backidxq: dQ under an index list (backend.Indices): for each query row
// i of head h and each key j its list names (and its position lets it
// see),
//
//   s_ij  = cap(scale·q_i·k_j)
//   P_ij  = exp(s_ij − LSE[i])
//   dS_ij = P_ij·(dO[i]·v_j − δ[i])·(1 − tanh²(s_ij/softcap))
//   dQ[i] += scale·Σ_j dS_ij·k_j
//
// as in backidxkv.wgsl, GQA's head h reading KV head h / G. The host
// writes each row's keys as the caller listed them, less the −1 entries
// and the keys its position hides (plan.BackwardIndexLists), so the sum
// runs in the list's order. A row whose LSE is −Inf adds nothing.
//
// An invocation is query row i of head bh; it walks the entries [e0, e1)
// of its row's list (the host runs a dispatch for each such chunk, one
// after the other, each adding to what the last left), reading each
// key's rows of K and V where they lie. The list binding holds at slot s
// the word where s's entries start (and at s + 1 where they end), s =
// kh·lh·lt + qb + i, qb = b·Nq or, under F_PACKQ, seq_q0(b); each entry
// is a key of batch b.
//
// Bindings: P (Params), q, k, v, dout, vars, list (read), dq
// (read_write). vars holds the rows' LSE and δ (lib/backvars.wgsl).
// Grid: x = tiles of WG rows in [i0, i1), y = heads bh0, bh0+1, ….
// Workgroup memory: none.
// Limits: the loops over the head dims are unrolled, so an invocation
// runs at most e1 − e0 loop iterations; on a CPU-type adapter the host
// bounds e1 − e0 to keep that within the loop cap.

// store_dq adds the first n (1 … 4) elements of x to dq from element
// at.
fn store_dq(at: u32, x: vec4<f32>, n: u32) {
    dq[at] += x.x;
    if (n > 1u) { dq[at + 1u] += x.y; }
    if (n > 2u) { dq[at + 2u] += x.z; }
    if (n > 3u) { dq[at + 3u] += x.w; }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let bh = P.bh0 + wid.y;
    let b = bh / P.H;
    let h = bh % P.H;
    let kh = h / P.G;
    let i = P.i0 + wid.x * WG + t;
    if (i >= min(P.i1, seq_rows(b))) {
        return;
    }
    let q0 = seq_q0(b);
    let r = q0 + i;
    let ld = row_ld(b, h, r);
    let l = ld.x;
    if (bitcast<u32>(l) == NEG_INF) {
        return;
    }
    var qb = b * P.Nq;
    if ((P.flags & F_PACKQ) != 0u) {
        qb = q0;
    }
    let slot = kh * P.lh * P.lt + qb + i;
    let first = list[slot];
    let n = list[slot + 1u] - first;
    let ea = first + min(P.e0, n);
    let eb = first + min(P.e1, n);
    if (ea >= eb) {
        return;
    }
    let dl = ld.y;
    var qr: array<vec4<f32>, D4>;
    var gr: array<vec4<f32>, DV4>;
    var acc: array<vec4<f32>, D4>;
    let qa = b * P.q_b + h * P.q_h + r * P.q_r - P.q_base;
{{- range $d := seq .D4}}
    qr[{{$d}}] = row_q(qa, {{$d}}u);
{{- end}}
    let ga = b * P.dout_b + h * P.dout_h + r * P.dout_r - P.dout_base;
{{- range $e := seq .DV4}}
    gr[{{$e}}] = row_g(ga, {{$e}}u);
{{- end}}
    let capped = (P.flags & F_SOFTCAP) != 0u;
    let k0 = seq_k0(b);
    let kb = b * P.k_b + kh * P.k_h - P.k_base;
    let vb = b * P.v_b + kh * P.v_h - P.v_base;
    for (var e = ea; e < eb; e++) {
        let j = k0 + list[e];
        let ka = kb + j * P.k_r;
        let va = vb + j * P.v_r;
        var s = 0.0;
{{- range $d := seq .D4}}
        let k{{$d}} = row_k(ka, {{$d}}u);
        s += dot(qr[{{$d}}], k{{$d}});
{{- end}}
        let c = soft_cap(P.scale * s);
        let p = exp(c - l);
        var dp = 0.0;
{{- range $e := seq .DV4}}
        dp += dot(gr[{{$e}}], row_v(va, {{$e}}u));
{{- end}}
        var ds = p * (dp - dl);
        if (capped) {
            let th = c / P.softcap;
            ds *= 1.0 - th * th;
        }
{{- range $d := seq .D4}}
        acc[{{$d}}] += ds * k{{$d}};
{{- end}}
    }
    let da = b * P.dq_b + h * P.dq_h + r * P.dq_r - P.dq_base;
{{- range $d := seq .D4}}
    store_dq(da + {{mul $d 4}}u, acc[{{$d}}] * P.scale, {{min (sub $.D (mul $d 4)) 4}}u);
{{- end}}
}
