//go:build arm64 && !purego

#include "textflag.h"

// The FMA peak's loop (fma.go, fmaKernel): 16 independent chains of
// vector FMLA on registers alone (V0–V15), acc[c] += x·y with x in V16
// and y in V17.

// func fmaChainsNEON(n int, x, y, acc *float32)
TEXT ·fmaChainsNEON(SB), NOSPLIT, $0-32
	MOVD n+0(FP), R0
	MOVD x+8(FP), R1
	MOVD y+16(FP), R2
	MOVD acc+24(FP), R3
	MOVD R3, R4
	VLD1 (R1), [V16.S4]
	VLD1 (R2), [V17.S4]
	VLD1.P 64(R3), [V0.S4, V1.S4, V2.S4, V3.S4]
	VLD1.P 64(R3), [V4.S4, V5.S4, V6.S4, V7.S4]
	VLD1.P 64(R3), [V8.S4, V9.S4, V10.S4, V11.S4]
	VLD1.P 64(R3), [V12.S4, V13.S4, V14.S4, V15.S4]
	CMP $0, R0
	BLE fmaneon_store
fmaneon_loop:
	VFMLA V16.S4, V17.S4, V0.S4
	VFMLA V16.S4, V17.S4, V1.S4
	VFMLA V16.S4, V17.S4, V2.S4
	VFMLA V16.S4, V17.S4, V3.S4
	VFMLA V16.S4, V17.S4, V4.S4
	VFMLA V16.S4, V17.S4, V5.S4
	VFMLA V16.S4, V17.S4, V6.S4
	VFMLA V16.S4, V17.S4, V7.S4
	VFMLA V16.S4, V17.S4, V8.S4
	VFMLA V16.S4, V17.S4, V9.S4
	VFMLA V16.S4, V17.S4, V10.S4
	VFMLA V16.S4, V17.S4, V11.S4
	VFMLA V16.S4, V17.S4, V12.S4
	VFMLA V16.S4, V17.S4, V13.S4
	VFMLA V16.S4, V17.S4, V14.S4
	VFMLA V16.S4, V17.S4, V15.S4
	SUBS $1, R0, R0
	BNE fmaneon_loop
fmaneon_store:
	VST1.P [V0.S4, V1.S4, V2.S4, V3.S4], 64(R4)
	VST1.P [V4.S4, V5.S4, V6.S4, V7.S4], 64(R4)
	VST1.P [V8.S4, V9.S4, V10.S4, V11.S4], 64(R4)
	VST1.P [V12.S4, V13.S4, V14.S4, V15.S4], 64(R4)
	RET
