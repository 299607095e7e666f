// backkv: dK and dV, attention's backward pass over tiles of keys
// (FlashAttention-2's outer loop): for each key j of the tile and each
// query row i of query head h = kv·G + hg that sees it,
//
//   s_ij  = cap(scale·q_i·k_j) + bias[i,j] − m_h·|a_b + i − j|
//   P_ij  = exp(s_ij − LSE[i])
//   dV[j] += P_ij·dO[i]
//   dS_ij = P_ij·(dO[i]·v_j − δ[i])·(1 − tanh²(scale·q_i·k_j/softcap))
//   dK[j] += scale·dS_ij·q_i
//
// with the cap, its derivative (the last factor), the bias and ALiBi
// under their flags, and δ from backdelta.wgsl. A key the keep-mask
// hides (0), a −Inf bias hides or a block of the block mask leaves off
// (F_BLOCKS, lib/blocks.wgsl) has P_ij = 0, as in the forward
// (fused.wgsl). A row whose LSE is −Inf (it sees no key and has no
// sink) adds nothing. Nothing is atomic: a workgroup owns its keys'
// rows of dK and dV, and the host runs one dispatch for each query head
// of a group and each chunk of query rows, one after the other, each
// adding to what the last left (the host zeroes dK and dV first, or
// their float32 scratch when they are halves).
//
// A workgroup owns WG keys [ja, jb) of one KV head (one invocation a
// key, its K and V rows and its sums in registers) and streams the
// query rows [i0, i1) of its query head through workgroup memory, TQ at
// a time: scale·Q and dO, each row's LSE and δ and the keys it sees
// (key_range). A tile of rows none of which sees a key of [ja, jb) by
// position (causal, window, key length), or whose blocks with [ja, jb)
// the block mask leaves all off, is not loaded.
//
// q, k, v, dout and bias are read through their loaders (q_at …), which
// widen half operands (BackKVConsts' Q, K, V, Dout, Bias); dk and dv are
// f32. Packed sequences: query rows under F_PACKQ (batch b's from
// seq_q0(b), seq_rows(b) of them), keys under F_PACKK (from seq_k0(b),
// key_count(b) of them: a key past it is the next sequence's, neither
// read nor written), lib/seqs.wgsl and lib/vars.wgsl.
//
// Bindings: P (Params), q, k, v, dout, bias, vars (read), dk, dv
// (read_write). Of vars (lib/backvars.wgsl) the rows' LSE and δ are
// always read, the variant data, the sequences, the block mask and the
// keep-mask only under a flag, as is bias.
// Grid: x = tiles of WG keys in [j0, j1), y = the KV heads of heads
// bh0 … (G query heads each).
// Workgroup memory: TQ·(D4 + DV4 + 1) vec4s.
// Limits: the loops over the head dims are unrolled (a Template kernel:
// lavapipe then keeps the rows in registers, and counts no iteration of
// them), so an invocation runs about (i1 − i0)·(1 + (D4 + DV4 + 1)/WG)
// loop iterations, the row loop and the staging; on a CPU-type adapter
// the host bounds the rows of a dispatch to keep that within the loop
// cap.

var<workgroup> qs: array<vec4<f32>, QS>;
var<workgroup> gs: array<vec4<f32>, GS>;
// ls holds each staged row's LSE and δ, rk the keys [x, y) it sees
// (none when its LSE is −Inf, or past the rows).
var<workgroup> ls: array<vec2<f32>, TQ>;
var<workgroup> rk: array<vec2<u32>, TQ>;

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
    let bh = P.bh0 + wid.y * P.G + P.hg;
    let b = bh / P.H;
    let h = bh % P.H;
    let kh = h / P.G;
    let ja = P.j0 + wid.x * WG;
    let jb = min(P.j1, ja + WG);
    let j = ja + t;
    let live = j < jb && j < key_count(b);
    // A packed sequence's rows end at its own count, and its rows and
    // keys start where vars says.
    let q0 = seq_q0(b);
    let iend = min(P.i1, seq_rows(b));
    let k0 = seq_k0(b);
    let has_bias = (P.flags & F_BIAS) != 0u;
    let has_keep = (P.flags & F_KEEP) != 0u;
    let has_blocks = (P.flags & F_BLOCKS) != 0u;
    let ninf = bitcast<f32>(NEG_INF);

    var kr: array<vec4<f32>, D4>;
    var vr: array<vec4<f32>, DV4>;
    var gk: array<vec4<f32>, D4>;
    var gv: array<vec4<f32>, DV4>;
    if (live) {
        let ka = b * P.k_b + kh * P.k_h + (k0 + j) * P.k_r - P.k_base;
        let va = b * P.v_b + kh * P.v_h + (k0 + j) * P.v_r - P.v_base;
{{- range $d := seq .D4}}
        kr[{{$d}}] = load_k(ka, {{$d}}u);
{{- end}}
{{- range $e := seq .DV4}}
        vr[{{$e}}] = load_v(va, {{$e}}u);
{{- end}}
    }
    let capped = (P.flags & F_SOFTCAP) != 0u;
    let slope = alibi_slope(h);
    let apos = alibi_pos(b);
    let qa = b * P.q_b + h * P.q_h - P.q_base;
    let ga = b * P.dout_b + h * P.dout_h - P.dout_base;
    for (var it = P.i0; it < iend; it += TQ) {
        let ie = min(it + TQ, iend);
        // The keys rows [it, ie) may see lie in [lo of the first, hi of
        // the last) (key_range is monotone in the row).
        if (key_range(b, it).x >= jb || key_range(b, ie - 1u).y <= ja) {
            continue;
        }
        // Nor do they where their blocks with the workgroup's keys are
        // all off (every invocation asks with the same arguments, so the
        // barriers below stay in uniform control flow).
        if (has_blocks && !blocks_any(b, h, it, ie, ja, jb)) {
            continue;
        }
        workgroupBarrier();
        for (var x = t; x < QS; x += WG) {
            let i = it + x / D4;
            var qv = vec4<f32>(0.0);
            if (i < ie) {
                qv = load_q(qa + (q0 + i) * P.q_r, x % D4) * P.scale;
            }
            qs[x] = qv;
        }
        for (var x = t; x < GS; x += WG) {
            let i = it + x / DV4;
            var g = vec4<f32>(0.0);
            if (i < ie) {
                g = load_g(ga + (q0 + i) * P.dout_r, x % DV4);
            }
            gs[x] = g;
        }
        for (var x = t; x < TQ; x += WG) {
            let i = it + x;
            var r = vec2<u32>(0u, 0u);
            var ld = vec2<f32>(0.0, 0.0);
            if (i < ie) {
                let l = row_ld(b, h, q0 + i);
                if (bitcast<u32>(l.x) != NEG_INF) {
                    r = key_range(b, i);
                    ld = l;
                }
            }
            rk[x] = r;
            ls[x] = ld;
        }
        workgroupBarrier();
        if (live) {
            for (var r = 0u; r < ie - it; r++) {
                let rg = rk[r];
                if (j < rg.x || j >= rg.y) {
                    continue;
                }
                // An off block's key gets no gradient from the row, as
                // the forward gave it no weight.
                if (has_blocks && !block_on(b, h, it + r, j)) {
                    continue;
                }
                let qa = r * D4;
                let gb = r * DV4;
                var s = 0.0;
{{- range $d := seq .D4}}
                s += dot(qs[qa + {{$d}}u], kr[{{$d}}]);
{{- end}}
                let c = soft_cap(s);
                let i = it + r;
                var y = slope * alibi_dist(apos + i32(i), j);
                if (has_bias) {
                    y += bias_at(b * P.bias_b + h * P.bias_h + i * P.bias_r + j * P.bias_c - P.bias_base);
                }
                if (has_keep && bitcast<f32>(vars[P.keep_at + b * P.keep_b + h * P.keep_h + i * P.keep_r + j * P.keep_c]) == 0.0) {
                    y = ninf;
                }
                let p = exp(c + y - ls[r].x);
                var dp = 0.0;
{{- range $e := seq .DV4}}
                let g{{$e}} = gs[gb + {{$e}}u];
                dp += dot(g{{$e}}, vr[{{$e}}]);
                gv[{{$e}}] += p * g{{$e}};
{{- end}}
                var ds = p * (dp - ls[r].y);
                if (capped) {
                    let th = c / P.softcap;
                    ds *= 1.0 - th * th;
                }
{{- range $d := seq .D4}}
                gk[{{$d}}] += ds * qs[qa + {{$d}}u];
{{- end}}
            }
        }
    }
    if (!live) {
        return;
    }
    let ka = b * P.dk_b + kh * P.dk_h + (k0 + j) * P.dk_r - P.dk_base;
{{- range $d := seq .D4}}
    store_dk(ka + {{mul $d 4}}u, gk[{{$d}}], {{min (sub $.D (mul $d 4)) 4}}u);
{{- end}}
    let va = b * P.dv_b + kh * P.dv_h + (k0 + j) * P.dv_r - P.dv_base;
{{- range $e := seq .DV4}}
    store_dv(va + {{mul $e 4}}u, gv[{{$e}}], {{min (sub $.DV (mul $e 4)) 4}}u);
{{- end}}
}
