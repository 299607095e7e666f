// NEG_INF is the bit pattern of −Inf: WGSL has no infinity literal, and a
// −Inf LSE or bias is written and recognised by its bits.
const NEG_INF: u32 = 0xff800000u;
