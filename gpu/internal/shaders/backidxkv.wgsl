// backidxkv: dK and dV under an index list (backend.Indices): for each
// key j of KV head kh and each query row i whose list names it (and
// whose position lets it see it), for each query head h = kh·G + hg of
// its group,
//
//   s_hij  = cap(scale·q_hi·k_j)
//   P_hij  = exp(s_hij − LSE[h,i])
//   dV[j] += P_hij·dO[h,i]
//   dS_hij = P_hij·(dO[h,i]·v_j − δ[h,i])·(1 − tanh²(s_hij/softcap))
//   dK[j] += scale·dS_hij·q_hi
//
// with the cap and its derivative under F_SOFTCAP, and δ from
// backdelta.wgsl. An index list takes no bias, keep-mask, ALiBi or block
// mask. The host inverts the caller's lists (a row's keys) into a list
// of rows for each key, rows ascending (plan.BackwardIndexLists), so an
// invocation owns its key's rows of dK and dV and adds its terms in one
// order: no atomics, the same bits on every run. A key no row names
// keeps the zero the host wrote; a row whose LSE is −Inf adds nothing.
//
// An invocation is key j of one KV head kh of batch b; it walks the
// entries [e0, e1) of its key's list (the host runs a dispatch for each
// such chunk, one after the other, each adding to what the last left)
// and, for each, the G query heads of the group. The list binding holds
// at slot s the word where s's entries start (and at s + 1 where they
// end), s = kh·lh·lt + kb + j, kb = b·Nk or, under F_PACKK, seq_k0(b);
// each entry is a query row of batch b. Keys at or past the batch's
// count (key_count, under F_RANGE) are another sequence's.
//
// q, k, v and dout are read a row at a time through lib/backrows.wgsl,
// which widens half operands (BackIdxKVConsts' Q, K, V, Dout); dk and dv
// are f32. Packed sequences: lib/seqs.wgsl.
//
// Bindings: P (Params), q, k, v, dout, vars, list (read), dk, dv
// (read_write). vars holds the rows' LSE and δ (lib/backvars.wgsl).
// Grid: x = tiles of WG keys in [j0, j1), y = the KV heads of heads
// bh0 … (G query heads each).
// Workgroup memory: none.
// Limits: the loops over the head dims are unrolled (a Template kernel),
// so an invocation runs at most (e1 − e0)·(1 + G) loop iterations; on a
// CPU-type adapter the host bounds e1 − e0 to keep that within the loop
// cap.

// store_dk and store_dv add the first n (1 … 4) elements of x to dk
// and dv from element at.
fn store_dk(at: u32, x: vec4<f32>, n: u32) {
    dk[at] += x.x;
    if (n > 1u) { dk[at + 1u] += x.y; }
    if (n > 2u) { dk[at + 2u] += x.z; }
    if (n > 3u) { dk[at + 3u] += x.w; }
}

fn store_dv(at: u32, x: vec4<f32>, n: u32) {
    dv[at] += x.x;
    if (n > 1u) { dv[at + 1u] += x.y; }
    if (n > 2u) { dv[at + 2u] += x.z; }
    if (n > 3u) { dv[at + 3u] += x.w; }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let kvh = P.H / P.G;
    let bk = P.bh0 / P.G + wid.y;
    let b = bk / kvh;
    let kh = bk % kvh;
    let j = P.j0 + wid.x * WG + t;
    if (j >= P.j1 || j >= key_count(b)) {
        return;
    }
    let k0 = seq_k0(b);
    var kb = b * P.Nk;
    if ((P.flags & F_PACKK) != 0u) {
        kb = k0;
    }
    let slot = kh * P.lh * P.lt + kb + j;
    let first = list[slot];
    let n = list[slot + 1u] - first;
    let ea = first + min(P.e0, n);
    let eb = first + min(P.e1, n);
    if (ea >= eb) {
        return;
    }
    var kr: array<vec4<f32>, D4>;
    var vr: array<vec4<f32>, DV4>;
    var gk: array<vec4<f32>, D4>;
    var gv: array<vec4<f32>, DV4>;
    let ka = b * P.k_b + kh * P.k_h + (k0 + j) * P.k_r - P.k_base;
    let va = b * P.v_b + kh * P.v_h + (k0 + j) * P.v_r - P.v_base;
{{- range $d := seq .D4}}
    kr[{{$d}}] = row_k(ka, {{$d}}u);
{{- end}}
{{- range $e := seq .DV4}}
    vr[{{$e}}] = row_v(va, {{$e}}u);
{{- end}}
    let capped = (P.flags & F_SOFTCAP) != 0u;
    let q0 = seq_q0(b);
    for (var e = ea; e < eb; e++) {
        let r = q0 + list[e];
        for (var hg = 0u; hg < P.G; hg++) {
            let h = kh * P.G + hg;
            let ld = row_ld(b, h, r);
            let l = ld.x;
            if (bitcast<u32>(l) == NEG_INF) {
                continue;
            }
            let dl = ld.y;
            let qa = b * P.q_b + h * P.q_h + r * P.q_r - P.q_base;
            var s = 0.0;
{{- range $d := seq .D4}}
            let q{{$d}} = row_q(qa, {{$d}}u);
            s += dot(q{{$d}}, kr[{{$d}}]);
{{- end}}
            let c = soft_cap(P.scale * s);
            let p = exp(c - l);
            let ga = b * P.dout_b + h * P.dout_h + r * P.dout_r - P.dout_base;
            var dp = 0.0;
{{- range $e := seq .DV4}}
            let g{{$e}} = row_g(ga, {{$e}}u);
            dp += dot(g{{$e}}, vr[{{$e}}]);
            gv[{{$e}}] += p * g{{$e}};
{{- end}}
            var ds = p * (dp - dl);
            if (capped) {
                let th = c / P.softcap;
                ds *= 1.0 - th * th;
            }
{{- range $d := seq .D4}}
            gk[{{$d}}] += ds * q{{$d}};
{{- end}}
        }
    }
    let da = b * P.dk_b + kh * P.dk_h + (k0 + j) * P.dk_r - P.dk_base;
{{- range $d := seq .D4}}
    store_dk(da + {{mul $d 4}}u, gk[{{$d}}] * P.scale, {{min (sub $.D (mul $d 4)) 4}}u);
{{- end}}
    let dva = b * P.dv_b + kh * P.dv_h + (k0 + j) * P.dv_r - P.dv_base;
{{- range $e := seq .DV4}}
    store_dv(dva + {{mul $e 4}}u, gv[{{$e}}], {{min (sub $.DV (mul $e 4)) 4}}u);
{{- end}}
}
