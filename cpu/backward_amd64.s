//go:build amd64 && !purego

#include "textflag.h"

// func dsRowAVX2(p []float32, dp []float32, delta float32)
//
// dp[j] = p[j]·(dp[j] − delta) for j < len(p), a multiple of 8.
TEXT ·dsRowAVX2(SB), NOSPLIT, $0-52
	MOVQ         p_base+0(FP), SI
	MOVQ         p_len+8(FP), CX
	MOVQ         dp_base+24(FP), DI
	VBROADCASTSS delta+48(FP), Y2
	SHRQ         $3, CX
	JZ           done

loop:
	VMOVUPS (DI), Y0
	VSUBPS  Y2, Y0, Y0
	VMULPS  (SI), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DI
	DECQ    CX
	JNZ     loop

done:
	VZEROUPPER
	RET
