//go:build arm64 && !purego

#include "textflag.h"

// The NEON (ASIMD) Sgemm micro-kernel, written by hand: Go's arm64
// assembler knows every instruction it needs (VLD1, VLD1R, vector VFMLA,
// VEOR, VST1), so no instruction here is WORD-encoded.
//
// Registers: the 8×12 block of C is 24 accumulators of four float32s,
// V8–V31, row i in V(8+3i), V(9+3i), V(10+3i). A step of k loads B's
// row (12 floats) into V0–V2 with one VLD1, broadcasts A[i][p] for each
// of the 8 rows into V3–V7 in turn with VLD1R (a load that fills every
// lane), and issues 3 FMLAs per row: 24 FMLAs to one three-register
// load and 8 broadcast loads.
//
// Schedule (argued, not measured: qemu's timings mean nothing, and no
// arm64 machine was at hand). A step is 24 FMLAs of four lanes (192
// FLOPs) against 3 vector loads of B and 8 broadcast loads of A. A core
// with two 128-bit FMA pipes (Cortex-A72, Neoverse N1) issues the FMLAs
// in 12 cycles, one with four (Apple M1 and later, Neoverse V1/V2) in 6,
// while the 11 loads take 4–6 cycles on two or three load pipes: the
// loop is bound by the FMAs. FMLA's latency is 4 cycles, so four pipes
// need 16 independent chains; the block has 24. That is 16 or 32 FLOPs
// a cycle: about 100 GFLOP/s on one 3.2 GHz M1 core, about 40 on a
// 2.5 GHz Neoverse N1 core, before the driver's packing and edges.
// Reading A in place, not packed, costs one 4-byte load per row and
// step, which the load pipes have room for.

// ROW issues row i's three FMLAs: the broadcast A[i][p] in A, B's row in
// V0–V2, the row's accumulators C0–C2.
#define ROW(A, C0, C1, C2) \
	VFMLA V0.S4, A, C0; \
	VFMLA V1.S4, A, C1; \
	VFMLA V2.S4, A, C2

// OUT0 writes row i's accumulators C0–C2 times alpha (V0) to the 12
// floats at R19 without reading them (beta = 0), by way of V2–V4
// (alpha·acc as 0 + alpha·acc: Go's assembler has no vector FMUL).
#define OUT0(C0, C1, C2) \
	VEOR V2.B16, V2.B16, V2.B16; \
	VEOR V3.B16, V3.B16, V3.B16; \
	VEOR V4.B16, V4.B16, V4.B16; \
	VFMLA V0.S4, C0, V2.S4; \
	VFMLA V0.S4, C1, V3.S4; \
	VFMLA V0.S4, C2, V4.S4; \
	VST1 [V2.S4, V3.S4, V4.S4], (R19); \
	ADD R6, R19

// OUTB is OUT0 plus beta (V1) times the 12 floats at R19: they are
// loaded into V5–V7, scaled by beta into V2–V4 (0 + beta·C), and
// alpha·acc is added with one rounding (FMLA).
#define OUTB(C0, C1, C2) \
	VLD1 (R19), [V5.S4, V6.S4, V7.S4]; \
	VEOR V2.B16, V2.B16, V2.B16; \
	VEOR V3.B16, V3.B16, V3.B16; \
	VEOR V4.B16, V4.B16, V4.B16; \
	VFMLA V1.S4, V5.S4, V2.S4; \
	VFMLA V1.S4, V6.S4, V3.S4; \
	VFMLA V1.S4, V7.S4, V4.S4; \
	VFMLA V0.S4, C0, V2.S4; \
	VFMLA V0.S4, C1, V3.S4; \
	VFMLA V0.S4, C2, V4.S4; \
	VST1 [V2.S4, V3.S4, V4.S4], (R19); \
	ADD R6, R19

// func kern8x12NEON(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, alpha float32, beta float32, blocks int)
//
// For each of blocks row blocks r = 0, 1, …
//
//	C[8r:][0:8][0:12] = alpha · A[8r:][0:8][0:k] · B[0:k][0:12] + beta · C[8r:][0:8][0:12]
//
// A's rows lda floats apart, B's ldb apart (12 for a packed panel), C's
// ldc apart; with beta = 0 C is written without being read. k ≥ 1,
// blocks ≥ 1.
//
// R0 k, R1 A's block, R2 lda in bytes, R3 B, R4 ldb in bytes, R5 C's
// block, R6 ldc in bytes, R7 blocks left; R8–R15 A's 8 rows at step p,
// R16 B's row p, R17 steps left, R19 the row of C being written.
TEXT ·kern8x12NEON(SB), NOSPLIT, $0-72
	MOVD k+0(FP), R0
	MOVD a+8(FP), R1
	MOVD lda+16(FP), R2
	LSL  $2, R2
	MOVD b+24(FP), R3
	MOVD ldb+32(FP), R4
	LSL  $2, R4
	MOVD c+40(FP), R5
	MOVD ldc+48(FP), R6
	LSL  $2, R6
	MOVD blocks+64(FP), R7

block:
	VEOR V8.B16, V8.B16, V8.B16
	VEOR V9.B16, V9.B16, V9.B16
	VEOR V10.B16, V10.B16, V10.B16
	VEOR V11.B16, V11.B16, V11.B16
	VEOR V12.B16, V12.B16, V12.B16
	VEOR V13.B16, V13.B16, V13.B16
	VEOR V14.B16, V14.B16, V14.B16
	VEOR V15.B16, V15.B16, V15.B16
	VEOR V16.B16, V16.B16, V16.B16
	VEOR V17.B16, V17.B16, V17.B16
	VEOR V18.B16, V18.B16, V18.B16
	VEOR V19.B16, V19.B16, V19.B16
	VEOR V20.B16, V20.B16, V20.B16
	VEOR V21.B16, V21.B16, V21.B16
	VEOR V22.B16, V22.B16, V22.B16
	VEOR V23.B16, V23.B16, V23.B16
	VEOR V24.B16, V24.B16, V24.B16
	VEOR V25.B16, V25.B16, V25.B16
	VEOR V26.B16, V26.B16, V26.B16
	VEOR V27.B16, V27.B16, V27.B16
	VEOR V28.B16, V28.B16, V28.B16
	VEOR V29.B16, V29.B16, V29.B16
	VEOR V30.B16, V30.B16, V30.B16
	VEOR V31.B16, V31.B16, V31.B16
	MOVD R1, R8
	ADD  R2, R8, R9
	ADD  R2, R9, R10
	ADD  R2, R10, R11
	ADD  R2, R11, R12
	ADD  R2, R12, R13
	ADD  R2, R13, R14
	ADD  R2, R14, R15
	MOVD R3, R16
	MOVD R0, R17

loop:
	VLD1.P (R16)(R4), [V0.S4, V1.S4, V2.S4]
	VLD1R.P 4(R8), [V3.S4]
	VLD1R.P 4(R9), [V4.S4]
	ROW(V3.S4, V8.S4, V9.S4, V10.S4)
	VLD1R.P 4(R10), [V5.S4]
	ROW(V4.S4, V11.S4, V12.S4, V13.S4)
	VLD1R.P 4(R11), [V6.S4]
	ROW(V5.S4, V14.S4, V15.S4, V16.S4)
	VLD1R.P 4(R12), [V7.S4]
	ROW(V6.S4, V17.S4, V18.S4, V19.S4)
	VLD1R.P 4(R13), [V3.S4]
	ROW(V7.S4, V20.S4, V21.S4, V22.S4)
	VLD1R.P 4(R14), [V4.S4]
	ROW(V3.S4, V23.S4, V24.S4, V25.S4)
	VLD1R.P 4(R15), [V5.S4]
	ROW(V4.S4, V26.S4, V27.S4, V28.S4)
	ROW(V5.S4, V29.S4, V30.S4, V31.S4)
	SUBS $1, R17
	BNE  loop

	// alpha and beta in every lane of V0 and V1.
	FMOVS alpha+56(FP), F0
	VDUP  V0.S[0], V0.S4
	FMOVS beta+60(FP), F1
	VDUP  V1.S[0], V1.S4
	MOVD  R5, R19
	FCMPS $(0.0), F1
	BNE   scaled

	OUT0(V8.S4, V9.S4, V10.S4)
	OUT0(V11.S4, V12.S4, V13.S4)
	OUT0(V14.S4, V15.S4, V16.S4)
	OUT0(V17.S4, V18.S4, V19.S4)
	OUT0(V20.S4, V21.S4, V22.S4)
	OUT0(V23.S4, V24.S4, V25.S4)
	OUT0(V26.S4, V27.S4, V28.S4)
	OUT0(V29.S4, V30.S4, V31.S4)
	B    next

scaled:
	OUTB(V8.S4, V9.S4, V10.S4)
	OUTB(V11.S4, V12.S4, V13.S4)
	OUTB(V14.S4, V15.S4, V16.S4)
	OUTB(V17.S4, V18.S4, V19.S4)
	OUTB(V20.S4, V21.S4, V22.S4)
	OUTB(V23.S4, V24.S4, V25.S4)
	OUTB(V26.S4, V27.S4, V28.S4)
	OUTB(V29.S4, V30.S4, V31.S4)

next:
	ADD  R2<<3, R1 // the next block: 8 rows of A on, 8 of C
	ADD  R6<<3, R5
	SUBS $1, R7
	BNE  block
	RET
