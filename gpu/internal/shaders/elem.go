package shaders

import (
	"fmt"
	"reflect"
	"strings"
)

// Elem is how a kernel's tensor operand is stored, written into the
// kernel by Generate. A half operand is bound as array<u32>, two elements
// a word, element i in the low half of word i/2 when i is even and in the
// high half when odd (the little-endian layout of consecutive uint16s),
// and widened exactly as it is read: F16 by unpack2x16float, BF16 by a
// 16-bit shift (bfloat16 is float32's upper half). A kernel whose mode
// F16 is set (shader-f16, see modes) binds an F16 operand as WGSL f16
// instead (f16, vec4<f16>, or mat2x4<f16> for eight halves a load) and
// widens it by conversion, as exact. Every index a kernel forms stays an
// element index; the host binds a half operand's window from an even
// element (from a multiple of 4 or 8 where it is read four or eight at a
// time: Kernel.Vec4, Kernel.Units).
// (Elem mirrors backend.DType, names included, because package shaders
// imports nothing of attn's.)
type Elem uint8

// The storage elements; the zero value is F32.
const (
	F32  Elem = iota // float32, array<f32>
	F16              // IEEE binary16, two to a u32
	BF16             // bfloat16, two to a u32
	Q8               // llama.cpp's q8_0 in superblocks (below), bound as array<vec4<u32>>
	FP8              // E4M3 (e4m3fn), four to a u32, bound as array<vec4<u32>>
	Q4               // llama.cpp's q4_0 in superblocks (below), bound as array<vec4<u32>>
)

// The quantized Elems (Quant: K and V of the fused kernels only) are
// bound as array<vec4<u32>>, sixteen bytes a load. FP8 is one byte an element,
// element i in byte i mod 4 of word i/4 (little-endian). Q8 goes in
// superblocks of Q8Super elements, Q8SuperWords words each: the int8
// values of its 8 blocks of 32 (64 words, element i of the superblock
// in byte i mod 4 of word i/4), then their 8 float16 scales (4 words,
// block c's in the low half of word 64 + c/2 when c is even, the high
// half when odd): 272 bytes for 256 values, q8_0's 1.0625 a value, and
// every superblock starts on 16 bytes. A window of a Q8 operand starts
// on a superblock, of an FP8 one on 16 elements; element indices stay
// element indices. A loader widens exactly: q8 by sign-extending each
// byte (shifts) times its block's scale (unpack2x16float), fp8 by moving
// each byte's sign and 7 exponent-and-fraction bits into a float16's
// (unpack2x16float, float16 subnormals included) times 2⁸.
//
// Q4 goes in superblocks of Q8Super elements too, Q4SuperWords words
// each: the 16 bytes of codes of each of its 8 blocks of 32 in turn (a
// vec4<u32> a block, block c's at vec4 c of the superblock), in ggml's
// order — byte i of a block holds element i's 4-bit code in its low
// nibble and element i+16's in its high one — then the 8 float16 scales
// as Q8's (vec4 8, block c's in the low half of its word c/2 when c is
// even, the high half when odd): 144 bytes for 256 values, q4_0's
// 0.5625 a value, every superblock on 16 bytes, and a block's codes
// one 16-byte load. A window of a Q4 operand starts on a superblock. A
// loader widens exactly: code − 8 (masks and shifts) times the block's
// scale (unpack2x16float), a q8 value of the same scale.
const (
	Q8Super      = 256
	Q8SuperWords = 68
	Q4SuperWords = 36
)

// Half says whether e is a 16-bit element.
func (e Elem) Half() bool { return e == F16 || e == BF16 }

// Quant says whether e is a quantized element (Q8, FP8, Q4).
func (e Elem) Quant() bool { return e == Q8 || e == FP8 || e == Q4 }

// Blocked says whether e is stored in blocks of 32 with a scale each
// (Q8, Q4), whose superblocks hold Q8Super elements.
func (e Elem) Blocked() bool { return e == Q8 || e == Q4 }

func (e Elem) String() string {
	switch e {
	case F32:
		return "f32"
	case F16:
		return "f16"
	case BF16:
		return "bf16"
	case Q8:
		return "q8"
	case FP8:
		return "fp8"
	case Q4:
		return "q4"
	}
	return fmt.Sprintf("Elem(%d)", uint8(e))
}

// ElemField is one Elem field of a Spec: its binding and its value.
type ElemField struct {
	Binding string
	Elem    Elem
}

// elems lists the Elem fields of s, in field order, each with the name
// of its binding (the field's name in lower case).
func elems(s Spec) []ElemField {
	v := reflect.ValueOf(s)
	var out []ElemField
	for i := range v.NumField() {
		if e, ok := v.Field(i).Interface().(Elem); ok {
			out = append(out, ElemField{strings.ToLower(v.Type().Field(i).Name), e})
		}
	}
	return out
}
