// vars is the per-call variant data the host uploads (gpu/variants.go),
// as i32: the bits of the ALiBi slopes at [0, H), of the sink logits at
// [H, 2H), and for batch b at 2H + 4b its key length n, the bases hb and
// lb of its key range and its alignment a_b. It is only read under the
// flag that says it is there.

// sink_logit is the sink logit of head h (read under F_SINK).
fn sink_logit(h: u32) -> f32 {
    return bitcast<f32>(vars[P.H + h]);
}

// key_range is the range [lo, hi) of keys query row i of batch b may see
// by position (backend.Problem.KeyRange): every key when F_RANGE is clear;
// otherwise, from batch b's entry of vars at 2H + 4b — its key length n
// and the bases hb and lb the host computed from the causal alignment, the
// window and the key length, clamped so that no sum overflows —
//
//   hi = max(0, min(n, hb + i)),  lo = min(max(0, lb + i), hi)
//
// It reads P.flags, P.H, P.Nk and vars.
fn key_range(b: u32, i: u32) -> vec2<u32> {
    if ((P.flags & F_RANGE) == 0u) {
        return vec2<u32>(0u, P.Nk);
    }
    let at = 2u * P.H + 4u * b;
    let hi = max(min(vars[at], vars[at + 1u] + i32(i)), 0);
    let lo = min(max(vars[at + 2u] + i32(i), 0), hi);
    return vec2<u32>(u32(lo), u32(hi));
}

// key_count is batch b's key length n, its keys' rows [0, n) (KVLen(b),
// from vars under F_RANGE), P.Nk otherwise: a packed sequence's key
// rows past it are the next sequence's.
fn key_count(b: u32) -> u32 {
    if ((P.flags & F_RANGE) == 0u) {
        return P.Nk;
    }
    return u32(vars[2u * P.H + 4u * b]);
}
