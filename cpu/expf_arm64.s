//go:build arm64 && !purego

#include "textflag.h"

// The softmax's NEON loops, written by hand. Go's arm64 assembler lacks
// the vector float arithmetic other than FMLA/FMLS (FADD, FSUB, FMUL,
// FMAX, FCMGE, FCVTL, FADDP, FMAXV): those are WORDs with the
// instruction in GNU syntax beside each, which cpu/_gen/neonwords.py
// checks against aarch64-linux-gnu-as (CI runs it).

// func expShiftNEON(row []float32, m float32) float64
//
// expShift for len(row) a positive multiple of 8, two vectors of four
// lanes a step: expf's range reduction and coefficients (expf.go), the
// polynomial by Estrin's scheme with fused multiply-adds as in
// expShiftAVX2 (see there),
//
//	p = 1 + [(r + r²·(c2 + c3·r)) + r⁴·((c4 + c5·r) + r²·(c6 + c7·r))]
//
// and 2^n put into the exponent bits: n + 1.5·2²³ holds n in its low
// bits, so shifting its bits left by 23 leaves n<<23 (1.5·2²³'s bits
// shift out), and adding 1's bits adds the bias. Arguments below lo (−Inf
// and NaN included) give 0 through the mask x ≥ lo; above lo, n ≥ −126,
// so 2^n is normal. Each vector's values are widened to float64 (FCVTL,
// FCVTL2) and summed in four float64 accumulators, so the sum is the
// float64 sum of the float32 values.
//
// Schedule (argued, unmeasured): 23 vector instructions per vector of
// four, of which 13 are FP multiplies or adds and 4 float64 adds; on
// two FP pipes (Neoverse N1) that is ~12 cycles per 4 values, on four
// (Apple M1, Neoverse V1) ~6, the two vectors' independent chains
// hiding the polynomial's latency (about 8 dependent FP operations).
//
// Registers: V15 m; V16–V19, V24–V31 the constants; V20–V23 the sums;
// the first vector in V0 with V2–V7, the second in V1 with V8–V13.
TEXT ·expShiftNEON(SB), NOSPLIT, $0-40
	MOVD row_base+0(FP), R0
	MOVD row_len+8(FP), R1
	FMOVS m+24(FP), F15
	VDUP V15.S[0], V15.S4
	MOVW $0xc2aeac4f, R2 // lo, −87.33654
	VDUP R2, V16.S4
	MOVW $0x3fb8aa3b, R2 // log₂e
	VDUP R2, V17.S4
	MOVW $0x4b400000, R2 // 1.5·2²³
	VDUP R2, V18.S4
	MOVW $0x3f318000, R2 // ln 2, high part
	VDUP R2, V19.S4
	MOVW $0xb95e8083, R2 // ln 2, low part
	VDUP R2, V24.S4
	MOVW $0x39500d01, R2 // c7 = 1/5040
	VDUP R2, V25.S4
	MOVW $0x3ab60b61, R2 // c6 = 1/720
	VDUP R2, V26.S4
	MOVW $0x3c088889, R2 // c5 = 1/120
	VDUP R2, V27.S4
	MOVW $0x3d2aaaab, R2 // c4 = 1/24
	VDUP R2, V28.S4
	MOVW $0x3e2aaaab, R2 // c3 = 1/6
	VDUP R2, V29.S4
	MOVW $0x3f000000, R2 // c2 = 1/2
	VDUP R2, V30.S4
	MOVW $0x3f800000, R2 // 1, and the exponent bias 127<<23
	VDUP R2, V31.S4
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16

exploop:
	VLD1 (R0), [V0.S4, V1.S4]
	// x = v − m
	WORD $0x4eafd400 // fsub v0.4s, v0.4s, v15.4s
	WORD $0x4eafd421 // fsub v1.4s, v1.4s, v15.4s
	// mask x ≥ lo
	WORD $0x6e30e402 // fcmge v2.4s, v0.4s, v16.4s
	WORD $0x6e30e428 // fcmge v8.4s, v1.4s, v16.4s
	// n + 1.5·2²³ = 1.5·2²³ + x·log₂e
	VMOV V18.B16, V3.B16
	VFMLA V17.S4, V0.S4, V3.S4
	VMOV V18.B16, V9.B16
	VFMLA V17.S4, V1.S4, V9.S4
	// n
	WORD $0x4eb2d464 // fsub v4.4s, v3.4s, v18.4s
	WORD $0x4eb2d52a // fsub v10.4s, v9.4s, v18.4s
	// r = x − n·ln2hi − n·ln2lo
	VFMLS V19.S4, V4.S4, V0.S4
	VFMLS V24.S4, V4.S4, V0.S4
	VFMLS V19.S4, V10.S4, V1.S4
	VFMLS V24.S4, V10.S4, V1.S4
	// 2^n's bits
	VSHL $23, V3.S4, V3.S4
	VADD V31.S4, V3.S4, V3.S4
	VSHL $23, V9.S4, V9.S4
	VADD V31.S4, V9.S4, V9.S4
	// c2 + c3·r
	VMOV V30.B16, V6.B16
	VFMLA V29.S4, V0.S4, V6.S4
	VMOV V30.B16, V12.B16
	VFMLA V29.S4, V1.S4, V12.S4
	// c6 + c7·r
	VMOV V26.B16, V7.B16
	VFMLA V25.S4, V0.S4, V7.S4
	VMOV V26.B16, V13.B16
	VFMLA V25.S4, V1.S4, V13.S4
	// c4 + c5·r
	VMOV V28.B16, V4.B16
	VFMLA V27.S4, V0.S4, V4.S4
	VMOV V28.B16, V10.B16
	VFMLA V27.S4, V1.S4, V10.S4
	// r²
	WORD $0x6e20dc05 // fmul v5.4s, v0.4s, v0.4s
	WORD $0x6e21dc2b // fmul v11.4s, v1.4s, v1.4s
	// (c4 + c5·r) + r²·(c6 + c7·r)
	VFMLA V5.S4, V7.S4, V4.S4
	VFMLA V11.S4, V13.S4, V10.S4
	// r⁴
	WORD $0x6e25dca7 // fmul v7.4s, v5.4s, v5.4s
	WORD $0x6e2bdd6d // fmul v13.4s, v11.4s, v11.4s
	// r + r²·(c2 + c3·r)
	VFMLA V5.S4, V6.S4, V0.S4
	VFMLA V11.S4, V12.S4, V1.S4
	// … + r⁴·(…)
	VFMLA V7.S4, V4.S4, V0.S4
	VFMLA V13.S4, V10.S4, V1.S4
	// p = 1 + …
	WORD $0x4e3fd400 // fadd v0.4s, v0.4s, v31.4s
	WORD $0x4e3fd421 // fadd v1.4s, v1.4s, v31.4s
	// p·2^n
	WORD $0x6e23dc00 // fmul v0.4s, v0.4s, v3.4s
	WORD $0x6e29dc21 // fmul v1.4s, v1.4s, v9.4s
	// 0 below lo
	VAND V2.B16, V0.B16, V0.B16
	VAND V8.B16, V1.B16, V1.B16
	VST1.P [V0.S4, V1.S4], 32(R0)
	// the sums, in float64
	WORD $0x0e617806 // fcvtl v6.2d, v0.2s
	WORD $0x4e617807 // fcvtl2 v7.2d, v0.4s
	WORD $0x0e61782c // fcvtl v12.2d, v1.2s
	WORD $0x4e61782d // fcvtl2 v13.2d, v1.4s
	WORD $0x4e66d694 // fadd v20.2d, v20.2d, v6.2d
	WORD $0x4e67d6b5 // fadd v21.2d, v21.2d, v7.2d
	WORD $0x4e6cd6d6 // fadd v22.2d, v22.2d, v12.2d
	WORD $0x4e6dd6f7 // fadd v23.2d, v23.2d, v13.2d
	SUBS $8, R1
	BNE  exploop
	WORD $0x4e75d694 // fadd v20.2d, v20.2d, v21.2d
	WORD $0x4e77d6d6 // fadd v22.2d, v22.2d, v23.2d
	WORD $0x4e76d694 // fadd v20.2d, v20.2d, v22.2d
	WORD $0x7e70da80 // faddp d0, v20.2d
	FMOVD F0, ret+32(FP)
	RET

// func rowMaxNEON(row []float32) float32
//
// The largest value of row, len(row) a positive multiple of 8, eight
// values a step into two accumulators (FMAX; the values are finite or
// −Inf), then across the lanes (FMAXV).
TEXT ·rowMaxNEON(SB), NOSPLIT, $0-28
	MOVD row_base+0(FP), R0
	MOVD row_len+8(FP), R1
	MOVW $0xff800000, R2 // −Inf
	VDUP R2, V2.S4
	VDUP R2, V3.S4

maxloop:
	VLD1.P 32(R0), [V0.S4, V1.S4]
	WORD $0x4e20f442 // fmax v2.4s, v2.4s, v0.4s
	WORD $0x4e21f463 // fmax v3.4s, v3.4s, v1.4s
	SUBS $8, R1
	BNE  maxloop
	WORD $0x4e23f442 // fmax v2.4s, v2.4s, v3.4s
	WORD $0x6e30f840 // fmaxv s0, v2.4s
	FMOVS F0, ret+24(FP)
	RET

// func scaleNEON(x []float32, a float32)
//
// x *= a, len(x) a positive multiple of 8, eight values a step.
TEXT ·scaleNEON(SB), NOSPLIT, $0-28
	MOVD x_base+0(FP), R0
	MOVD x_len+8(FP), R1
	FMOVS a+24(FP), F2
	VDUP V2.S[0], V2.S4

scaleloop:
	VLD1 (R0), [V0.S4, V1.S4]
	WORD $0x6e22dc00 // fmul v0.4s, v0.4s, v2.4s
	WORD $0x6e22dc21 // fmul v1.4s, v1.4s, v2.4s
	VST1.P [V0.S4, V1.S4], 32(R0)
	SUBS $8, R1
	BNE  scaleloop
	RET
