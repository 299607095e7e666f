// backbias: the bias's gradient, attention's backward pass summed over
// the dimensions the bias broadcasts: for each element e = (b', h', i',
// j') of dBias, of shape [SB, SH, SQ, SK] (each 1 or the problem's B, H,
// Nq, Nk),
//
//   dBias[e] += Σ dS_bhij   over (b, h, i, j) that broadcast to e
//   dS_ij     = P_ij·(dO[i]·v_j − δ[i])
//   P_ij      = exp(cap(scale·q_i·k_j) + bias[i,j] − m_h·|a_b + i − j| − LSE[i])
//
// dS taken before the softcap's derivative (the bias is added after the
// cap), P_ij 0 where a key is hidden (by position, the keep-mask, the
// block mask or a −Inf bias) or the row sees no key (LSE = −Inf), as in
// backq.wgsl.
// The terms of e are numbered u = ((b·nh + h)·ni + i)·nj + j over the
// broadcast dimensions (nb = B where SB is 1, else 1 and b = b', …);
// a dispatch adds those of [u0, u1), and the host runs one dispatch for
// each chunk of them, one after the other, each adding to what the last
// left (it zeroes dBias first). Nothing is atomic: an invocation owns
// its element.
//
// Each term reads its row of q and dO and its key's k and v through
// their loaders (widening halves), so a chunk costs
// (u1 − u0)·(2·D + 2·DV) multiply-adds an element.
//
// Bindings: P (Params), q, k, v, dout, bias, vars (read), dbias
// (read_write). Of vars (lib/backvars.wgsl) the rows' LSE and δ are
// always read, the variant data, the sequences, the block mask and the
// keep-mask only under a flag; dbias is addressed as a mask (its strides, 0 on a broadcast
// dimension), and so is bias (the forward's).
// Grid: x = tiles of WG elements in [e0, e1).
// Limits: an invocation loops u1 − u0 times (the head dims unrolled);
// on a CPU-type adapter the host bounds the chunk by the loop cap.

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32) {
    let e = P.e0 + wid.x * WG + t;
    if (e >= P.e1) {
        return;
    }
    let ej = e % P.sk;
    let ei = (e / P.sk) % P.sq;
    let eh = (e / (P.sk * P.sq)) % P.sh;
    let eb = e / (P.sk * P.sq * P.sh);
    // The broadcast dimensions' extents.
    let nj = select(1u, P.Nk, P.sk == 1u);
    let ni = select(1u, P.Nq, P.sq == 1u);
    let nh = select(1u, P.H, P.sh == 1u);
    let has_bias = (P.flags & F_BIAS) != 0u;
    let has_keep = (P.flags & F_KEEP) != 0u;
    let has_blocks = (P.flags & F_BLOCKS) != 0u;
    var acc = 0.0;
    for (var u = P.u0; u < P.u1; u++) {
        let j = select(ej, u % nj, P.sk == 1u);
        let i = select(ei, (u / nj) % ni, P.sq == 1u);
        let h = select(eh, (u / (nj * ni)) % nh, P.sh == 1u);
        let b = select(eb, u / (nj * ni * nh), P.sb == 1u);
        if (i >= seq_rows(b)) {
            continue;
        }
        let r = seq_q0(b) + i;
        let ld = row_ld(b, h, r);
        let l = ld.x;
        let kr = key_range(b, i);
        if (bitcast<u32>(l) == NEG_INF || j < kr.x || j >= kr.y) {
            continue;
        }
        if (has_keep && bitcast<f32>(vars[P.keep_at + b * P.keep_b + h * P.keep_h + i * P.keep_r + j * P.keep_c]) == 0.0) {
            continue;
        }
        if (has_blocks && !block_on(b, h, i, j)) {
            continue;
        }
        let kh = h / P.G;
        let qa = b * P.q_b + h * P.q_h + r * P.q_r - P.q_base;
        let ga = b * P.dout_b + h * P.dout_h + r * P.dout_r - P.dout_base;
        let ka = b * P.k_b + kh * P.k_h + (seq_k0(b) + j) * P.k_r - P.k_base;
        let va = b * P.v_b + kh * P.v_h + (seq_k0(b) + j) * P.v_r - P.v_base;
        var s = vec4<f32>(0.0);
{{- range $d := seq .D4}}
        s += {{load4 "q" "qa" (mul $d 4) (sub $.D (mul $d 4))}} * {{load4 "k" "ka" (mul $d 4) (sub $.D (mul $d 4))}};
{{- end}}
        var dp = vec4<f32>(0.0);
{{- range $e := seq .DV4}}
        dp += {{load4 "dout" "ga" (mul $e 4) (sub $.DV (mul $e 4))}} * {{load4 "v" "va" (mul $e 4) (sub $.DV (mul $e 4))}};
{{- end}}
        var y = alibi_slope(h) * alibi_dist(alibi_pos(b) + i32(i), j);
        if (has_bias) {
            y += bias_at(b * P.bias_b + h * P.bias_h + i * P.bias_r + j * P.bias_c - P.bias_base);
        }
        let p = exp(soft_cap(P.scale * (s.x + s.y + s.z + s.w)) + y - l);
        acc += p * (dp.x + dp.y + dp.z + dp.w - ld.y);
    }
    dbias[eb * P.dbias_b + eh * P.dbias_h + ei * P.dbias_r + ej * P.dbias_c - P.dbias_base] += acc;
}
