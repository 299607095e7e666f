//go:build arm64 && !purego

#include "textflag.h"

// The float16 and bfloat16 conversions in NEON, eight values a step,
// written by hand. FCVTL/FCVTN (float16, base ASIMD), BFCVTN (FEAT_BF16)
// and FCMEQ are WORDs with the instruction in GNU syntax beside each,
// checked against aarch64-linux-gnu-as by cpu/_gen/neonwords.py. All
// take lengths that are positive multiples of 8 (the Go wrappers cut
// them).

// SATURATE fixes the eight narrowed values in V2 (from the float32s in
// V0 and V1) where a finite value overflowed to ±Inf: narrow saturates
// those to ±MaxFinite, one below Inf's bits. With V31 = 0x7fffffff and
// V30 = +Inf's bits in each 32-bit lane, V29 = 0x7fff and V28 = the half
// type's +Inf bits in each 16-bit lane: V5 marks the lanes whose x is
// ±Inf, V6 those whose result is; an infinite x always gives an
// infinite result, so V5 XOR V6 marks the overflows, where adding the
// mask (−1) steps down to MaxFinite. NaNs match neither. Clobbers V3–V6.
#define SATURATE \
	VAND  V31.B16, V0.B16, V3.B16; \
	VCMEQ V30.S4, V3.S4, V3.S4; \
	VAND  V31.B16, V1.B16, V4.B16; \
	VCMEQ V30.S4, V4.S4, V4.S4; \
	VUZP1 V4.H8, V3.H8, V5.H8; \
	VAND  V29.B16, V2.B16, V6.B16; \
	VCMEQ V28.H8, V6.H8, V6.H8; \
	VEOR  V5.B16, V6.B16, V6.B16; \
	VADD  V6.H8, V2.H8, V2.H8

// SATCONSTS loads SATURATE's constants, inf16 the half type's +Inf bits.
#define SATCONSTS(inf16) \
	MOVW $0x7fffffff, R4; \
	VDUP R4, V31.S4; \
	MOVW $0x7f800000, R4; \
	VDUP R4, V30.S4; \
	MOVW $0x7fff, R4; \
	VDUP R4, V29.H8; \
	MOVW $inf16, R4; \
	VDUP R4, V28.H8

// func widenF16NEON(dst []float32, src []uint16)
//
// dst = src widened from float16, exactly (FCVTL; subnormals are normal
// float32s, NaNs come out quiet with their payload, as Decode's).
TEXT ·widenF16NEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD src_base+24(FP), R1
	MOVD src_len+32(FP), R2

widenf16:
	VLD1.P 16(R1), [V0.H8]
	WORD   $0x0e217801 // fcvtl v1.4s, v0.4h
	WORD   $0x4e217802 // fcvtl2 v2.4s, v0.8h
	VST1.P [V1.S4, V2.S4], 32(R0)
	SUBS   $8, R2
	BNE    widenf16
	RET

// func widenBF16NEON(dst []float32, src []uint16)
//
// dst = src widened from bfloat16: each value's bits become the high
// half of a float32's, zipped with zeros (ZIP1/ZIP2 with V31 = 0).
TEXT ·widenBF16NEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD src_base+24(FP), R1
	MOVD src_len+32(FP), R2
	VEOR V31.B16, V31.B16, V31.B16

widenbf16:
	VLD1.P 16(R1), [V0.H8]
	VZIP1  V0.H8, V31.H8, V1.H8
	VZIP2  V0.H8, V31.H8, V2.H8
	VST1.P [V1.S4, V2.S4], 32(R0)
	SUBS   $8, R2
	BNE    widenbf16
	RET

// func narrowF16NEON(dst []uint16, src []float32)
//
// dst = src narrowed to float16 as narrow does: FCVTN rounds to nearest,
// ties to even (Go leaves FPCR's rounding mode so), keeps NaNs quiet
// with their payload's top bits as float16.Fromfloat32 does, and gives
// ±Inf for a finite overflow, which SATURATE turns into ±MaxFinite.
TEXT ·narrowF16NEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R2
	MOVD src_base+24(FP), R1
	SATCONSTS(0x7c00)

narrowf16:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	WORD   $0x0e216802 // fcvtn v2.4h, v0.4s
	WORD   $0x4e216822 // fcvtn2 v2.8h, v1.4s
	SATURATE
	VST1.P [V2.H8], 16(R0)
	SUBS   $8, R2
	BNE    narrowf16
	RET

// func narrowBF16NEON(dst []uint16, src []float32)
//
// dst = src narrowed to bfloat16 as narrow does, in integer operations
// (any ASIMD core): Encode's rounding, b + 0x7fff + (b>>16 & 1), for a
// number, b | 0x00400000 (quiet) for a NaN (FCMEQ x, x marks numbers;
// BSL picks), the high halves of both vectors' lanes by UZP2, then
// SATURATE. V27 = 1, V26 = 0x7fff, V25 = 0x00400000 in each lane.
TEXT ·narrowBF16NEON(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R2
	MOVD src_base+24(FP), R1
	SATCONSTS(0x7f80)
	MOVW $1, R4
	VDUP R4, V27.S4
	MOVW $0x7fff, R4
	VDUP R4, V26.S4
	MOVW $0x00400000, R4
	VDUP R4, V25.S4

narrowbf16:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	VUSHR  $16, V0.S4, V3.S4
	VUSHR  $16, V1.S4, V4.S4
	VAND   V27.B16, V3.B16, V3.B16
	VAND   V27.B16, V4.B16, V4.B16
	VADD   V26.S4, V3.S4, V3.S4
	VADD   V26.S4, V4.S4, V4.S4
	VADD   V0.S4, V3.S4, V3.S4
	VADD   V1.S4, V4.S4, V4.S4
	VORR   V25.B16, V0.B16, V7.B16
	VORR   V25.B16, V1.B16, V10.B16
	WORD   $0x4e20e408 // fcmeq v8.4s, v0.4s, v0.4s
	WORD   $0x4e21e429 // fcmeq v9.4s, v1.4s, v1.4s
	VBSL   V7.B16, V3.B16, V8.B16
	VBSL   V10.B16, V4.B16, V9.B16
	VUZP2  V9.H8, V8.H8, V2.H8
	SATURATE
	VST1.P [V2.H8], 16(R0)
	SUBS   $8, R2
	BNE    narrowbf16
	RET

// func narrowBF16CVT(dst []uint16, src []float32)
//
// narrowBF16NEON with FEAT_BF16's BFCVTN, which rounds to nearest, ties
// to even, and quiets a NaN keeping its payload's top bits, as Encode
// does; then SATURATE.
TEXT ·narrowBF16CVT(SB), NOSPLIT, $0-48
	MOVD dst_base+0(FP), R0
	MOVD dst_len+8(FP), R2
	MOVD src_base+24(FP), R1
	SATCONSTS(0x7f80)

narrowbf16cvt:
	VLD1.P 32(R1), [V0.S4, V1.S4]
	WORD   $0x0ea16802 // bfcvtn v2.4h, v0.4s
	WORD   $0x4ea16822 // bfcvtn2 v2.8h, v1.4s
	SATURATE
	VST1.P [V2.H8], 16(R0)
	SUBS   $8, R2
	BNE    narrowbf16cvt
	RET
