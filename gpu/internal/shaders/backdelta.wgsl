// backdelta: the first step of attention's backward pass, a query row
// an invocation:
//
//   δ[i]    = Σ_c dO[i,c]·O[i,c]
//   sink[i] = exp(sink_h − LSE[i])·δ[i]     under F_SINK (0 where LSE = −Inf)
//
// δ is the row's Σ_j P_ij·dP_ij, which backkv.wgsl, backq.wgsl and
// backbias.wgsl subtract from each dP_ij; the host sums −sink[i] over a
// head's rows (in float64) for the gradient of its sink logit.
//
// o and dout are read through their loaders (o_at, dout_at), which widen
// a half operand (BackDeltaConsts' O, Dout). Packed query rows (F_PACKQ):
// batch b's rows start at seq_q0(b) and number seq_rows(b)
// (lib/seqs.wgsl); an invocation past them does nothing.
//
// It writes each row's LSE and δ into vars, where the kernels after it
// read them (lib/backvars.wgsl), and its sink term into sink.
//
// Bindings: P (Params), o, dout, lse (read), vars, sink (read_write).
// Of vars it reads the sink logits and the sequences only under F_SINK
// or F_PACKQ, and writes the rows' pairs; sink is only touched under
// F_SINK, addressed as the LSE ([B, H, Nq], or [H, total rows] when
// packed).
// Grid: x = tiles of WG rows in [i0, i1), y = heads bh0, bh0+1, ….
// Limits: an invocation loops DV times.

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
    let oa = b * P.o_b + h * P.o_h + r * P.o_r - P.o_base;
    let ga = b * P.dout_b + h * P.dout_h + r * P.dout_r - P.dout_base;
    var s = 0.0;
    for (var c = 0u; c < DV; c++) {
        s += o_at(oa + c) * dout_at(ga + c);
    }
    let l = lse[b * P.lse_b + h * P.lse_h + r * P.lse_r - P.lse_base];
    let at = ld_word(b, h, r);
    vars[at] = bitcast<i32>(l);
    vars[at + 1u] = bitcast<i32>(s);
    if ((P.flags & F_SINK) != 0u) {
        var x = 0.0;
        if (bitcast<u32>(l) != NEG_INF) {
            x = exp(sink_logit(h) - l) * s;
        }
        sink[b * P.sink_b + h * P.sink_h + r * P.sink_r - P.sink_base] = x;
    }
}
