//go:build amd64 && !purego

#include "textflag.h"

// Go's assembler has no AMX: each AMX instruction is its bytes, with the
// instruction in GNU syntax beside it, which cpu/_gen/x86bytes.py checks
// against GNU as (CI runs it).

// func amxBF16(cfg *[64]byte, jobs *amxJob, n int, mode int, alpha, beta float32, t *float32)
//
// Runs n jobs (amxJob: a 32×32 block of C and 16·q pairs of k) on AMX
// tiles under the configuration cfg (amxConfig: eight tiles of 16 rows
// of 64 bytes), which it loads first and releases last, so that no tile
// outlives the call. Per job, C's four 16×16 float32 tiles (tmm0–3) take
// TDPBF16PS of A's two 16-row tiles (tmm4, tmm5: 16 rows of 16 pairs,
// read in place at row stride lda) and the packed panel's two 16-column
// tiles (tmm6, tmm7: 16 pairs of 16 columns each, from rows of 32 words,
// 128 bytes) for each 16 pairs. Under mode 1 (alpha = beta = 1) the
// tiles start from C and are stored back to it; otherwise they start at
// zero, are stored to the 32×32 float32 scratch t (rows of 128 bytes)
// and C is set to alpha·t (mode 0, beta = 0: C not read) or to
// alpha·t + beta·C (mode 2).
TEXT ·amxBF16(SB), NOSPLIT, $0-48
	MOVQ          cfg+0(FP), AX
	MOVQ          jobs+8(FP), R8
	MOVQ          n+16(FP), R9
	MOVQ          mode+24(FP), BX
	VBROADCASTSS  alpha+32(FP), Z30
	VBROADCASTSS  beta+36(FP), Z31
	TESTQ         R9, R9
	JZ            done
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00 // ldtilecfg (%rax)
	MOVQ          t+40(FP), AX
	MOVQ          $128, R13              // the panel's and t's row stride

job:
	MOVQ          0(R8), SI              // A's first row
	MOVQ          8(R8), DX              // A's row stride, bytes
	MOVQ          16(R8), DI             // the panel's first pair
	MOVQ          24(R8), CX             // pairs, a multiple of 16
	MOVQ          32(R8), R10            // C
	MOVQ          40(R8), R11            // C's row stride, bytes
	MOVQ          DX, R12
	SHLQ          $4, R12
	ADDQ          SI, R12                // A's row 16
	MOVQ          R11, R14
	SHLQ          $4, R14
	ADDQ          R10, R14               // C's row 16
	CMPQ          BX, $1
	JNE           zero
	BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x04; BYTE $0x1a // tileloadd (%r10,%r11,1),%tmm0
	BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x4c; BYTE $0x1a; BYTE $0x40 // tileloadd 0x40(%r10,%r11,1),%tmm1
	BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x14; BYTE $0x1e // tileloadd (%r14,%r11,1),%tmm2
	BYTE $0xc4; BYTE $0x82; BYTE $0x7b; BYTE $0x4b; BYTE $0x5c; BYTE $0x1e; BYTE $0x40 // tileloadd 0x40(%r14,%r11,1),%tmm3
	JMP           pairs

zero:
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // tilezero %tmm0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // tilezero %tmm1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // tilezero %tmm2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8 // tilezero %tmm3

pairs:
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x16 // tileloadd (%rsi,%rdx,1),%tmm4
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x14 // tileloadd (%r12,%rdx,1),%tmm5
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x2f // tileloadd (%rdi,%r13,1),%tmm6
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x7c; BYTE $0x2f; BYTE $0x40 // tileloadd 0x40(%rdi,%r13,1),%tmm7
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4 // tdpbf16ps %tmm6,%tmm4,%tmm0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc // tdpbf16ps %tmm7,%tmm4,%tmm1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5 // tdpbf16ps %tmm6,%tmm5,%tmm2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd // tdpbf16ps %tmm7,%tmm5,%tmm3
	ADDQ          $64, SI                // 16 pairs of A's rows
	ADDQ          $64, R12
	ADDQ          $2048, DI              // 16 rows of the panel
	SUBQ          $16, CX
	JNZ           pairs

	CMPQ          BX, $1
	JNE           scratch
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x1a // tilestored %tmm0,(%r10,%r11,1)
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x4c; BYTE $0x1a; BYTE $0x40 // tilestored %tmm1,0x40(%r10,%r11,1)
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x1e // tilestored %tmm2,(%r14,%r11,1)
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x5c; BYTE $0x1e; BYTE $0x40 // tilestored %tmm3,0x40(%r14,%r11,1)
	JMP           next

scratch:
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x28 // tilestored %tmm0,(%rax,%r13,1)
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x4c; BYTE $0x28; BYTE $0x40 // tilestored %tmm1,0x40(%rax,%r13,1)
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x94; BYTE $0x28; BYTE $0x00; BYTE $0x08; BYTE $0x00; BYTE $0x00 // tilestored %tmm2,0x800(%rax,%r13,1)
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7a; BYTE $0x4b; BYTE $0x9c; BYTE $0x28; BYTE $0x40; BYTE $0x08; BYTE $0x00; BYTE $0x00 // tilestored %tmm3,0x840(%rax,%r13,1)
	MOVQ          AX, SI
	MOVQ          $32, CX

rows:
	VMULPS        (SI), Z30, Z0          // alpha·t
	VMULPS        64(SI), Z30, Z1
	TESTQ         BX, BX
	JZ            store
	VFMADD231PS   (R10), Z31, Z0         // + beta·C
	VFMADD231PS   64(R10), Z31, Z1

store:
	VMOVUPS       Z0, (R10)
	VMOVUPS       Z1, 64(R10)
	ADDQ          $128, SI
	ADDQ          R11, R10
	DECQ          CX
	JNZ           rows

next:
	ADDQ          $48, R8
	DECQ          R9
	JNZ           job
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // tilerelease

done:
	VZEROUPPER
	RET

// func amxPeak(cfg *[64]byte, n int, a, b *uint16, c *float32)
//
// AMX's peak, the tiles' probe (AMXProbe): under cfg (amxConfig) it
// loads A's two 16-row tiles (tmm4, tmm5: a and a+1024, rows of 64
// bytes) and B's two (tmm6, tmm7: side by side in rows of 128 bytes at
// b) once, zeroes C's four (tmm0–3), runs n rounds of four independent
// TDPBF16PS on them, the tiles' four accumulators of amxBF16's blocks
// with nothing else in the loop, stores C to c (32×32 float32s, rows of
// 128 bytes) and releases the tiles.
TEXT ·amxPeak(SB), NOSPLIT, $0-40
	MOVQ          cfg+0(FP), AX
	MOVQ          n+8(FP), CX
	MOVQ          a+16(FP), SI
	MOVQ          b+24(FP), DI
	MOVQ          c+32(FP), R10
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0x00 // ldtilecfg (%rax)
	MOVQ          $64, DX                // A's row stride
	LEAQ          1024(SI), R12          // A's row 16
	MOVQ          $128, R13              // B's row stride
	MOVQ          $128, R11              // C's row stride
	LEAQ          2048(R10), R14         // C's row 16
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x4b; BYTE $0x24; BYTE $0x16 // tileloadd (%rsi,%rdx,1),%tmm4
	BYTE $0xc4; BYTE $0xc2; BYTE $0x7b; BYTE $0x4b; BYTE $0x2c; BYTE $0x14 // tileloadd (%r12,%rdx,1),%tmm5
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x34; BYTE $0x2f // tileloadd (%rdi,%r13,1),%tmm6
	BYTE $0xc4; BYTE $0xa2; BYTE $0x7b; BYTE $0x4b; BYTE $0x7c; BYTE $0x2f; BYTE $0x40 // tileloadd 0x40(%rdi,%r13,1),%tmm7
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc0 // tilezero %tmm0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xc8 // tilezero %tmm1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd0 // tilezero %tmm2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x7b; BYTE $0x49; BYTE $0xd8 // tilezero %tmm3
	TESTQ         CX, CX
	JZ            peakstore

peakloop:
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xc4 // tdpbf16ps %tmm6,%tmm4,%tmm0
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xcc // tdpbf16ps %tmm7,%tmm4,%tmm1
	BYTE $0xc4; BYTE $0xe2; BYTE $0x4a; BYTE $0x5c; BYTE $0xd5 // tdpbf16ps %tmm6,%tmm5,%tmm2
	BYTE $0xc4; BYTE $0xe2; BYTE $0x42; BYTE $0x5c; BYTE $0xdd // tdpbf16ps %tmm7,%tmm5,%tmm3
	DECQ          CX
	JNZ           peakloop

peakstore:
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x04; BYTE $0x1a // tilestored %tmm0,(%r10,%r11,1)
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x4c; BYTE $0x1a; BYTE $0x40 // tilestored %tmm1,0x40(%r10,%r11,1)
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x14; BYTE $0x1e // tilestored %tmm2,(%r14,%r11,1)
	BYTE $0xc4; BYTE $0x82; BYTE $0x7a; BYTE $0x4b; BYTE $0x5c; BYTE $0x1e; BYTE $0x40 // tilestored %tmm3,0x40(%r14,%r11,1)
	BYTE $0xc4; BYTE $0xe2; BYTE $0x78; BYTE $0x49; BYTE $0xc0 // tilerelease
	RET
