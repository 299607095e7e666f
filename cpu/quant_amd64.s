//go:build amd64 && !purego

#include "textflag.h"

// The 8-bit stores' writing loops (quant_amd64.go): q8 blocks quantized
// and E4M3 encoded, each the same bytes as backend.QuantizeQ8 and
// backend.EncodeFP8s. Each constant is one 32-bit lane, broadcast as it
// is loaded.
DATA quantc<>+0(SB)/4, $0x7fffffff  // |x| mask
DATA quantc<>+4(SB)/4, $0x42fe0000  // 127.0
DATA quantc<>+8(SB)/4, $0x3f800000  // 1.0
DATA quantc<>+12(SB)/4, $0x3f000000 // 0.5
DATA quantc<>+16(SB)/4, $0x80000000 // sign
DATA quantc<>+20(SB)/4, $0x000000ff // a dword's low byte
DATA quantc<>+24(SB)/4, $0x3c800000 // 2⁻⁶, E4M3's least normal
DATA quantc<>+28(SB)/4, $0x43dfffff // the float32 below 448
DATA quantc<>+32(SB)/4, $0x7f800000 // +Inf
DATA quantc<>+36(SB)/4, $0x0007ffff // the rounding bias below bit 20
DATA quantc<>+40(SB)/4, $0x00000001
DATA quantc<>+44(SB)/4, $0x000003c0 // (127−7)<<3, the exponent's rebias
DATA quantc<>+48(SB)/4, $0x44000000 // 512.0: 2⁻⁹, a subnormal's unit, to 1
DATA quantc<>+52(SB)/4, $0x0000007e // ±448's bits
DATA quantc<>+56(SB)/4, $0x0000007f // NaN's bits
DATA quantc<>+60(SB)/4, $0x00000080 // the sign's bit
GLOBL quantc<>(SB), RODATA|NOPTR, $64

// The dword order VPACKUSDW and VPACKUSWB leave four ymm registers' low
// bytes in, lane by lane (groups of 4 bytes): VPERMD's indices that put
// them back in order.
DATA packidx<>+0(SB)/4, $0
DATA packidx<>+4(SB)/4, $4
DATA packidx<>+8(SB)/4, $1
DATA packidx<>+12(SB)/4, $5
DATA packidx<>+16(SB)/4, $2
DATA packidx<>+20(SB)/4, $6
DATA packidx<>+24(SB)/4, $3
DATA packidx<>+28(SB)/4, $7
GLOBL packidx<>(SB), RODATA|NOPTR, $32

// func quantQ8AVX512(codes []int8, scales []uint16, src []float32)
//
// backend.QuantizeQ8 of src, len(src)/32 whole blocks, every magnitude
// below backend.Q8Max (the caller checks), sixteen lanes at a time
// (AVX-512F, F16C). A block's steps are the Go code's in float32:
//
//	amax = max |x| by the bits (VPMAXUD; no NaN comes)
//	d    = amax / 127                 VDIVSS
//	id   = 1 / d, 0 where d is 0      VDIVSS, masked by d ≠ 0
//	scale = float16(d)                VCVTPS2PH, imm 0: to nearest even
//	r    = x · id                     VMULPS
//	q    = round(r), halves away from zero, exactly:
//	       t = trunc(r) (VRNDSCALEPS imm 3), f = r − t (exact: a float's
//	       fraction is), t += ±1 (r's sign) where |f| ≥ ½
//	code = int8(int32(q))             VCVTTPS2DQ, VPMOVDB (truncating)
//
// The truncations are Go's conversions on amd64: where 1/d overflows
// (amax below about 3.7e-37) r is ±Inf or NaN, VCVTTPS2DQ's 0x80000000,
// a 0 code as in Go; where a subnormal d's error makes |q| above 127 the
// low byte wraps as int8(int32(q)) does.
TEXT ·quantQ8AVX512(SB), NOSPLIT, $0-72
	MOVQ         codes_base+0(FP), DI
	MOVQ         scales_base+24(FP), DX
	MOVQ         src_base+48(FP), SI
	MOVQ         src_len+56(FP), CX
	SHRQ         $5, CX
	JZ           q8zdone
	VPBROADCASTD quantc<>+0(SB), Z31  // |x| mask
	VPBROADCASTD quantc<>+8(SB), Z30  // 1.0
	VPBROADCASTD quantc<>+12(SB), Z29 // 0.5
	VPBROADCASTD quantc<>+16(SB), Z28 // sign
	VMOVSS       quantc<>+4(SB), X14  // 127
	VMOVSS       quantc<>+8(SB), X15  // 1

q8zloop:
	VMOVUPS      (SI), Z0
	VMOVUPS      64(SI), Z1
	VPANDD       Z31, Z0, Z2
	VPANDD       Z31, Z1, Z3
	VPMAXUD      Z3, Z2, Z2
	VEXTRACTI64X4 $1, Z2, Y3
	VPMAXUD      Y3, Y2, Y2
	VEXTRACTI128 $1, Y2, X3
	VPMAXUD      X3, X2, X2
	VPSHUFD      $0x4e, X2, X3
	VPMAXUD      X3, X2, X2
	VPSHUFD      $0xb1, X2, X3
	VPMAXUD      X3, X2, X2           // lane 0: amax
	VDIVSS       X14, X2, X4          // d = amax/127
	VCVTPS2PH    $0, X4, X5
	VMOVD        X5, AX
	MOVW         AX, (DX)
	VDIVSS       X4, X15, X5          // 1/d
	VXORPS       X6, X6, X6
	VCMPSS       $4, X6, X4, X6       // d ≠ 0
	VANDPS       X6, X5, X5           // id
	VBROADCASTSS X5, Z5
	VMULPS       Z5, Z0, Z0           // r
	VMULPS       Z5, Z1, Z1
	VRNDSCALEPS  $3, Z0, Z2           // t
	VRNDSCALEPS  $3, Z1, Z3
	VSUBPS       Z2, Z0, Z6           // f
	VSUBPS       Z3, Z1, Z7
	VPANDD       Z31, Z6, Z6
	VPANDD       Z31, Z7, Z7
	VCMPPS       $13, Z29, Z6, K1     // |f| ≥ ½
	VCMPPS       $13, Z29, Z7, K2
	VPANDD       Z28, Z0, Z8          // ±1, r's sign
	VPANDD       Z28, Z1, Z9
	VPORD        Z30, Z8, Z8
	VPORD        Z30, Z9, Z9
	VADDPS       Z8, Z2, K1, Z2
	VADDPS       Z9, Z3, K2, Z3
	VCVTTPS2DQ   Z2, Z2
	VCVTTPS2DQ   Z3, Z3
	VPMOVDB      Z2, (DI)
	VPMOVDB      Z3, 16(DI)
	ADDQ         $128, SI
	ADDQ         $32, DI
	ADDQ         $2, DX
	DECQ         CX
	JNZ          q8zloop
	VZEROUPPER

q8zdone:
	RET

// func quantQ8AVX2(codes []int8, scales []uint16, src []float32)
//
// quantQ8AVX512 eight lanes at a time (AVX2, F16C): VROUNDPS for the
// truncation, a compare mask for |f| ≥ ½, and the codes' low bytes
// packed with VPACKUSDW and VPACKUSWB (each dword masked to its low byte
// first, so that neither saturates) and put in order by VPERMD.
TEXT ·quantQ8AVX2(SB), NOSPLIT, $0-72
	MOVQ         codes_base+0(FP), DI
	MOVQ         scales_base+24(FP), DX
	MOVQ         src_base+48(FP), SI
	MOVQ         src_len+56(FP), CX
	SHRQ         $5, CX
	JZ           q8ydone
	VBROADCASTSS quantc<>+0(SB), Y15  // |x| mask
	VBROADCASTSS quantc<>+4(SB), Y14  // 127
	VBROADCASTSS quantc<>+8(SB), Y13  // 1.0
	VBROADCASTSS quantc<>+12(SB), Y12 // 0.5
	VBROADCASTSS quantc<>+16(SB), Y11 // sign
	VBROADCASTSS quantc<>+20(SB), Y10 // 0xff
	VMOVDQU      packidx<>(SB), Y9

q8yloop:
	VMOVUPS      (SI), Y0
	VMOVUPS      32(SI), Y1
	VMOVUPS      64(SI), Y2
	VMOVUPS      96(SI), Y3
	VPAND        Y15, Y0, Y4
	VPAND        Y15, Y1, Y5
	VPAND        Y15, Y2, Y6
	VPAND        Y15, Y3, Y7
	VPMAXUD      Y5, Y4, Y4
	VPMAXUD      Y7, Y6, Y6
	VPMAXUD      Y6, Y4, Y4
	VEXTRACTI128 $1, Y4, X5
	VPMAXUD      X5, X4, X4
	VPSHUFD      $0x4e, X4, X5
	VPMAXUD      X5, X4, X4
	VPSHUFD      $0xb1, X4, X5
	VPMAXUD      X5, X4, X4           // lane 0: amax
	VDIVSS       X14, X4, X4          // d = amax/127
	VCVTPS2PH    $0, X4, X5
	VMOVD        X5, AX
	MOVW         AX, (DX)
	VDIVSS       X4, X13, X5          // 1/d
	VXORPS       X6, X6, X6
	VCMPSS       $4, X6, X4, X6       // d ≠ 0
	VANDPS       X6, X5, X5           // id
	VBROADCASTSS X5, Y8
	VMULPS       Y8, Y0, Y0           // r
	VMULPS       Y8, Y1, Y1
	VMULPS       Y8, Y2, Y2
	VMULPS       Y8, Y3, Y3

// ROUNDQ8 rounds r (halves away from zero) and leaves its code's low
// byte in each dword of r: t = trunc(r), f = |r − t|, t + (±1 where
// f ≥ ½), truncated to int32 and masked to 0xff.
#define ROUNDQ8(r, t, f, s) \
	VROUNDPS     $3, r, t \
	VSUBPS       t, r, f \
	VANDPS       Y15, f, f \
	VCMPPS       $13, Y12, f, f \
	VANDPS       Y11, r, s \
	VORPS        Y13, s, s \
	VANDPS       f, s, s \
	VADDPS       s, t, r \
	VCVTTPS2DQ   r, r \
	VPAND        Y10, r, r

	ROUNDQ8(Y0, Y4, Y5, Y6)
	ROUNDQ8(Y1, Y4, Y5, Y6)
	ROUNDQ8(Y2, Y4, Y5, Y6)
	ROUNDQ8(Y3, Y4, Y5, Y6)
#undef ROUNDQ8
	VPACKUSDW    Y1, Y0, Y0
	VPACKUSDW    Y3, Y2, Y2
	VPACKUSWB    Y2, Y0, Y0
	VPERMD       Y0, Y9, Y0
	VMOVDQU      Y0, (DI)
	ADDQ         $128, SI
	ADDQ         $32, DI
	ADDQ         $2, DX
	DECQ         CX
	JNZ          q8yloop
	VZEROUPPER

q8ydone:
	RET

// func encodeFP8AVX512(dst []uint8, src []float32)
//
// backend.EncodeFP8s of src into dst, len(src) a multiple of 16, on the
// bits as EncodeFP8 does (AVX-512F), every lane's four answers made and
// the one that applies picked by compares (a = |x|'s bits; a is below
// 2³¹, so the signed compares order it):
//
//	normal:    (a + 0x7ffff + (a>>20)&1) >> 20 − (127−7)<<3
//	a < 2⁻⁶:   |x|·512 rounded to nearest even (VRNDSCALEPS imm 0), exact
//	a ≥ 448:   0x7e, saturated (an infinity too)
//	NaN:       0x7f
//
// or-ed with the sign's bit and narrowed to a byte (VPMOVDB). It counts
// no saturations: the caller does where it needs them.
TEXT ·encodeFP8AVX512(SB), NOSPLIT, $0-48
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), CX
	SHRQ         $4, CX
	JZ           f8zdone
	VPBROADCASTD quantc<>+0(SB), Z31  // |x| mask
	VPBROADCASTD quantc<>+24(SB), Z30 // 2⁻⁶
	VPBROADCASTD quantc<>+28(SB), Z29 // below 448
	VPBROADCASTD quantc<>+32(SB), Z28 // +Inf
	VPBROADCASTD quantc<>+36(SB), Z27 // 0x7ffff
	VPBROADCASTD quantc<>+40(SB), Z26 // 1
	VPBROADCASTD quantc<>+44(SB), Z25 // rebias
	VPBROADCASTD quantc<>+48(SB), Z24 // 512.0
	VPBROADCASTD quantc<>+52(SB), Z23 // 0x7e
	VPBROADCASTD quantc<>+56(SB), Z22 // 0x7f
	VPBROADCASTD quantc<>+60(SB), Z21 // 0x80

f8zloop:
	VMOVDQU32    (SI), Z0
	VPANDD       Z31, Z0, Z1          // a
	VPSRLD       $24, Z0, Z0
	VPANDD       Z21, Z0, Z0          // the sign's bit
	VPSRLD       $20, Z1, Z2
	VPANDD       Z26, Z2, Z2
	VPADDD       Z27, Z2, Z2
	VPADDD       Z1, Z2, Z2
	VPSRLD       $20, Z2, Z2
	VPSUBD       Z25, Z2, Z2          // a normal's bits
	VMULPS       Z24, Z1, Z3
	VRNDSCALEPS  $0, Z3, Z3
	VCVTTPS2DQ   Z3, Z3               // a subnormal's
	VPCMPGTD     Z1, Z30, K1          // a < 2⁻⁶
	VPCMPGTD     Z29, Z1, K2          // a ≥ 448
	VPCMPGTD     Z28, Z1, K3          // NaN
	VMOVDQA32    Z3, K1, Z2
	VMOVDQA32    Z23, K2, Z2
	VMOVDQA32    Z22, K3, Z2
	VPORD        Z0, Z2, Z2
	VPMOVDB      Z2, (DI)
	ADDQ         $64, SI
	ADDQ         $16, DI
	DECQ         CX
	JNZ          f8zloop
	VZEROUPPER

f8zdone:
	RET

// func encodeFP8AVX2(dst []uint8, src []float32)
//
// encodeFP8AVX512 eight lanes at a time (AVX2): VPBLENDVB picks, and
// VPACKUSDW and VPACKUSWB narrow (every dword is at most 0xff).
TEXT ·encodeFP8AVX2(SB), NOSPLIT, $0-48
	MOVQ         dst_base+0(FP), DI
	MOVQ         src_base+24(FP), SI
	MOVQ         src_len+32(FP), CX
	SHRQ         $3, CX
	JZ           f8ydone
	VBROADCASTSS quantc<>+0(SB), Y15  // |x| mask
	VBROADCASTSS quantc<>+24(SB), Y14 // 2⁻⁶
	VBROADCASTSS quantc<>+28(SB), Y13 // below 448
	VBROADCASTSS quantc<>+32(SB), Y12 // +Inf
	VBROADCASTSS quantc<>+36(SB), Y11 // 0x7ffff
	VBROADCASTSS quantc<>+40(SB), Y10 // 1
	VBROADCASTSS quantc<>+44(SB), Y9  // rebias
	VBROADCASTSS quantc<>+48(SB), Y8  // 512.0
	VBROADCASTSS quantc<>+52(SB), Y7  // 0x7e
	VBROADCASTSS quantc<>+56(SB), Y6  // 0x7f
	VBROADCASTSS quantc<>+60(SB), Y5  // 0x80

f8yloop:
	VMOVDQU      (SI), Y0
	VPAND        Y15, Y0, Y1          // a
	VPSRLD       $24, Y0, Y0
	VPAND        Y5, Y0, Y0           // the sign's bit
	VPSRLD       $20, Y1, Y2
	VPAND        Y10, Y2, Y2
	VPADDD       Y11, Y2, Y2
	VPADDD       Y1, Y2, Y2
	VPSRLD       $20, Y2, Y2
	VPSUBD       Y9, Y2, Y2           // a normal's bits
	VMULPS       Y8, Y1, Y3
	VROUNDPS     $0, Y3, Y3
	VCVTTPS2DQ   Y3, Y3               // a subnormal's
	VPCMPGTD     Y1, Y14, Y4          // a < 2⁻⁶
	VPBLENDVB    Y4, Y3, Y2, Y2
	VPCMPGTD     Y13, Y1, Y4          // a ≥ 448
	VPBLENDVB    Y4, Y7, Y2, Y2
	VPCMPGTD     Y12, Y1, Y4          // NaN
	VPBLENDVB    Y4, Y6, Y2, Y2
	VPOR         Y0, Y2, Y2
	VEXTRACTI128 $1, Y2, X3
	VPACKUSDW    X3, X2, X2
	VPACKUSWB    X2, X2, X2
	VMOVQ        X2, (DI)
	ADDQ         $32, SI
	ADDQ         $8, DI
	DECQ         CX
	JNZ          f8yloop
	VZEROUPPER

f8ydone:
	RET
