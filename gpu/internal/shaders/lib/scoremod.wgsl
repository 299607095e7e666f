// soft_cap is P.softcap·tanh(x/P.softcap) when F_SOFTCAP is set, x
// otherwise. tanh is written as sign(x)·(1 − e^−2|x|)/(1 + e^−2|x|), which
// cannot overflow: the builtin may be lowered to (e^2x − 1)/(e^2x + 1),
// which is NaN past |x| ≈ 44.
fn soft_cap(x: f32) -> f32 {
    if ((P.flags & F_SOFTCAP) == 0u) {
        return x;
    }
    let c = P.softcap;
    let y = x / c;
    let e = exp(-2.0 * abs(y));
    return c * sign(y) * (1.0 - e) / (1.0 + e);
}

// alibi_slope is −m_h, the ALiBi slope of head h negated (vars[h] holds
// the bits of m_h), or 0 when F_ALIBI is clear; alibi_pos is a_b, the key
// position of batch b's query row 0 (vars[2H + 4b + 3], clamped by the
// host to ±2³⁰), or 0. Key j of row i gains alibi_slope·|a_b + i − j|.
fn alibi_slope(h: u32) -> f32 {
    if ((P.flags & F_ALIBI) == 0u) {
        return 0.0;
    }
    return -bitcast<f32>(vars[h]);
}

fn alibi_pos(b: u32) -> i32 {
    if ((P.flags & F_ALIBI) == 0u) {
        return 0;
    }
    return vars[2u * P.H + 4u * b + 3u];
}

// alibi_dist is |pos − j| as f32, pos being a_b + i.
fn alibi_dist(pos: i32, j: u32) -> f32 {
    return f32(abs(pos - i32(j)));
}
