// Packed query rows (backend.Packed, FlashAttention's cu_seqlens): from
// vars[P.seq] on the host writes three i32 for each batch b — the row of
// q, o and lse where its query rows start, its query count, and the row
// of k and v where its keys start (lib/pages.wgsl) — read only under
// F_PACKQ (and F_PACKK). A packed operand's batch stride is 0: the row
// says where a sequence is.

// seq_q0 is the row where batch b's query rows start in q, o and lse
// (0 unless F_PACKQ: the batch stride places them).
fn seq_q0(b: u32) -> u32 {
    if ((P.flags & F_PACKQ) == 0u) {
        return 0u;
    }
    return u32(vars[P.seq + 3u * b]);
}

// seq_rows is batch b's query count: P.Nq unless F_PACKQ. Rows at or past
// it belong to the next sequence and are neither read nor written.
fn seq_rows(b: u32) -> u32 {
    if ((P.flags & F_PACKQ) == 0u) {
        return P.Nq;
    }
    return u32(vars[P.seq + 3u * b + 1u]);
}

// seq_k0 is the row where batch b's keys start in k and v (0 unless
// F_PACKK: the batch stride places them).
fn seq_k0(b: u32) -> u32 {
    if ((P.flags & F_PACKK) == 0u) {
        return 0u;
    }
    return u32(vars[P.seq + 3u * b + 2u]);
}
