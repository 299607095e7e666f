//go:build amd64 && !purego

#include "textflag.h"

// The decoding kernels: few query rows (a KV head's group of query heads
// at one or a few positions) against a key tile, reading K and V rows in
// place, with no packing. Sixteen lanes, AVX-512F.

// func dotRows4AVX512(q *float32, ldq int, k *float32, ldk int, n int, d int, s *float32, lds int, alpha float32)
//
// s[r][j] = alpha · Σ_c q[r][c]·k[j][c] for rows r < 4 and keys j < n:
// four keys at a time, sixteen accumulators (row r, key t in Z(4r+t)),
// each reduced to its sum by a transposing tree so that 128-bit lane r
// of the result holds row r's four scores, stored with one extract a
// row. n a multiple of 4 (≥ 4), d a multiple of 16 (≥ 16); strides in
// elements.
TEXT ·dotRows4AVX512(SB), NOSPLIT, $0-68
	MOVQ         q+0(FP), SI
	MOVQ         ldq+8(FP), R8
	SHLQ         $2, R8
	LEAQ         (SI)(R8*2), R12           // q row 2
	LEAQ         (R12)(R8*1), R13          // q row 3
	ADDQ         SI, R8                    // q row 1
	MOVQ         k+16(FP), DI
	MOVQ         ldk+24(FP), R9
	SHLQ         $2, R9                    // K row stride, bytes
	MOVQ         n+32(FP), CX
	SHRQ         $2, CX                    // key quads
	MOVQ         d+40(FP), DX
	SHLQ         $2, DX                    // row length, bytes
	MOVQ         s+48(FP), R10
	MOVQ         lds+56(FP), R11
	SHLQ         $2, R11
	VBROADCASTSS alpha+64(FP), Z31

dquad:
	LEAQ         (DI)(R9*1), BX            // keys j+1, j+2, j+3
	LEAQ         (DI)(R9*2), R14
	LEAQ         (R14)(R9*1), R15
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3
	VPXORD       Z4, Z4, Z4
	VPXORD       Z5, Z5, Z5
	VPXORD       Z6, Z6, Z6
	VPXORD       Z7, Z7, Z7
	VPXORD       Z8, Z8, Z8
	VPXORD       Z9, Z9, Z9
	VPXORD       Z10, Z10, Z10
	VPXORD       Z11, Z11, Z11
	VPXORD       Z12, Z12, Z12
	VPXORD       Z13, Z13, Z13
	VPXORD       Z14, Z14, Z14
	VPXORD       Z15, Z15, Z15
	XORQ         AX, AX

dinner:
	VMOVUPS      (DI)(AX*1), Z16
	VMOVUPS      (BX)(AX*1), Z17
	VMOVUPS      (R14)(AX*1), Z18
	VMOVUPS      (R15)(AX*1), Z19
	VMOVUPS      (SI)(AX*1), Z20
	VFMADD231PS  Z16, Z20, Z0
	VFMADD231PS  Z17, Z20, Z1
	VFMADD231PS  Z18, Z20, Z2
	VFMADD231PS  Z19, Z20, Z3
	VMOVUPS      (R8)(AX*1), Z21
	VFMADD231PS  Z16, Z21, Z4
	VFMADD231PS  Z17, Z21, Z5
	VFMADD231PS  Z18, Z21, Z6
	VFMADD231PS  Z19, Z21, Z7
	VMOVUPS      (R12)(AX*1), Z22
	VFMADD231PS  Z16, Z22, Z8
	VFMADD231PS  Z17, Z22, Z9
	VFMADD231PS  Z18, Z22, Z10
	VFMADD231PS  Z19, Z22, Z11
	VMOVUPS      (R13)(AX*1), Z23
	VFMADD231PS  Z16, Z23, Z12
	VFMADD231PS  Z17, Z23, Z13
	VFMADD231PS  Z18, Z23, Z14
	VFMADD231PS  Z19, Z23, Z15
	ADDQ         $64, AX
	CMPQ         AX, DX
	JB           dinner

	// Pairs of accumulators: per 128-bit lane (v, v', v, v') partial sums.
	VUNPCKLPS    Z1, Z0, Z24
	VUNPCKHPS    Z1, Z0, Z25
	VADDPS       Z25, Z24, Z16
	VUNPCKLPS    Z3, Z2, Z24
	VUNPCKHPS    Z3, Z2, Z25
	VADDPS       Z25, Z24, Z17
	VUNPCKLPS    Z5, Z4, Z24
	VUNPCKHPS    Z5, Z4, Z25
	VADDPS       Z25, Z24, Z18
	VUNPCKLPS    Z7, Z6, Z24
	VUNPCKHPS    Z7, Z6, Z25
	VADDPS       Z25, Z24, Z19
	VUNPCKLPS    Z9, Z8, Z24
	VUNPCKHPS    Z9, Z8, Z25
	VADDPS       Z25, Z24, Z20
	VUNPCKLPS    Z11, Z10, Z24
	VUNPCKHPS    Z11, Z10, Z25
	VADDPS       Z25, Z24, Z21
	VUNPCKLPS    Z13, Z12, Z24
	VUNPCKHPS    Z13, Z12, Z25
	VADDPS       Z25, Z24, Z22
	VUNPCKLPS    Z15, Z14, Z24
	VUNPCKHPS    Z15, Z14, Z25
	VADDPS       Z25, Z24, Z23
	// Quads: per 128-bit lane (v₀, v₁, v₂, v₃) of one row.
	VUNPCKLPD    Z17, Z16, Z24
	VUNPCKHPD    Z17, Z16, Z25
	VADDPS       Z25, Z24, Z0
	VUNPCKLPD    Z19, Z18, Z24
	VUNPCKHPD    Z19, Z18, Z25
	VADDPS       Z25, Z24, Z1
	VUNPCKLPD    Z21, Z20, Z24
	VUNPCKHPD    Z21, Z20, Z25
	VADDPS       Z25, Z24, Z2
	VUNPCKLPD    Z23, Z22, Z24
	VUNPCKHPD    Z23, Z22, Z25
	VADDPS       Z25, Z24, Z3
	// Sum the four 128-bit lanes: lane r ends as row r's four sums.
	VSHUFF32X4   $0x88, Z1, Z0, Z24
	VSHUFF32X4   $0xdd, Z1, Z0, Z25
	VADDPS       Z25, Z24, Z4
	VSHUFF32X4   $0x88, Z3, Z2, Z24
	VSHUFF32X4   $0xdd, Z3, Z2, Z25
	VADDPS       Z25, Z24, Z5
	VSHUFF32X4   $0x88, Z5, Z4, Z24
	VSHUFF32X4   $0xdd, Z5, Z4, Z25
	VADDPS       Z25, Z24, Z6
	VMULPS       Z31, Z6, Z6
	VMOVUPS      X6, (R10)
	VEXTRACTF32X4 $1, Z6, (R10)(R11*1)
	VEXTRACTF32X4 $2, Z6, (R10)(R11*2)
	LEAQ         (R11)(R11*2), AX
	VEXTRACTF32X4 $3, Z6, (R10)(AX*1)
	ADDQ         $16, R10
	LEAQ         (DI)(R9*4), DI
	DECQ         CX
	JNZ          dquad
	VZEROUPPER
	RET

// func axpyRows4AVX512(p *float32, ldp int, v *float32, ldv int, n int, dv int, acc *float32, ldacc int)
//
// acc[r][c] += Σ_j p[r][j]·v[j][c] for rows r < 4, keys j < n and
// columns c < dv: sixty-four columns at a time (rows × four vectors in
// Z0 … Z15, one weight broadcast per row and key), then sixteen. n ≥ 1,
// dv a multiple of 16; strides in elements.
TEXT ·axpyRows4AVX512(SB), NOSPLIT, $0-64
	MOVQ         p+0(FP), SI
	MOVQ         ldp+8(FP), R8
	SHLQ         $2, R8
	LEAQ         (SI)(R8*2), R12           // p row 2
	LEAQ         (R12)(R8*1), R13          // p row 3
	ADDQ         SI, R8                    // p row 1
	MOVQ         v+16(FP), DI
	MOVQ         ldv+24(FP), R9
	SHLQ         $2, R9
	MOVQ         n+32(FP), CX
	MOVQ         dv+40(FP), DX
	SHLQ         $2, DX                    // row length, bytes
	MOVQ         acc+48(FP), R10
	MOVQ         ldacc+56(FP), R11
	SHLQ         $2, R11
	XORQ         BX, BX                    // column offset, bytes

a64:
	LEAQ         256(BX), AX
	CMPQ         AX, DX
	JA           a16
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3
	VPXORD       Z4, Z4, Z4
	VPXORD       Z5, Z5, Z5
	VPXORD       Z6, Z6, Z6
	VPXORD       Z7, Z7, Z7
	VPXORD       Z8, Z8, Z8
	VPXORD       Z9, Z9, Z9
	VPXORD       Z10, Z10, Z10
	VPXORD       Z11, Z11, Z11
	VPXORD       Z12, Z12, Z12
	VPXORD       Z13, Z13, Z13
	VPXORD       Z14, Z14, Z14
	VPXORD       Z15, Z15, Z15
	LEAQ         (DI)(BX*1), R14           // v[0][c]
	XORQ         AX, AX
a64key:
	VMOVUPS      (R14), Z16
	VMOVUPS      64(R14), Z17
	VMOVUPS      128(R14), Z18
	VMOVUPS      192(R14), Z19
	VBROADCASTSS (SI)(AX*4), Z20
	VFMADD231PS  Z16, Z20, Z0
	VFMADD231PS  Z17, Z20, Z1
	VFMADD231PS  Z18, Z20, Z2
	VFMADD231PS  Z19, Z20, Z3
	VBROADCASTSS (R8)(AX*4), Z21
	VFMADD231PS  Z16, Z21, Z4
	VFMADD231PS  Z17, Z21, Z5
	VFMADD231PS  Z18, Z21, Z6
	VFMADD231PS  Z19, Z21, Z7
	VBROADCASTSS (R12)(AX*4), Z22
	VFMADD231PS  Z16, Z22, Z8
	VFMADD231PS  Z17, Z22, Z9
	VFMADD231PS  Z18, Z22, Z10
	VFMADD231PS  Z19, Z22, Z11
	VBROADCASTSS (R13)(AX*4), Z23
	VFMADD231PS  Z16, Z23, Z12
	VFMADD231PS  Z17, Z23, Z13
	VFMADD231PS  Z18, Z23, Z14
	VFMADD231PS  Z19, Z23, Z15
	ADDQ         R9, R14
	INCQ         AX
	CMPQ         AX, CX
	JB           a64key
	LEAQ         (R10)(BX*1), R15          // acc[0][c]
	VADDPS       0(R15), Z0, Z0
	VMOVUPS      Z0, 0(R15)
	VADDPS       64(R15), Z1, Z1
	VMOVUPS      Z1, 64(R15)
	VADDPS       128(R15), Z2, Z2
	VMOVUPS      Z2, 128(R15)
	VADDPS       192(R15), Z3, Z3
	VMOVUPS      Z3, 192(R15)
	ADDQ         R11, R15
	VADDPS       0(R15), Z4, Z4
	VMOVUPS      Z4, 0(R15)
	VADDPS       64(R15), Z5, Z5
	VMOVUPS      Z5, 64(R15)
	VADDPS       128(R15), Z6, Z6
	VMOVUPS      Z6, 128(R15)
	VADDPS       192(R15), Z7, Z7
	VMOVUPS      Z7, 192(R15)
	ADDQ         R11, R15
	VADDPS       0(R15), Z8, Z8
	VMOVUPS      Z8, 0(R15)
	VADDPS       64(R15), Z9, Z9
	VMOVUPS      Z9, 64(R15)
	VADDPS       128(R15), Z10, Z10
	VMOVUPS      Z10, 128(R15)
	VADDPS       192(R15), Z11, Z11
	VMOVUPS      Z11, 192(R15)
	ADDQ         R11, R15
	VADDPS       0(R15), Z12, Z12
	VMOVUPS      Z12, 0(R15)
	VADDPS       64(R15), Z13, Z13
	VMOVUPS      Z13, 64(R15)
	VADDPS       128(R15), Z14, Z14
	VMOVUPS      Z14, 128(R15)
	VADDPS       192(R15), Z15, Z15
	VMOVUPS      Z15, 192(R15)
	ADDQ         $256, BX
	JMP          a64

a16:
	CMPQ         BX, DX
	JAE          adone
	VPXORD       Z0, Z0, Z0
	VPXORD       Z1, Z1, Z1
	VPXORD       Z2, Z2, Z2
	VPXORD       Z3, Z3, Z3
	LEAQ         (DI)(BX*1), R14
	XORQ         AX, AX
a16key:
	VMOVUPS      (R14), Z16
	VBROADCASTSS (SI)(AX*4), Z20
	VFMADD231PS  Z16, Z20, Z0
	VBROADCASTSS (R8)(AX*4), Z21
	VFMADD231PS  Z16, Z21, Z1
	VBROADCASTSS (R12)(AX*4), Z22
	VFMADD231PS  Z16, Z22, Z2
	VBROADCASTSS (R13)(AX*4), Z23
	VFMADD231PS  Z16, Z23, Z3
	ADDQ         R9, R14
	INCQ         AX
	CMPQ         AX, CX
	JB           a16key
	LEAQ         (R10)(BX*1), R15
	VADDPS       (R15), Z0, Z0
	VMOVUPS      Z0, (R15)
	ADDQ         R11, R15
	VADDPS       (R15), Z1, Z1
	VMOVUPS      Z1, (R15)
	ADDQ         R11, R15
	VADDPS       (R15), Z2, Z2
	VMOVUPS      Z2, (R15)
	ADDQ         R11, R15
	VADDPS       (R15), Z3, Z3
	VMOVUPS      Z3, (R15)
	ADDQ         $64, BX
	JMP          a16

adone:
	VZEROUPPER
	RET
