// key_limit is the number of keys query i may see: all Nk, or under causal
// masking (flag bit 1, bottom-right aligned) i + 1 + Nk − Nq clamped to
// [0, Nk]. It reads P.flags, P.Nq and P.Nk.
fn key_limit(i: u32) -> u32 {
    if ((P.flags & 1u) == 0u) {
        return P.Nk;
    }
    let n = i + 1u + P.Nk;
    if (n <= P.Nq) {
        return 0u;
    }
    return min(n - P.Nq, P.Nk);
}
