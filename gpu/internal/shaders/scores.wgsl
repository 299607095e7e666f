// scores: the staged path's first step, a batched Q·Kᵀ carried to a stage.
//
//   S[b,h,i,j] = scale · Σ_{d0 ≤ d < d1} Q[b,h,i,d]·K[b,h/G,j,d]      (raw)
//   S → softcap·tanh(S/softcap)                     (capped, F_SOFTCAP)
//   S → S + bias[b,h,i,j] − m_h·|a_b + i − j|       (biased, F_BIAS, F_ALIBI)
//   S → −Inf outside KeyRange(b, i) or where keep is 0  (masked, F_RANGE, F_KEEP)
//
// A workgroup computes a TM×TN tile of S for one head; each of its
// (TN/RN)·(TM/RM) invocations holds an RM×RN block of the tile in
// registers. The head dimension is walked in steps of TD, with the TM×TD
// slice of Q and the TN×TD slice of K staged in workgroup memory. When
// first is 1 the tile is written, when it is 0 the partial sum over
// [d0, d1) is added to S, so the host can split a very long head dimension
// across dispatches; the dispatch with last = 1 (the final slice of the
// head dimension) then carries the full score through the flagged stages.
//
// q, k and bias are read through their loaders (q_at …), which widen a
// half operand (ScoresConsts' Q, K, Bias); s and keep are f32.
//
// Bindings: P (Params), q, k, bias, keep, vars (read), s (read_write).
// Grid: x = key tiles of TN in [j0, j1), y = query tiles of TM in
// [i0, i1), z = heads bh0, bh0+1, ….
// Workgroup memory: (TM + TN)·TD floats.
// Limits: ⌈(d1−d0)/TD⌉·(TD·(RM + RN + RM·RN) + (TM + TN)·TD/(threads))
// loop iterations per invocation; the host bounds d1 − d0.

var<workgroup> qs: array<f32, QS>;
var<workgroup> kt: array<f32, KS>;

@compute @workgroup_size(WX, WY)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_id) lid: vec3<u32>,
        @builtin(local_invocation_index) t: u32) {
    let bh = P.bh0 + wid.z;
    let b = bh / P.H;
    let h = bh % P.H;
    let kh = h / P.G;
    let ti = P.i0 + wid.y * TM;
    let tj = P.j0 + wid.x * TN;
    let qa = b * P.q_b + h * P.q_h - P.q_base;
    let ka = b * P.k_b + kh * P.k_h - P.k_base;

    var acc: array<f32, RR>;
    for (var d0 = P.d0; d0 < P.d1; d0 += TD) {
        workgroupBarrier();
        for (var x = t; x < QS; x += NT) {
            let i = ti + x / TD;
            let d = d0 + x % TD;
            var val = 0.0;
            if (i < P.i1 && d < P.d1) {
                val = q_at(qa + i * P.q_r + d);
            }
            qs[x] = val;
        }
        for (var x = t; x < KS; x += NT) {
            let j = tj + x / TD;
            let d = d0 + x % TD;
            var val = 0.0;
            if (j < P.j1 && d < P.d1) {
                val = k_at(ka + j * P.k_r + d);
            }
            kt[x] = val;
        }
        workgroupBarrier();
        for (var c = 0u; c < TD; c++) {
            var a: array<f32, RM>;
            var bb: array<f32, RN>;
            for (var r = 0u; r < RM; r++) {
                a[r] = qs[(lid.y * RM + r) * TD + c];
            }
            for (var n = 0u; n < RN; n++) {
                bb[n] = kt[(lid.x * RN + n) * TD + c];
            }
            for (var r = 0u; r < RM; r++) {
                for (var n = 0u; n < RN; n++) {
                    acc[r * RN + n] += a[r] * bb[n];
                }
            }
        }
    }

    let scale = P.scale;
    let sa = b * P.s_b + h * P.s_h - P.s_base;
    let ba = b * P.bias_b + h * P.bias_h - P.bias_base;
    let ma = b * P.keep_b + h * P.keep_h - P.keep_base;
    let slope = alibi_slope(h);
    let apos = alibi_pos(b);
    // NEG_INF named outside bitcast too: gogpu/naga v0.18.0 misses a
    // module constant that a function names only inside bitcast<f32>(…),
    // and then fails to resolve it, as lib/ comes after the kernel.
    let ninf_bits = NEG_INF;
    let ninf = bitcast<f32>(ninf_bits);
    for (var r = 0u; r < RM; r++) {
        let i = ti + lid.y * RM + r;
        if (i >= P.i1) {
            break;
        }
        let kr = key_range(b, i);
        for (var n = 0u; n < RN; n++) {
            let j = tj + lid.x * RN + n;
            if (j >= P.j1) {
                break;
            }
            let at = sa + i * P.s_r + j;
            var val = scale * acc[r * RN + n];
            if (P.first == 0u) {
                val += s[at];
            }
            if (P.last != 0u) {
                val = soft_cap(val);
                if ((P.flags & F_BIAS) != 0u) {
                    val += bias_at(ba + i * P.bias_r + j * P.bias_c);
                }
                val += slope * alibi_dist(apos + i32(i), j);
                if (j < kr.x || j >= kr.y) {
                    val = ninf;
                }
                if ((P.flags & F_KEEP) != 0u) {
                    if (keep[ma + i * P.keep_r + j * P.keep_c] == 0.0) {
                        val = ninf;
                    }
                }
            }
            s[at] = val;
        }
    }
}
