//go:build amd64 && !purego

#include "textflag.h"

// The constants of the narrowing loops, each a 32-bit lane broadcast as
// it is loaded: |x| mask, ±65504 (float16's largest finite value),
// +Inf, bfloat16's largest finite value (its bits in float32), the
// rounding bias 0x7fff, 1, bfloat16's quiet-NaN bit 0x40 and the sign.
DATA halfc<>+0(SB)/4, $0x7fffffff
DATA halfc<>+4(SB)/4, $0x477fe000
DATA halfc<>+8(SB)/4, $0xc77fe000
DATA halfc<>+12(SB)/4, $0x7f800000
DATA halfc<>+16(SB)/4, $0x7f7f0000
DATA halfc<>+20(SB)/4, $0x00007fff
DATA halfc<>+24(SB)/4, $0x00000001
DATA halfc<>+28(SB)/4, $0x00000040
GLOBL halfc<>(SB), RODATA|NOPTR, $32

// func cpuidF16C() bool
//
// CPUID leaf 1, ECX bit 29: VCVTPH2PS and VCVTPS2PH on xmm and ymm
// registers (golang.org/x/sys/cpu does not report it).
TEXT ·cpuidF16C(SB), NOSPLIT, $0-1
	MOVL $1, AX
	XORL CX, CX
	CPUID
	SHRL $29, CX
	ANDL $1, CX
	MOVB CX, ret+0(FP)
	RET

// func widenF16AVX2(dst []float32, src []uint16)
//
// dst = src's float16 values, exactly, len(src) a multiple of 8 (F16C's
// VCVTPH2PS: subnormals exact, NaN quieted with its payload kept).
TEXT ·widenF16AVX2(SB), NOSPLIT, $0-48
	MOVQ      dst_base+0(FP), DI
	MOVQ      src_base+24(FP), SI
	MOVQ      src_len+32(FP), CX
	SHRQ      $3, CX
	JZ        wf16done

wf16loop:
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       wf16loop
	VZEROUPPER

wf16done:
	RET

// func widenF16AVX512(dst []float32, src []uint16)
//
// widenF16AVX2 sixteen lanes at a time (AVX-512F's VCVTPH2PS on zmm),
// len(src) a multiple of 16.
TEXT ·widenF16AVX512(SB), NOSPLIT, $0-48
	MOVQ      dst_base+0(FP), DI
	MOVQ      src_base+24(FP), SI
	MOVQ      src_len+32(FP), CX
	SHRQ      $4, CX
	JZ        wf16zdone

wf16zloop:
	VCVTPH2PS (SI), Z0
	VMOVUPS   Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       wf16zloop
	VZEROUPPER

wf16zdone:
	RET

// func widenBF16AVX2(dst []float32, src []uint16)
//
// dst = src's bfloat16 values, each bits<<16, len(src) a multiple of 8.
TEXT ·widenBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ      dst_base+0(FP), DI
	MOVQ      src_base+24(FP), SI
	MOVQ      src_len+32(FP), CX
	SHRQ      $3, CX
	JZ        wbf16done

wbf16loop:
	VPMOVZXWD (SI), Y0
	VPSLLD    $16, Y0, Y0
	VMOVDQU   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       wbf16loop
	VZEROUPPER

wbf16done:
	RET

// func widenBF16AVX512(dst []float32, src []uint16)
//
// widenBF16AVX2 sixteen lanes at a time (AVX-512F), len(src) a multiple
// of 16.
TEXT ·widenBF16AVX512(SB), NOSPLIT, $0-48
	MOVQ      dst_base+0(FP), DI
	MOVQ      src_base+24(FP), SI
	MOVQ      src_len+32(FP), CX
	SHRQ      $4, CX
	JZ        wbf16zdone

wbf16zloop:
	VPMOVZXWD (SI), Z0
	VPSLLD    $16, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       wbf16zloop
	VZEROUPPER

wbf16zdone:
	RET

// func narrowF16AVX2(dst []uint16, src []float32)
//
// dst = src rounded to float16, to nearest with ties to even (VCVTPS2PH
// with imm 0), a finite value clamped to ±65504 first so that it
// saturates; ±Inf and NaN go through as they are. len(dst) a multiple
// of 8.
TEXT ·narrowF16AVX2(SB), NOSPLIT, $0-48
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         src_base+24(FP), SI
	SHRQ         $3, CX
	JZ           nf16done
	VBROADCASTSS halfc<>+0(SB), Y3  // |x| mask
	VBROADCASTSS halfc<>+4(SB), Y1  // 65504
	VBROADCASTSS halfc<>+8(SB), Y2  // −65504
	VBROADCASTSS halfc<>+12(SB), Y4 // +Inf

nf16loop:
	VMOVUPS      (SI), Y0
	VANDPS       Y3, Y0, Y5
	VCMPPS       $0x01, Y4, Y5, Y6  // finite = |x| < Inf (false for NaN)
	VMINPS       Y1, Y0, Y7
	VMAXPS       Y2, Y7, Y7         // x clamped to ±65504
	VBLENDVPS    Y6, Y7, Y0, Y0     // clamped where finite
	VCVTPS2PH    $0, Y0, (DI)
	ADDQ         $32, SI
	ADDQ         $16, DI
	DECQ         CX
	JNZ          nf16loop
	VZEROUPPER

nf16done:
	RET

// func narrowF16AVX512(dst []uint16, src []float32)
//
// narrowF16AVX2 sixteen lanes at a time (AVX-512F), the clamp under a
// mask register, len(dst) a multiple of 16.
TEXT ·narrowF16AVX512(SB), NOSPLIT, $0-48
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         src_base+24(FP), SI
	SHRQ         $4, CX
	JZ           nf16zdone
	VPBROADCASTD halfc<>+0(SB), Z3  // |x| mask
	VBROADCASTSS halfc<>+4(SB), Z1  // 65504
	VBROADCASTSS halfc<>+8(SB), Z2  // −65504
	VBROADCASTSS halfc<>+12(SB), Z4 // +Inf

nf16zloop:
	VMOVUPS      (SI), Z0
	VPANDD       Z3, Z0, Z5
	VCMPPS       $0x01, Z4, Z5, K1  // finite = |x| < Inf (false for NaN)
	VMINPS       Z1, Z0, K1, Z0
	VMAXPS       Z2, Z0, K1, Z0     // clamped to ±65504 where finite
	VCVTPS2PH    $0, Z0, (DI)
	ADDQ         $64, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          nf16zloop
	VZEROUPPER

nf16zdone:
	RET

// func narrowBF16AVX2(dst []uint16, src []float32)
//
// dst = src rounded to bfloat16 in integer operations, as
// backend.DType.Encode: bits + 0x7fff + (bit 16), the upper half; a
// finite |x| first clamped to bfloat16's largest finite value so that it
// saturates; NaN its upper half with the quiet bit 0x40 set. len(dst) a
// multiple of 8.
TEXT ·narrowBF16AVX2(SB), NOSPLIT, $0-48
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         src_base+24(FP), SI
	SHRQ         $3, CX
	JZ           nbf16done
	VPBROADCASTD halfc<>+0(SB), Y3  // |x| mask
	VPBROADCASTD halfc<>+12(SB), Y4 // +Inf
	VPBROADCASTD halfc<>+16(SB), Y1 // largest finite
	VPBROADCASTD halfc<>+20(SB), Y2 // 0x7fff
	VPBROADCASTD halfc<>+24(SB), Y10 // 1
	VPBROADCASTD halfc<>+28(SB), Y11 // 0x40

nbf16loop:
	VMOVDQU      (SI), Y0
	VPAND        Y3, Y0, Y5         // a = |x|
	VPXOR        Y5, Y0, Y6         // the sign
	VPCMPGTD     Y5, Y4, Y7         // finite: Inf > a
	VPCMPGTD     Y4, Y5, Y8         // NaN: a > Inf
	VPMINUD      Y1, Y5, Y9
	VPBLENDVB    Y7, Y9, Y5, Y5     // a clamped where finite
	VPOR         Y6, Y5, Y5         // x clamped
	VPSRLD       $16, Y5, Y9
	VPAND        Y10, Y9, Y9        // the kept part's last bit
	VPADDD       Y2, Y9, Y9
	VPADDD       Y9, Y5, Y5
	VPSRLD       $16, Y5, Y5        // rounded to nearest even
	VPSRLD       $16, Y0, Y9
	VPOR         Y11, Y9, Y9        // NaN quieted
	VPBLENDVB    Y8, Y9, Y5, Y5
	VEXTRACTI128 $1, Y5, X9
	VPACKUSDW    X9, X5, X5
	VMOVDQU      X5, (DI)
	ADDQ         $32, SI
	ADDQ         $16, DI
	DECQ         CX
	JNZ          nbf16loop
	VZEROUPPER

nbf16done:
	RET

// func narrowBF16AVX512(dst []uint16, src []float32)
//
// narrowBF16AVX2 sixteen lanes at a time (AVX-512F: the clamp and the
// NaN under mask registers, VPMOVDW to pack), len(dst) a multiple of 16.
// Not AVX512_BF16's VCVTNEPS2BF16, which flushes float32 subnormals to
// zero where Encode rounds them.
TEXT ·narrowBF16AVX512(SB), NOSPLIT, $0-48
	MOVQ         dst_base+0(FP), DI
	MOVQ         dst_len+8(FP), CX
	MOVQ         src_base+24(FP), SI
	SHRQ         $4, CX
	JZ           nbf16zdone
	VPBROADCASTD halfc<>+0(SB), Z3   // |x| mask
	VPBROADCASTD halfc<>+12(SB), Z4  // +Inf
	VPBROADCASTD halfc<>+16(SB), Z1  // largest finite
	VPBROADCASTD halfc<>+20(SB), Z2  // 0x7fff
	VPBROADCASTD halfc<>+24(SB), Z10 // 1
	VPBROADCASTD halfc<>+28(SB), Z11 // 0x40

nbf16zloop:
	VMOVDQU32    (SI), Z0
	VPANDD       Z3, Z0, Z5          // a = |x|
	VPXORD       Z5, Z0, Z6          // the sign
	VPCMPUD      $1, Z4, Z5, K1      // finite: a < Inf
	VPCMPUD      $6, Z4, Z5, K2      // NaN: a > Inf
	VPMINUD      Z1, Z5, K1, Z5      // a clamped where finite
	VPORD        Z6, Z5, Z5          // x clamped
	VPSRLD       $16, Z5, Z9
	VPANDD       Z10, Z9, Z9         // the kept part's last bit
	VPADDD       Z2, Z9, Z9
	VPADDD       Z9, Z5, Z5
	VPSRLD       $16, Z5, Z5         // rounded to nearest even
	VPSRLD       $16, Z0, Z9
	VPORD        Z11, Z9, K2, Z5     // NaN quieted
	VPMOVDW      Z5, (DI)
	ADDQ         $64, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          nbf16zloop
	VZEROUPPER

nbf16zdone:
	RET
