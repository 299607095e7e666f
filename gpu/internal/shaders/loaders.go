package shaders

// The loaders Generate writes for a kernel's tensor operands: a value
// (or a vec4) of any Elem widened to f32 (or f16) as the kernel reads it.

import (
	"fmt"
	"strings"
)

// writeLoader writes the loader of Read binding x stored as e: x_at(i),
// element i of the window, or x_at4(i), elements 4i … 4i+3, when vec4.
// A half is widened exactly: float16 by unpack2x16float, bfloat16 by
// moving its bits to a float32's upper half.
func writeLoader(b *strings.Builder, x string, e Elem, vec4, f16 bool) {
	var body string
	switch {
	case e == F32:
		body = fmt.Sprintf("return %s[i];", x)
	case vec4 && e == F16 && f16:
		body = fmt.Sprintf("return vec4<f32>(%s[i]);", x)
	case e == F16 && f16:
		body = fmt.Sprintf("return f32(%s[i]);", x)
	case vec4 && e == F16:
		body = fmt.Sprintf("let w = %s[i];\n    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));", x)
	case vec4:
		body = fmt.Sprintf("let w = %s[i];\n    return bitcast<vec4<f32>>(vec4<u32>(w.x << 16u, w.x & 0xffff0000u, w.y << 16u, w.y & 0xffff0000u));", x)
	case e == F16:
		body = fmt.Sprintf("return unpack2x16float(%s[i >> 1u])[i & 1u];", x)
	default:
		body = fmt.Sprintf("let w = %s[i >> 1u];\n    return bitcast<f32>(select(w << 16u, w & 0xffff0000u, (i & 1u) != 0u));", x)
	}
	if vec4 {
		fmt.Fprintf(b, "\nfn %s_at4(i: u32) -> vec4<f32> {\n    %s\n}\n", x, body)
		return
	}
	fmt.Fprintf(b, "\nfn %s_at(i: u32) -> f32 {\n    %s\n}\n", x, body)
}

// writeWideLoaders writes the loaders of the half Read binding x read a
// unit of u vec4s (2 or 4: eight or sixteen halves, 16 or 32 bytes) a
// load (Kernel.Units, LoadUnit), bound as array<vec4<u32>> or
// array<array<vec4<u32>, 2>>, or, for an F16 x where f16 (shader-f16)
// says, array<mat2x4<f16>> or array<mat4x4<f16>>: x_u(i), elements 4i …
// 4i+4u−1 (i a multiple of u), x_at4(i) and x_at(i), each widened exactly
// as writeLoader's are.
func writeWideLoaders(b *strings.Builder, x string, e Elem, f16 bool, u int) {
	var h4 string
	parts := make([]string, u)
	switch {
	case e == F16 && f16:
		// Columns of four halves.
		for c := range parts {
			parts[c] = fmt.Sprintf("vec4<f32>(w[%d])", c)
		}
		h4 = fmt.Sprintf("vec4<f32>(%s[i / %du][i %% %du])", x, u, u)
	default:
		widen := "vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y))"
		if e == BF16 {
			widen = "bitcast<vec4<f32>>(vec4<u32>(w.x << 16u, w.x & 0xffff0000u, w.y << 16u, w.y & 0xffff0000u))"
		}
		fmt.Fprintf(b, "\nfn %s_h4(w: vec2<u32>) -> vec4<f32> {\n    return %s;\n}\n", x, widen)
		word := "w"
		if u > 2 {
			word = "w[%d]"
		}
		for c := range parts {
			wc := word
			if u > 2 {
				wc = fmt.Sprintf(word, c/2)
			}
			parts[c] = fmt.Sprintf("%s_h4(%s.%s)", x, wc, [2]string{"xy", "zw"}[c%2])
		}
		at := fmt.Sprintf("%s[i / %du]", x, u)
		if u > 2 {
			at = fmt.Sprintf("%s[i / %du][(i %% %du) >> 1u]", x, u, u)
		}
		h4 = fmt.Sprintf("%s_h4(select(%s.xy, %s.zw, (i & 1u) != 0u))", x, at, at)
	}
	fmt.Fprintf(b, `
fn %[1]s_u(i: u32) -> array<vec4<f32>, %[2]d> {
    let w = %[1]s[i / %[2]du];
    return array<vec4<f32>, %[2]d>(%[3]s);
}

fn %[1]s_at4(i: u32) -> vec4<f32> {
    return %[4]s;
}

fn %[1]s_at(i: u32) -> f32 {
    return %[1]s_at4(i >> 2u)[i & 3u];
}
`, x, u, strings.Join(parts, ", "), h4)
}

// writeQuantLoaders writes the loaders of the quantized Read binding x
// (array<vec4<u32>>, see Q8, FP8 and Q4): x_at(i), element i of the
// window, x_at4(i), elements 4i … 4i+3, and the unit loader: for FP8
// x_u(i), the 16 elements 4i … 4i+15 of one vec4<u32> (i a multiple of
// 4), for Q8 and Q4 x_u(i, sc), the block of 32 elements from 4i (i a
// multiple of 8) with its scale taken from sc, its superblock's scales
// as x_sc(i) loads them: a kernel reading whole rows (fused.wgsl) makes
// one load of sixteen codes (q8; all 32 of a q4 block) where x_at4 makes
// one of four, and one load of scales for the blocks of a row that share
// a superblock.
func writeQuantLoaders(b *strings.Builder, x string, e Elem, unit int) {
	if e == Q4 {
		writeQ4Loaders(b, x)
		writePartLoader(b, x, e, unit)
		return
	}
	if e == FP8 {
		fmt.Fprintf(b, `
fn %[1]s_at4(i: u32) -> vec4<f32> {
    return fp8x4(%[1]s[i >> 2u][i & 3u]);
}

fn %[1]s_at(i: u32) -> f32 {
    return %[1]s_at4(i >> 2u)[i & 3u];
}

fn %[1]s_u(i: u32) -> array<vec4<f32>, 4> {
    let w = %[1]s[i >> 2u];
    return array<vec4<f32>, 4>(fp8x4(w.x), fp8x4(w.y), fp8x4(w.z), fp8x4(w.w));
}
`, x)
		return
	}
	// Element 4i is in superblock i/64, code word i mod 64 of it; its
	// block's scale in word 64 + (i mod 64)/16, half (i/8) mod 2.
	fmt.Fprintf(b, `
fn %[1]s_scale(i: u32) -> f32 {
    let s = %[1]s[(i >> 6u) * 17u + 16u][(i & 63u) >> 4u];
    return unpack2x16float(s)[(i >> 3u) & 1u];
}

fn %[1]s_at4(i: u32) -> vec4<f32> {
    let w = %[1]s[(i >> 6u) * 17u + ((i & 63u) >> 2u)][i & 3u];
    return q8x4(w) * %[1]s_scale(i);
}

fn %[1]s_at(i: u32) -> f32 {
    return %[1]s_at4(i >> 2u)[i & 3u];
}

fn %[1]s_sc(i: u32) -> vec4<u32> {
    return %[1]s[(i >> 6u) * 17u + 16u];
}

fn %[1]s_u(i: u32, sc: vec4<u32>) -> array<vec4<f32>, 8> {
    let at = (i >> 6u) * 17u + ((i & 63u) >> 2u);
    let c0 = %[1]s[at];
    let c1 = %[1]s[at + 1u];
    let d = unpack2x16float(sc[(i & 63u) >> 4u])[(i >> 3u) & 1u];
    return array<vec4<f32>, 8>(q8x4(c0.x) * d, q8x4(c0.y) * d, q8x4(c0.z) * d, q8x4(c0.w) * d,
        q8x4(c1.x) * d, q8x4(c1.y) * d, q8x4(c1.z) * d, q8x4(c1.w) * d);
}
`, x)
	writePartLoader(b, x, e, unit)
}

// writePartLoader writes, for a Q8 or Q4 binding x read a unit of 2 or
// 4 vec4s a load (a kernel whose lanes each take part of a block,
// lanedecode.wgsl), x_p(i, sc): the unit's vec4s of elements from 4i (i
// a multiple of the unit) with their block's scale from sc, from one
// load of the vec4<u32> that holds their codes (a unit of 2 uses half
// of it; the lane beside it loads the same 16 bytes). Nothing for other
// units.
func writePartLoader(b *strings.Builder, x string, e Elem, unit int) {
	if unit != 2 && unit != 4 {
		return
	}
	// q8: vec4s i … i+3 are the words of code vec4 (i mod 64)/4 of the
	// superblock; q4: the low (i mod 8 < 4) or high nibbles of the
	// block's code vec4's words i mod 4 ….
	load := "%s[(i >> 6u) * 17u + ((i & 63u) >> 2u)]"
	widen := "q8x4"
	if e == Q4 {
		load, widen = "%s[(i >> 6u) * 9u + ((i & 63u) >> 3u)] >> vec4<u32>(i & 4u)", "q4x4"
	}
	parts := make([]string, unit)
	for n := range parts {
		parts[n] = fmt.Sprintf("%s(w.%s) * d", widen, "xyzw"[n:n+1])
	}
	word := "let w = c;"
	if unit == 2 {
		word = "let w = select(c.xy, c.zw, (i & 2u) != 0u);"
	}
	fmt.Fprintf(b, `
fn %[1]s_p(i: u32, sc: vec4<u32>) -> array<vec4<f32>, %[2]d> {
    let c = %[3]s;
    %[4]s
    let d = unpack2x16float(sc[(i & 63u) >> 4u])[(i >> 3u) & 1u];
    return array<vec4<f32>, %[2]d>(%[5]s);
}
`, x, unit, fmt.Sprintf(load, x), word, strings.Join(parts, ", "))
}

// writeQ4Loaders writes writeQuantLoaders' loaders for a Q4 x. Element
// 4i is in superblock i/64 (Q4SuperWords words, 9 vec4s), block
// (i mod 64)/8, whose codes are vec4 (i mod 64)/8 of the superblock:
// elements 4j … 4j+3 of a block (j = i mod 8) are the low nibbles of
// its word j when j < 4, the high nibbles of word j − 4 otherwise; the
// block's scale is where a q8 block's is in its superblock's scale vec4
// (vec4 8).
func writeQ4Loaders(b *strings.Builder, x string) {
	fmt.Fprintf(b, `
fn %[1]s_scale(i: u32) -> f32 {
    let s = %[1]s[(i >> 6u) * 9u + 8u][(i & 63u) >> 4u];
    return unpack2x16float(s)[(i >> 3u) & 1u];
}

fn %[1]s_at4(i: u32) -> vec4<f32> {
    let w = %[1]s[(i >> 6u) * 9u + ((i & 63u) >> 3u)][i & 3u];
    return q4x4(w >> (i & 4u)) * %[1]s_scale(i);
}

fn %[1]s_at(i: u32) -> f32 {
    return %[1]s_at4(i >> 2u)[i & 3u];
}

fn %[1]s_sc(i: u32) -> vec4<u32> {
    return %[1]s[(i >> 6u) * 9u + 8u];
}

fn %[1]s_u(i: u32, sc: vec4<u32>) -> array<vec4<f32>, 8> {
    let c = %[1]s[(i >> 6u) * 9u + ((i & 63u) >> 3u)];
    let d = unpack2x16float(sc[(i & 63u) >> 4u])[(i >> 3u) & 1u];
    let h = c >> vec4<u32>(4u);
    return array<vec4<f32>, 8>(q4x4(c.x) * d, q4x4(c.y) * d, q4x4(c.z) * d, q4x4(c.w) * d,
        q4x4(h.x) * d, q4x4(h.y) * d, q4x4(h.z) * d, q4x4(h.w) * d);
}
`, x)
}

// q4Widen widens four 4-bit codes, the low nibbles of a u32's bytes,
// exactly: each code − 8, the q8 value of the same scale.
const q4Widen = `
fn q4x4(w: u32) -> vec4<f32> {
    let c = vec4<u32>(w, w >> 8u, w >> 16u, w >> 24u) & vec4<u32>(15u);
    return vec4<f32>(vec4<i32>(c) - vec4<i32>(8));
}
`

// quantWiden widens four 8-bit codes of a u32, exactly: q8x4 the int8s
// (sign-extended by shifts: this naga has no unpack4xI8), fp8x4 the E4M3
// bytes, each byte's sign and low 7 bits moved into a float16's sign and
// its bits 7 … 13 (E4M3's exponent bias 7 is float16's 15 less 8, so the
// float16 is the value times 2⁻⁸, a subnormal for a subnormal), widened
// by unpack2x16float and scaled back by 2⁸. The NaN pattern reads as
// ±480: only CopyQuant stores it, for a NaN it could not refuse, and
// counts it (quant8.wgsl).
const quantWiden = `
fn q8x4(w: u32) -> vec4<f32> {
    return vec4<f32>(vec4<i32>(i32(w << 24u) >> 24u, i32(w << 16u) >> 24u, i32(w << 8u) >> 24u, i32(w) >> 24u));
}

fn fp8x2(x: u32) -> vec2<f32> {
    let h = ((x & 0x80u) << 8u) | ((x & 0x7fu) << 7u) | ((x & 0x8000u) << 16u) | ((x & 0x7f00u) << 15u);
    return unpack2x16float(h) * 256.0;
}

fn fp8x4(w: u32) -> vec4<f32> {
    return vec4<f32>(fp8x2(w & 0xffffu), fp8x2(w >> 16u));
}
`
