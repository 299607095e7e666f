// f16_bits and bf16_bits store x as a half, the bits in the low 16 of a
// u32, as backend.DType.Saturate says: rounded to nearest, ties to even,
// a finite x beyond the half's range stored as ± its largest finite value,
// infinities kept, NaN quieted (its payload's upper bits kept, as
// DType.Encode does). Integer arithmetic only, so the result is exact on
// every device (see pack.wgsl for why not pack2x16float).

fn f16_bits(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let s = (b >> 16u) & 0x8000u;
    let a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return s | 0x7e00u | ((a >> 13u) & 0x3ffu);
    }
    if (a == 0x7f800000u) {
        return s | 0x7c00u;
    }
    // 65520 = 0x477ff000 and above round to 65536: saturate to 65504.
    if (a >= 0x477ff000u) {
        return s | 0x7bffu;
    }
    // Normal halves (from 2⁻¹⁴ = 0x38800000): rebias the exponent (127 to
    // 15) and round 13 fraction bits away; a carry into the exponent is
    // the right rounding.
    if (a >= 0x38800000u) {
        let r = a - 0x38000000u;
        return s | ((r + 0xfffu + ((r >> 13u) & 1u)) >> 13u);
    }
    // Subnormal halves, units of 2⁻²⁴: the significand shifted right by
    // 126 − e (14 … 24), rounded to nearest even; below 2⁻²⁵ it is 0.
    let e = a >> 23u;
    if (e < 102u) {
        return s;
    }
    let m = (a & 0x7fffffu) | 0x800000u;
    let sh = 126u - e;
    let q = m >> sh;
    let rem = m & ((1u << sh) - 1u);
    let mid = 1u << (sh - 1u);
    return s | (q + select(0u, 1u, rem > mid || (rem == mid && (q & 1u) == 1u)));
}

fn bf16_bits(x: f32) -> u32 {
    let b = bitcast<u32>(x);
    let a = b & 0x7fffffffu;
    if (a > 0x7f800000u) {
        return (b >> 16u) | 0x40u;
    }
    if (a == 0x7f800000u) {
        return b >> 16u;
    }
    // From halfway between the largest finite bfloat16 (0x7f7f) and
    // infinity the rounding would overflow: saturate.
    if (a >= 0x7f7f8000u) {
        return ((b >> 16u) & 0x8000u) | 0x7f7fu;
    }
    return (b + 0x7fffu + ((b >> 16u) & 1u)) >> 16u;
}
