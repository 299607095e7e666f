// quant8: quantizes float32, float16 or bfloat16 elements of src into a
// q8, q4 or fp8 buffer o, the same bytes as the CPU's quantizer
// (backend.QuantizeQ8, QuantizeQ4, EncodeFP8 after a float32 division
// by the head's scale), and counts what it saturated or could not hold.
//
//   o's elements [d0, d0 + n) = quantized src's elements [s0, s0 + n)   (window-relative)
//
// Backend.CopyQuant runs it (a KV cache's AppendBuffers). Device float
// arithmetic may round differently from IEEE's (WGSL allows 2.5 ulp for
// a division), may fuse a multiply and an add, and may flush
// subnormals, so every step is integer arithmetic on float32 bits:
// div_f32 and mul_f32 round as IEEE's float32 division and
// multiplication do, to nearest even, subnormals included. src is read
// as raw bits (src_bits), never as a float.
//
// Under Q8 = 1 or Q4 = 1 an invocation takes a pair of blocks of 32
// (both windows start on a superblock, the range is whole blocks): the
// scale word they share (word 64 + c of a q8 superblock, 32 + c of a q4
// one: blocks 2c and 2c+1) and the codes of each block inside the
// range; a block outside keeps its codes and its half of the scale
// word. A q8 block is q8_0's:
//
//   amax = max |x| (by the bits), d = amax / 127, scale = float16(d),
//   id = 1/d (0 where d is 0), code = round(x · id), halves away from 0
//
// each step a float32 operation as backend.QuantizeQ8's, the code's low
// byte kept as Go's int8(int32(·)) keeps it on amd64 (where 1/d
// overflows, every code is 0). A q4 block is q4_0's:
//
//   m = the first x of largest magnitude (by the bits), d = m / −8,
//   scale = float16(d), id = 1/d (0 where d is 0),
//   code = min(15, trunc(x · id + 8.5)), two a byte (x_i low, x_i+16 high)
//
// each step a float32 operation as backend.QuantizeQ4's, the product
// rounded before the sum (never fused), the codes 0 where 1/d overflows
// (ggml's on x86). A block holding a magnitude of backend.Q8Max (q8) or
// backend.Q4Max (q4) or more (an infinity, a NaN) is stored as NaN:
// codes 0, scale 0x7e00, and its such values counted in cnt[2], cnt[3].
//
// Under Q8 = Q4 = 0 an invocation writes one word of four fp8 bytes,
// those of the range from their src element (divided by its head's
// scale from vars when P.scaled), the others kept. A finite value beyond
// ±448 after the division is stored as ±448 and counted in cnt[0],
// cnt[1]; a NaN or an infinity is stored as the NaN pattern S.1111.111
// and counted in cnt[2], cnt[3]. Each count is a u64, low word first.
//
// Every word has one invocation, so a word two ranges share keeps both
// (the ranges of one copy are dispatched in order).
//
// Bindings: P (Params), src (read), vars (read), o (read_write), cnt
// (read_write): src read as bits, vars the heads' scales as float32
// bits (read under P.scaled), o raw words, cnt atomic counters.
// Grid: x = tiles of WG units (q8, q4: pairs of blocks; fp8: words) from
// unit P.u0 of o's window.
// Limits: a q8 unit loops about 64 + 2·(32 + 2·27) times, a q4 one
// 64 + 2·(32 + 2·27), an fp8 one 4·27 (each division 27 steps): far
// below lavapipe's cap.

// src_bits is element i of src's window as float32 bits, widened
// exactly from a half.
fn src_bits(i: u32) -> u32 {
{{- if eq .Src 0}}
    return src[i];
{{- else}}
    let h = (src[i >> 1u] >> (16u * (i & 1u))) & 0xffffu;
{{- if eq .Src 2}}
    return h << 16u;
{{- else}}
    let s = (h & 0x8000u) << 16u;
    let e = (h >> 10u) & 0x1fu;
    let m = h & 0x3ffu;
    if (e == 31u) {
        return s | 0x7f800000u | (m << 13u);
    }
    if (e == 0u) {
        if (m == 0u) {
            return s;
        }
        // A subnormal m·2⁻²⁴: normalise m to 11 bits.
        let sh = 10u - firstLeadingBit(m);
        return s | ((113u - sh) << 23u) | (((m << sh) & 0x3ffu) << 13u);
    }
    return s | ((e + 112u) << 23u) | (m << 13u);
{{- end}}
{{- end}}
}

// Sig is a positive float32 m·2^e, m's bit 23 set.
struct Sig {
    m: u32,
    e: i32,
}

// sig is the finite, nonzero magnitude a (float32 bits, no sign) as a
// Sig, a subnormal normalised.
fn sig(a: u32) -> Sig {
    let ex = a >> 23u;
    if (ex == 0u) {
        let sh = 23u - firstLeadingBit(a);
        return Sig(a << sh, -149 - i32(sh));
    }
    return Sig((a & 0x7fffffu) | 0x800000u, i32(ex) - 150);
}

// round_f32 is the float32 bits of m·2^e (plus a fraction of 2^e when
// sticky; m then has at least 26 bits), rounded to nearest, ties to
// even: a subnormal where it falls below 2⁻¹²⁶, an infinity beyond the
// largest float32.
fn round_f32(m: u32, e: i32, sticky: bool) -> u32 {
    let ex = e + i32(firstLeadingBit(m)); // the exponent of m's top bit
    if (ex > 127) {
        return 0x7f800000u;
    }
    let sh = max(ex - 23, -149) - e; // bits of m below the result's last
    let base = u32(max(ex + 127, 1) - 1) << 23u;
    if (sh <= 0) {
        return base + (m << u32(-sh));
    }
    if (sh > 32) {
        return 0u;
    }
    var kept = 0u;
    var half = 0x80000000u;
    var rem = m;
    if (sh < 32) {
        kept = m >> u32(sh);
        rem = m & ((1u << u32(sh)) - 1u);
        half = 1u << u32(sh - 1);
    }
    let up = rem > half || (rem == half && (sticky || (kept & 1u) == 1u));
    return base + kept + select(0u, 1u, up);
}

// div_f32 is the float32 bits of a / b, rounded as IEEE's division:
// finite magnitudes a ≥ 0 and b > 0.
fn div_f32(a: u32, b: u32) -> u32 {
    if (a == 0u) {
        return 0u;
    }
    let x = sig(a);
    let y = sig(b);
    // 26 or 27 bits of the quotient x.m/y.m ∈ (½, 2), and a remainder.
    var q = select(0u, 1u, x.m >= y.m);
    var r = x.m - q * y.m;
    for (var i = 0u; i < 26u; i++) {
        r = r << 1u;
        q = q << 1u;
        if (r >= y.m) {
            r = r - y.m;
            q = q | 1u;
        }
    }
    return round_f32(q, x.e - y.e - 26, r != 0u);
}

// mul_f32 is the float32 bits of a · b, rounded as IEEE's
// multiplication: finite, nonzero magnitudes.
fn mul_f32(a: u32, b: u32) -> u32 {
    let x = sig(a);
    let y = sig(b);
    // The 48-bit product in 16-bit limbs: hi·2³² + lo.
    let a0 = x.m & 0xffffu;
    let a1 = x.m >> 16u;
    let b0 = y.m & 0xffffu;
    let b1 = y.m >> 16u;
    let lo0 = a0 * b0;
    let mid = a1 * b0 + a0 * b1;
    let lo = lo0 + (mid << 16u);
    let hi = a1 * b1 + (mid >> 16u) + select(0u, 1u, lo < lo0);
    return round_f32((hi << 16u) | (lo >> 16u), x.e + y.e + 16, (lo & 0xffffu) != 0u);
}

// count adds k to the u64 counter at cnt[at], cnt[at + 1].
fn count(at: u32, k: u32) {
    if (k == 0u) {
        return;
    }
    let old = atomicAdd(&cnt[at], k);
    if (old + k < old) {
        atomicAdd(&cnt[at + 1u], 1u);
    }
}
{{if .Q8}}
// q8_block quantizes the block of 32 src elements from se into o's code
// words from cw and returns its float16 scale; bad counts its values a
// block cannot hold.
fn q8_block(se: u32, cw: u32, bad: ptr<function, u32>) -> u32 {
    var top = 0u;
    var n = 0u;
    for (var i = 0u; i < 32u; i++) {
        let a = src_bits(se + i) & 0x7fffffffu;
        top = max(top, a);
        n += select(0u, 1u, a >= 0x4afdf020u); // backend.Q8Max = 127·65520
    }
    if (n > 0u) {
        *bad = *bad + n; // not +=, which gogpu/naga v0.18.0 refuses through a pointer
        for (var j = 0u; j < 8u; j++) {
            o[cw + j] = 0u;
        }
        return 0x7e00u;
    }
    let d = div_f32(top, 0x42fe0000u); // amax / 127
    var id = 0u;
    if (d != 0u) {
        id = div_f32(0x3f800000u, d); // 1/d
    }
    for (var j = 0u; j < 8u; j++) {
        var w = 0u;
        for (var c = 0u; c < 4u; c++) {
            let x = src_bits(se + 4u * j + c);
            let a = x & 0x7fffffffu;
            var q = 0u;
            if (a != 0u && id != 0u && id < 0x7f800000u) {
                // round(|r|) halves up: (m + ½·2^−e) >> −e; below ½ it is 0.
                let r = mul_f32(a, id);
                if (r >= 0x3f000000u) {
                    let s = sig(r);
                    if (s.e >= 0) {
                        q = s.m << u32(s.e);
                    } else {
                        let sh = u32(-s.e);
                        q = (s.m + (1u << (sh - 1u))) >> sh;
                    }
                }
                if ((x >> 31u) != 0u) {
                    q = 0u - q;
                }
            }
            w = w | ((q & 0xffu) << (8u * c));
        }
        o[cw + j] = w;
    }
    return f16_bits(bitcast<f32>(d));
}

{{- else if .Q4}}
// q4_block quantizes the block of 32 src elements from se into o's code
// words from cw and returns its float16 scale; bad counts its values a
// block cannot hold.
fn q4_block(se: u32, cw: u32, bad: ptr<function, u32>) -> u32 {
    var top = 0u;
    var m = 0u; // the first x of magnitude top, its sign kept (+0 for none)
    var n = 0u;
    for (var i = 0u; i < 32u; i++) {
        let x = src_bits(se + i);
        let a = x & 0x7fffffffu;
        if (a > top) {
            top = a;
            m = x;
        }
        n += select(0u, 1u, a >= 0x48fff000u); // backend.Q4Max = 8·65520
    }
    if (n > 0u) {
        *bad = *bad + n;
        for (var j = 0u; j < 4u; j++) {
            o[cw + j] = 0u;
        }
        return 0x7e00u;
    }
    // d = m / −8: |d| = top / 8, its sign m's opposite (−0 for a zero
    // block); |id| = 1/|d|, its sign d's.
    let sd = ~m & 0x80000000u;
    let ad = div_f32(top, 0x41000000u);
    var id = 0u;
    if (ad != 0u) {
        id = div_f32(0x3f800000u, ad);
    }
    for (var j = 0u; j < 4u; j++) {
        var w = 0u;
        for (var c = 0u; c < 4u; c++) {
            let lo = q4_code(src_bits(se + 4u * j + c), sd, id);
            let hi = q4_code(src_bits(se + 16u + 4u * j + c), sd, id);
            w = w | ((lo | (hi << 4u)) << (8u * c));
        }
        o[cw + j] = w;
    }
    return f16_bits(bitcast<f32>(sd | ad));
}

// q4_code is x's code for id = ±|id| (sign sd, magnitude bits id):
// min(15, trunc(f32(f32(x·id) + 8.5))). With r = f32(x·id) (mul_f32)
// and S = ⌊(r + 8.5)·2²⁵⌋, exact in integers (|r| ≤ 8 within rounding,
// so S < 2³⁰; r's bits below 2⁻²⁵ only move S down by one for r < 0),
// the float32 sum is at least an integer k ≥ 1 exactly when the exact
// sum is at least k less half an ulp of the binade below k, 2^⌈log₂k⌉
// units of 2⁻²⁵ (at that tie the sum rounds to k, the even one):
// trunc is ⌊S/2²⁵⌋, or one more where S is within that of the next
// integer. Where 1/d overflowed (|id| infinite) every code is 0, where
// d is 0 (id 0) every code is 8, as backend.QuantizeQ4's.
fn q4_code(x: u32, sd: u32, id: u32) -> u32 {
    if (id >= 0x7f800000u) {
        return 0u;
    }
    let a = x & 0x7fffffffu;
    if (a == 0u || id == 0u) {
        return 8u;
    }
    let r = mul_f32(a, id);
    let neg = ((x ^ sd) >> 31u) != 0u;
    var f = 0; // ⌊r·2²⁵⌋
    if (r != 0u) {
        let s = sig(r);
        let sh = s.e + 25;
        if (sh >= 0) {
            f = i32(s.m << u32(sh));
            if (neg) {
                f = -f;
            }
        } else {
            let k = u32(-sh);
            var t = 0u;
            var rem = s.m;
            if (k < 32u) {
                t = s.m >> k;
                rem = s.m & ((1u << k) - 1u);
            }
            f = i32(t);
            if (neg) {
                f = -f - select(0, 1, rem != 0u);
            }
        }
    }
    let sum = u32(f + 0x11000000); // S: 8.5·2²⁵ = 0x11000000
    let k0 = sum >> 25u;
    let k1 = k0 + 1u;
    // g = 2^⌈log₂k1⌉ by firstLeadingBit (−1 for 0, so g = 1 there), not
    // 32 − countLeadingZeros, which gogpu/naga v0.18.0 computes wrong.
    let g = 1u << (firstLeadingBit(k1 - 1u) + 1u);
    return min(select(k0, k1, sum + g >= (k1 << 25u)), 15u);
}
{{- end}}
{{if or .Q8 .Q4}}
{{- /* a superblock's words ($sw), a block's code words ($bw) */}}
{{- $sw := 68}}{{$bw := 8}}{{$q := "q8"}}
{{- if .Q4}}{{$sw = 36}}{{$bw = 4}}{{$q = "q4"}}{{end}}
fn main_blocks(gid: vec3<u32>) {
    if (gid.x >= P.nw) {
        return;
    }
    let p = P.u0 + gid.x; // the pair of blocks
    let sw = (p >> 2u) * {{$sw}}u + {{mul 8 $bw}}u + (p & 3u); // their scale word
    var scales = o[sw];
    var bad = 0u;
    for (var hh = 0u; hh < 2u; hh++) {
        let e = p * 64u + hh * 32u;
        if (e >= P.d0 && e - P.d0 < P.n) {
            let cw = (p >> 2u) * {{$sw}}u + ((p & 3u) * 2u + hh) * {{$bw}}u;
            let s = {{$q}}_block(e - P.d0 + P.s0, cw, &bad);
            scales = (scales & ~(0xffffu << (16u * hh))) | (s << (16u * hh));
        }
    }
    o[sw] = scales;
    count(2u, bad);
}
{{else}}
// fp8_of is E4M3's bits of the magnitude a (finite float32 bits, no
// sign), as backend.EncodeFP8: to nearest even, ±448 beyond it.
fn fp8_of(a: u32) -> u32 {
    if (a >= 0x43e00000u) {
        return 0x7eu;
    }
    if (a < 0x3c800000u) {
        // Below 2⁻⁶: a subnormal, in units of 2⁻⁹, rounded to even.
        if (a == 0u) {
            return 0u;
        }
        let s = sig(a);
        let sh = u32(-(s.e + 9)); // ≥ 21
        if (sh >= 25u) {
            return 0u;
        }
        let kept = s.m >> sh;
        let rem = s.m & ((1u << sh) - 1u);
        let half = 1u << (sh - 1u);
        return kept + select(0u, 1u, rem > half || (rem == half && (kept & 1u) == 1u));
    }
    // Keep 3 of the 23 fraction bits, to nearest even (a carry moves
    // into the exponent), and rebias the exponent from 127 to 7.
    let r = a + 0x7ffffu + ((a >> 20u) & 1u);
    return (r >> 20u) - 0x3c0u;
}

fn main_fp8(gid: vec3<u32>) {
    if (gid.x >= P.nw) {
        return;
    }
    let w = P.u0 + gid.x;
    var out = o[w];
    var sat = 0u;
    var bad = 0u;
    for (var c = 0u; c < 4u; c++) {
        let e = w * 4u + c;
        if (e >= P.d0 && e - P.d0 < P.n) {
            let se = e - P.d0 + P.s0;
            let x = src_bits(se);
            var a = x & 0x7fffffffu;
            var b = 0x7fu;
            if (a >= 0x7f800000u) {
                bad += 1u;
            } else {
                if (P.scaled != 0u) {
                    a = div_f32(a, vars[((se + P.hbase) / P.dim) % P.heads]);
                }
                sat += select(0u, 1u, a > 0x43e00000u);
                b = fp8_of(a);
            }
            b = b | ((x >> 24u) & 0x80u);
            out = (out & ~(0xffu << (8u * c))) | (b << (8u * c));
        }
    }
    o[w] = out;
    count(0u, sat);
    count(2u, bad);
}
{{end}}
@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>) {
{{- if or .Q8 .Q4}}
    main_blocks(gid);
{{- else}}
    main_fp8(gid);
{{- end}}
}
