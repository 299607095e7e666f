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
// A workgroup owns NK = WG/L keys [ja, jb) of one KV head (L of its WG
// invocations a key, its K and V rows and its sums in registers)
// and streams the query rows [i0, i1) of its query head through
// workgroup memory, TQ at a time: scale·Q and dO, each row's LSE and δ
// and the keys it sees (key_range). Under L > 1 (SG) a key's L lanes
// are adjacent invocations of one subgroup, lane l holding the head
// dims' vec4s l, l + L, … (CK of K's, CV of V's: a key's rows and sums
// in 1/L of the registers, which a GPU would otherwise spill at D =
// 128), and the lanes' shares of each row's q·k and dO·v are summed by
// subgroupShuffleXor; every key's lanes then run every row of a tile,
// one its masks hide with P = 0, so that the shuffles stay in uniform
// control flow. A tile of rows none of which sees a key of [ja, jb) by
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
// Grid: x = tiles of NK keys in [j0, j1), y = the KV heads of heads
// bh0 … (G query heads each).
// Workgroup memory: TQ·(D4 + DV4 + 1) vec4s.
// Limits: L divides D4 and DV4 and every subgroup size (the host's
// plan).
// The loops over the head dims are unrolled (a Template kernel:
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
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32
{{- if .SG}}, @builtin(subgroup_invocation_id) sid: u32, @builtin(subgroup_size) sgs: u32, @builtin(subgroup_id) sgid: u32{{end}}) {
    let bh = P.bh0 + wid.y * P.G + P.hg;
    let b = bh / P.H;
    let h = bh % P.H;
    let kh = h / P.G;
    let ja = P.j0 + wid.x * NK;
    let jb = min(P.j1, ja + NK);
{{- if .SG}}
    let u = sgid * sgs + sid;
{{- else}}
    let u = t;
{{- end}}
    // This invocation's key, and its lane of the key's L.
    let j = ja + u / L;
    let lane = u % L;
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

    var kr: array<vec4<f32>, CK>;
    var vr: array<vec4<f32>, CV>;
    var gk: array<vec4<f32>, CK>;
    var gv: array<vec4<f32>, CV>;
    if (live) {
        let ka = b * P.k_b + kh * P.k_h + (k0 + j) * P.k_r - P.k_base;
        let va = b * P.v_b + kh * P.v_h + (k0 + j) * P.v_r - P.v_base;
{{- range $d := seq .CK}}
        kr[{{$d}}] = load_k(ka, {{$d}}u * L + lane);
{{- end}}
{{- range $e := seq .CV}}
        vr[{{$e}}] = load_v(va, {{$e}}u * L + lane);
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
{{- if .SG}}
        {
{{- else}}
        if (live) {
{{- end}}
            for (var r = 0u; r < ie - it; r++) {
                let rg = rk[r];
                // An off block's key gets no gradient from the row, as
                // the forward gave it no weight.
                var sees = live && j >= rg.x && j < rg.y;
                if (has_blocks && sees) {
                    sees = block_on(b, h, it + r, j);
                }
{{- if not .SG}}
                if (!sees) {
                    continue;
                }
{{- end}}
                let qa = r * D4 + lane;
                let gb = r * DV4 + lane;
                var s = 0.0;
{{- range $d := seq .CK}}
                s += dot(qs[qa + {{$d}}u * L], kr[{{$d}}]);
{{- end}}
{{- range $w := halves .L}}
                s += subgroupShuffleXor(s, {{$w}}u);
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
                let p = select(0.0, exp(c + y - ls[r].x), sees);
                var dp = 0.0;
{{- range $e := seq .CV}}
                let g{{$e}} = gs[gb + {{$e}}u * L];
                dp += dot(g{{$e}}, vr[{{$e}}]);
                gv[{{$e}}] += p * g{{$e}};
{{- end}}
{{- range $w := halves .L}}
                dp += subgroupShuffleXor(dp, {{$w}}u);
{{- end}}
                var ds = p * (dp - ls[r].y);
                if (capped) {
                    let th = c / P.softcap;
                    ds *= 1.0 - th * th;
                }
{{- range $d := seq .CK}}
                gk[{{$d}}] += ds * qs[qa + {{$d}}u * L];
{{- end}}
            }
        }
    }
    if (!live) {
        return;
    }
    let ka = b * P.dk_b + kh * P.dk_h + (k0 + j) * P.dk_r - P.dk_base;
{{- range $d := seq .CK}}
    {
        let e = ({{$d}}u * L + lane) * 4u;
        store_dk(ka + e, gk[{{$d}}], min(D - e, 4u));
    }
{{- end}}
    let va = b * P.dv_b + kh * P.dv_h + (k0 + j) * P.dv_r - P.dv_base;
{{- range $e := seq .CV}}
    {
        let e = ({{$e}}u * L + lane) * 4u;
        store_dv(va + e, gv[{{$e}}], min(DV - e, 4u));
    }
{{- end}}
}
