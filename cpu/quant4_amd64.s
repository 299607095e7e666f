//go:build amd64 && !purego

#include "textflag.h"

// func widenQ4AVX2(dst *int8, codes *uint8, blocks int, pf int)
//
// Two q4 blocks a step: their 32 bytes of codes in Y0; the low nibbles
// (Y1) are each block's first 16 values, the high ones (Y2) its last
// 16, each minus 8 as a byte. VPERM2I128 puts block 0's halves side by
// side ([lo.low, hi.low]) and block 1's ([lo.high, hi.high]). A last
// odd block goes through the xmm registers. Each step prefetches the
// codes pf bytes ahead into the L2 (none when pf is 0): the next
// chunk's, which arrive while the kernels work on this one. Into the
// L1 (PREFETCHT0) they crowded out the widened chunk the kernels read
// (a K and a V chunk, 16 KiB each at D = 128, in a 32 KiB L1): on the
// Zen 4 (family 25 model 17) a q4 step of 32768 keys (32/8 heads,
// D = 128, BenchmarkDecodeQuant/Fused/q4, four interleaved rounds)
// took 4.14–4.55 ms and 1.50–1.79× q8's, into the L2 3.55–3.77 ms and
// 1.23–1.41×.
TEXT ·widenQ4AVX2(SB), NOSPLIT, $0-32
	MOVQ dst+0(FP), DI
	MOVQ codes+8(FP), SI
	MOVQ blocks+16(FP), CX
	MOVQ pf+24(FP), DX
	MOVL $0x0f0f0f0f, AX
	VMOVD AX, X14
	VPBROADCASTD X14, Y14
	MOVL $0x08080808, AX
	VMOVD AX, X15
	VPBROADCASTD X15, Y15

pairs:
	CMPQ CX, $2
	JLT  last
	TESTQ DX, DX
	JZ    nopf
	PREFETCHT1 (SI)(DX*1)

nopf:
	VMOVDQU (SI), Y0
	VPAND   Y14, Y0, Y1
	VPSRLW  $4, Y0, Y2
	VPAND   Y14, Y2, Y2
	VPSUBB  Y15, Y1, Y1
	VPSUBB  Y15, Y2, Y2
	VPERM2I128 $0x20, Y2, Y1, Y3
	VPERM2I128 $0x31, Y2, Y1, Y4
	VMOVDQU Y3, (DI)
	VMOVDQU Y4, 32(DI)
	ADDQ $32, SI
	ADDQ $64, DI
	SUBQ $2, CX
	JMP  pairs

last:
	TESTQ CX, CX
	JZ    done
	VMOVDQU (SI), X0
	VPAND   X14, X0, X1
	VPSRLW  $4, X0, X2
	VPAND   X14, X2, X2
	VPSUBB  X15, X1, X1
	VPSUBB  X15, X2, X2
	VMOVDQU X1, (DI)
	VMOVDQU X2, 16(DI)

done:
	VZEROUPPER
	RET
