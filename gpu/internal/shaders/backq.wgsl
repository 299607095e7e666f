// backq: dQ, attention's backward pass over tiles of query rows: for
// each query row i and each key j it sees in the dispatch's keys
// [j0, j1),
//
//   s_ij  = cap(scale·q_i·k_j) + bias[i,j] − m_h·|a_b + i − j|
//   P_ij  = exp(s_ij − LSE[i])
//   dS_ij = P_ij·(dO[i]·v_j − δ[i])·(1 − tanh²(scale·q_i·k_j/softcap))
//   dQ[i] += scale·Σ_j dS_ij·k_j
//
// with the cap, its derivative, the bias, the keep-mask, the block mask
// and ALiBi under their flags, as in backkv.wgsl, and δ from
// backdelta.wgsl. A row whose LSE is −Inf adds nothing. The host zeroes
// dQ (or its float32 scratch when it is halves) and runs one dispatch
// for each chunk of keys, one after the other, each adding to what the
// last left.
//
// A workgroup owns NR = WG/L query rows of one head bh (L of its WG
// invocations a row, its scale·q, dO and sums in registers) and streams
// the keys some row of it sees through workgroup memory, TK keys and
// values at a time, as fusedloop.wgsl does: a tile whose blocks with the
// workgroup's rows the block mask leaves all off is not loaded. Under
// L > 1 (SG) a row's lanes share its head dims and sum their products
// by shuffles, and run every key of a tile, as backkv.wgsl's do. GQA: head h reads KV head
// h / G. Operands are read through their loaders and packed sequences
// found as in backkv.wgsl.
//
// Bindings: P (Params), q, k, v, dout, bias, vars (read), dq
// (read_write). Of vars (lib/backvars.wgsl) the rows' LSE and δ are
// always read, the variant data, the sequences, the block mask and the
// keep-mask only under a flag, as is bias.
// Grid: x = tiles of NR rows in [i0, i1), y = heads bh0, bh0+1, ….
// Workgroup memory: TK·(D4 + DV4) vec4s.
// L divides D4, DV4 and every subgroup size (the host's plan).
// Limits: the loops over the head dims are unrolled, as in backkv.wgsl,
// so an invocation runs about (j1 − j0)·(1 + (D4 + DV4)/WG) loop
// iterations, the key loop and the staging; on a CPU-type adapter the
// host bounds the keys of a dispatch to keep that within the loop cap.

var<workgroup> ks: array<vec4<f32>, KS>;
var<workgroup> vs: array<vec4<f32>, VS>;

// store_dq adds the first n (1 … 4) elements of x to dq from element
// at.
fn store_dq(at: u32, x: vec4<f32>, n: u32) {
    dq[at] += x.x;
    if (n > 1u) { dq[at + 1u] += x.y; }
    if (n > 2u) { dq[at + 2u] += x.z; }
    if (n > 3u) { dq[at + 3u] += x.w; }
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32
{{- if .SG}}, @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) sgs: u32, @builtin(subgroup_id) sgid: u32{{end}}) {
    let bh = P.bh0 + wid.y;
    let b = bh / P.H;
    let h = bh % P.H;
    let kh = h / P.G;
    let row0 = P.i0 + wid.x * NR;
    // A packed sequence's rows end at its own count, and its rows and
    // keys start where vars says.
    let iend = min(P.i1, seq_rows(b));
    if (row0 >= iend) {
        return;
    }
{{- if .SG}}
    let u = sgid * sgs + sid;
{{- else}}
    let u = t;
{{- end}}
    // This invocation's row, and its lane of the row's L.
    let i = row0 + u / L;
    let lane = u % L;
    let live = i < iend;
    let q0 = seq_q0(b);
    let k0 = seq_k0(b);
    // Keys outside [first row's lo, last row's hi) are seen by no row of
    // this tile.
    let jstart = max(P.j0, key_range(b, row0).x);
    let rend = min(row0 + NR, iend);
    let jend = min(P.j1, key_range(b, rend - 1u).y);
    let has_bias = (P.flags & F_BIAS) != 0u;
    let has_keep = (P.flags & F_KEEP) != 0u;
    let has_blocks = (P.flags & F_BLOCKS) != 0u;
    let ninf = bitcast<f32>(NEG_INF);
    let bias_row = b * P.bias_b + h * P.bias_h + i * P.bias_r - P.bias_base;
    let keep_row = P.keep_at + b * P.keep_b + h * P.keep_h + i * P.keep_r;

    var qr: array<vec4<f32>, CK>;
    var gr: array<vec4<f32>, CV>;
    var acc: array<vec4<f32>, CK>;
    var lo = 0u;
    var lim = 0u;
    var l = 0.0;
    var dl = 0.0;
    if (live) {
        let ld = row_ld(b, h, q0 + i);
        l = ld.x;
        if (bitcast<u32>(l) != NEG_INF) {
            let kr = key_range(b, i);
            lo = kr.x;
            lim = min(P.j1, kr.y);
            dl = ld.y;
        }
        let qa = b * P.q_b + h * P.q_h + (q0 + i) * P.q_r - P.q_base;
{{- range $d := seq .CK}}
        qr[{{$d}}] = load_q(qa, {{$d}}u * L + lane) * P.scale;
{{- end}}
        let ga = b * P.dout_b + h * P.dout_h + (q0 + i) * P.dout_r - P.dout_base;
{{- range $e := seq .CV}}
        gr[{{$e}}] = load_g(ga, {{$e}}u * L + lane);
{{- end}}
    }
    let capped = (P.flags & F_SOFTCAP) != 0u;
    let slope = alibi_slope(h);
    let pos = alibi_pos(b) + i32(i);
    let ka = b * P.k_b + kh * P.k_h - P.k_base;
    let va = b * P.v_b + kh * P.v_h - P.v_base;
    for (var jt = jstart; jt < jend; jt += TK) {
        // Every invocation asks with the same arguments, so the barriers
        // below stay in uniform control flow.
        if (has_blocks && !blocks_any(b, h, row0, rend, jt, min(jt + TK, jend))) {
            continue;
        }
        workgroupBarrier();
        for (var x = t; x < KS; x += WG) {
            let j = jt + x / D4;
            var kv = vec4<f32>(0.0);
            if (j < jend) {
                kv = load_k(ka + (k0 + j) * P.k_r, x % D4);
            }
            ks[x] = kv;
        }
        for (var x = t; x < VS; x += WG) {
            let j = jt + x / DV4;
            var vv = vec4<f32>(0.0);
            if (j < jend) {
                vv = load_v(va + (k0 + j) * P.v_r, x % DV4);
            }
            vs[x] = vv;
        }
        workgroupBarrier();
{{- if .SG}}
        // Every key of the tile, those the row does not see with P = 0.
        for (var j = jt; j < min(jt + TK, jend); j++) {
            var sees = j >= lo && j < lim;
{{- else}}
        let jlast = min(jt + TK, lim);
        for (var j = max(jt, lo); j < jlast; j++) {
            var sees = true;
{{- end}}
            // An off block's key gets no gradient, as the forward gave
            // it no weight.
            if (has_blocks && sees) {
                sees = block_on(b, h, i, j);
            }
{{- if not .SG}}
            if (!sees) {
                continue;
            }
{{- end}}
            let ka = (j - jt) * D4 + lane;
            let vb = (j - jt) * DV4 + lane;
            var s = 0.0;
{{- range $d := seq .CK}}
            let k{{$d}} = ks[ka + {{$d}}u * L];
            s += dot(qr[{{$d}}], k{{$d}});
{{- end}}
{{- range $w := halves .L}}
            s += subgroupShuffleXor(s, {{$w}}u);
{{- end}}
            let c = soft_cap(s);
            var y = slope * alibi_dist(pos, j);
            if (has_bias) {
                y += bias_at(bias_row + j * P.bias_c);
            }
            if (has_keep && bitcast<f32>(vars[keep_row + j * P.keep_c]) == 0.0) {
                y = ninf;
            }
            let p = select(0.0, exp(c + y - l), sees);
            var dp = 0.0;
{{- range $e := seq .CV}}
            dp += dot(gr[{{$e}}], vs[vb + {{$e}}u * L]);
{{- end}}
{{- range $w := halves .L}}
            dp += subgroupShuffleXor(dp, {{$w}}u);
{{- end}}
            var ds = p * (dp - dl);
            if (capped) {
                let th = c / P.softcap;
                ds *= 1.0 - th * th;
            }
{{- range $d := seq .CK}}
            acc[{{$d}}] += ds * k{{$d}};
{{- end}}
        }
    }
    if (!live) {
        return;
    }
    let qa = b * P.dq_b + h * P.dq_h + (q0 + i) * P.dq_r - P.dq_base;
{{- range $d := seq .CK}}
    {
        let e = ({{$d}}u * L + lane) * 4u;
        store_dq(qa + e, acc[{{$d}}] * P.scale, min(D - e, 4u));
    }
{{- end}}
}
