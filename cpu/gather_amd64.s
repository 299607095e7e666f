//go:build amd64 && !purego

#include "textflag.h"

// func gatherRowsAVX2(dst unsafe.Pointer, src unsafe.Pointer, offs []int, rowBytes int)
//
// Copies len(offs) rows of rowBytes bytes (a multiple of 32, ≥ 32), row j
// from src + offs[j] to dst + j·rowBytes, prefetching row j+8's cache
// lines as it copies row j: rows at random places (an index list's
// keys) are each a miss, and eight of them in flight hide most of the
// latency that one at a time pays in full.
TEXT ·gatherRowsAVX2(SB), NOSPLIT, $0-48
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ offs_base+16(FP), R8
	MOVQ offs_len+24(FP), R9
	MOVQ rowBytes+40(FP), R10
	XORQ CX, CX

grow:
	CMPQ CX, R9
	JAE  gdone
	LEAQ 8(CX), AX
	CMPQ AX, R9
	JAE  gcopy
	MOVQ (R8)(AX*8), BX
	ADDQ SI, BX
	XORQ DX, DX

gpf:
	PREFETCHT0 (BX)(DX*1)
	ADDQ       $64, DX
	CMPQ       DX, R10
	JB         gpf

gcopy:
	MOVQ (R8)(CX*8), BX
	ADDQ SI, BX
	XORQ DX, DX

gmove:
	VMOVDQU (BX)(DX*1), Y0
	VMOVDQU Y0, (DI)(DX*1)
	ADDQ    $32, DX
	CMPQ    DX, R10
	JB      gmove
	ADDQ    R10, DI
	INCQ    CX
	JMP     grow

gdone:
	VZEROUPPER
	RET
