//go:build amd64 && !purego

#include "textflag.h"

// Eight copies of each constant of expShiftAVX2, 32 bytes apart: lo,
// log2(e), 1.5·2²³, ln 2 (high part), ln 2 (low part), the exponent bias
// 127 (an int32), then the polynomial's coefficients 1/7! … 1/1!, 1.
DATA expc<>+0(SB)/4, $0xc2aeac4f
DATA expc<>+4(SB)/4, $0xc2aeac4f
DATA expc<>+8(SB)/4, $0xc2aeac4f
DATA expc<>+12(SB)/4, $0xc2aeac4f
DATA expc<>+16(SB)/4, $0xc2aeac4f
DATA expc<>+20(SB)/4, $0xc2aeac4f
DATA expc<>+24(SB)/4, $0xc2aeac4f
DATA expc<>+28(SB)/4, $0xc2aeac4f
DATA expc<>+32(SB)/4, $0x3fb8aa3b
DATA expc<>+36(SB)/4, $0x3fb8aa3b
DATA expc<>+40(SB)/4, $0x3fb8aa3b
DATA expc<>+44(SB)/4, $0x3fb8aa3b
DATA expc<>+48(SB)/4, $0x3fb8aa3b
DATA expc<>+52(SB)/4, $0x3fb8aa3b
DATA expc<>+56(SB)/4, $0x3fb8aa3b
DATA expc<>+60(SB)/4, $0x3fb8aa3b
DATA expc<>+64(SB)/4, $0x4b400000
DATA expc<>+68(SB)/4, $0x4b400000
DATA expc<>+72(SB)/4, $0x4b400000
DATA expc<>+76(SB)/4, $0x4b400000
DATA expc<>+80(SB)/4, $0x4b400000
DATA expc<>+84(SB)/4, $0x4b400000
DATA expc<>+88(SB)/4, $0x4b400000
DATA expc<>+92(SB)/4, $0x4b400000
DATA expc<>+96(SB)/4, $0x3f318000
DATA expc<>+100(SB)/4, $0x3f318000
DATA expc<>+104(SB)/4, $0x3f318000
DATA expc<>+108(SB)/4, $0x3f318000
DATA expc<>+112(SB)/4, $0x3f318000
DATA expc<>+116(SB)/4, $0x3f318000
DATA expc<>+120(SB)/4, $0x3f318000
DATA expc<>+124(SB)/4, $0x3f318000
DATA expc<>+128(SB)/4, $0xb95e8083
DATA expc<>+132(SB)/4, $0xb95e8083
DATA expc<>+136(SB)/4, $0xb95e8083
DATA expc<>+140(SB)/4, $0xb95e8083
DATA expc<>+144(SB)/4, $0xb95e8083
DATA expc<>+148(SB)/4, $0xb95e8083
DATA expc<>+152(SB)/4, $0xb95e8083
DATA expc<>+156(SB)/4, $0xb95e8083
DATA expc<>+160(SB)/4, $0x0000007f
DATA expc<>+164(SB)/4, $0x0000007f
DATA expc<>+168(SB)/4, $0x0000007f
DATA expc<>+172(SB)/4, $0x0000007f
DATA expc<>+176(SB)/4, $0x0000007f
DATA expc<>+180(SB)/4, $0x0000007f
DATA expc<>+184(SB)/4, $0x0000007f
DATA expc<>+188(SB)/4, $0x0000007f
DATA expc<>+192(SB)/4, $0x39500d01
DATA expc<>+196(SB)/4, $0x39500d01
DATA expc<>+200(SB)/4, $0x39500d01
DATA expc<>+204(SB)/4, $0x39500d01
DATA expc<>+208(SB)/4, $0x39500d01
DATA expc<>+212(SB)/4, $0x39500d01
DATA expc<>+216(SB)/4, $0x39500d01
DATA expc<>+220(SB)/4, $0x39500d01
DATA expc<>+224(SB)/4, $0x3ab60b61
DATA expc<>+228(SB)/4, $0x3ab60b61
DATA expc<>+232(SB)/4, $0x3ab60b61
DATA expc<>+236(SB)/4, $0x3ab60b61
DATA expc<>+240(SB)/4, $0x3ab60b61
DATA expc<>+244(SB)/4, $0x3ab60b61
DATA expc<>+248(SB)/4, $0x3ab60b61
DATA expc<>+252(SB)/4, $0x3ab60b61
DATA expc<>+256(SB)/4, $0x3c088889
DATA expc<>+260(SB)/4, $0x3c088889
DATA expc<>+264(SB)/4, $0x3c088889
DATA expc<>+268(SB)/4, $0x3c088889
DATA expc<>+272(SB)/4, $0x3c088889
DATA expc<>+276(SB)/4, $0x3c088889
DATA expc<>+280(SB)/4, $0x3c088889
DATA expc<>+284(SB)/4, $0x3c088889
DATA expc<>+288(SB)/4, $0x3d2aaaab
DATA expc<>+292(SB)/4, $0x3d2aaaab
DATA expc<>+296(SB)/4, $0x3d2aaaab
DATA expc<>+300(SB)/4, $0x3d2aaaab
DATA expc<>+304(SB)/4, $0x3d2aaaab
DATA expc<>+308(SB)/4, $0x3d2aaaab
DATA expc<>+312(SB)/4, $0x3d2aaaab
DATA expc<>+316(SB)/4, $0x3d2aaaab
DATA expc<>+320(SB)/4, $0x3e2aaaab
DATA expc<>+324(SB)/4, $0x3e2aaaab
DATA expc<>+328(SB)/4, $0x3e2aaaab
DATA expc<>+332(SB)/4, $0x3e2aaaab
DATA expc<>+336(SB)/4, $0x3e2aaaab
DATA expc<>+340(SB)/4, $0x3e2aaaab
DATA expc<>+344(SB)/4, $0x3e2aaaab
DATA expc<>+348(SB)/4, $0x3e2aaaab
DATA expc<>+352(SB)/4, $0x3f000000
DATA expc<>+356(SB)/4, $0x3f000000
DATA expc<>+360(SB)/4, $0x3f000000
DATA expc<>+364(SB)/4, $0x3f000000
DATA expc<>+368(SB)/4, $0x3f000000
DATA expc<>+372(SB)/4, $0x3f000000
DATA expc<>+376(SB)/4, $0x3f000000
DATA expc<>+380(SB)/4, $0x3f000000
DATA expc<>+384(SB)/4, $0x3f800000
DATA expc<>+388(SB)/4, $0x3f800000
DATA expc<>+392(SB)/4, $0x3f800000
DATA expc<>+396(SB)/4, $0x3f800000
DATA expc<>+400(SB)/4, $0x3f800000
DATA expc<>+404(SB)/4, $0x3f800000
DATA expc<>+408(SB)/4, $0x3f800000
DATA expc<>+412(SB)/4, $0x3f800000
DATA expc<>+416(SB)/4, $0x3f800000
DATA expc<>+420(SB)/4, $0x3f800000
DATA expc<>+424(SB)/4, $0x3f800000
DATA expc<>+428(SB)/4, $0x3f800000
DATA expc<>+432(SB)/4, $0x3f800000
DATA expc<>+436(SB)/4, $0x3f800000
DATA expc<>+440(SB)/4, $0x3f800000
DATA expc<>+444(SB)/4, $0x3f800000
GLOBL expc<>(SB), RODATA|NOPTR, $448

// EXPSUM8 folds the eight-lane block sum Y15 into the float64 sums of
// Y14's four lanes and clears it, at the end of a block of at most 16
// vectors (the AVX2 loops' EXPSUM16).
#define EXPSUM8 \
	VCVTPS2PD    X15, Y12; \
	VADDPD       Y12, Y14, Y14; \
	VEXTRACTF128 $1, Y15, X15; \
	VCVTPS2PD    X15, Y12; \
	VADDPD       Y12, Y14, Y14; \
	VXORPS       Y15, Y15, Y15

// EXPTOTAL8 adds the float64 sums of Y14 into X14's low lane.
#define EXPTOTAL8 \
	VEXTRACTF128 $1, Y14, X15; \
	VADDPD       X15, X14, X14; \
	VHADDPD      X14, X14, X14

// func expShiftAVX2(row []float32, m float32) float64
//
// expShift for len(row) a multiple of 8, eight lanes at a time with AVX2
// and FMA: the same range reduction and coefficients as expf. The sum
// runs in float32, eight lanes, over blocks of at most 16 vectors, each
// block then added to a float64 accumulator of four lanes: a lane's
// float32 sum has at most 16 terms (each at most 1), so it is within 16
// units in its last place. The polynomial is evaluated by Estrin's scheme
// rather than Horner's rule, as
//
//	p = 1 + [(r + r²·(c2 + c3·r)) + r⁴·((c4 + c5·r) + r²·(c6 + c7·r))]
//
// four operations deep instead of seven: the loop is bound by that
// chain's latency, not by throughput. The 1 goes in last, so the large
// term is rounded once.
TEXT ·expShiftAVX2(SB), NOSPLIT, $0-40
	MOVQ         row_base+0(FP), SI
	MOVQ         row_len+8(FP), CX
	SHRQ         $3, CX
	VBROADCASTSS m+24(FP), Y0
	VXORPD       Y14, Y14, Y14
	VXORPD       Y15, Y15, Y15
	VMOVUPS      expc<>+0(SB), Y1
	VMOVUPS      expc<>+32(SB), Y2
	VMOVUPS      expc<>+64(SB), Y3
	VMOVUPS      expc<>+96(SB), Y4
	VMOVUPS      expc<>+128(SB), Y5
	VMOVUPS      expc<>+160(SB), Y13
	TESTQ        CX, CX
	JZ           done

loop:
	VMOVUPS      (SI), Y6
	VSUBPS       Y0, Y6, Y6                    // x = v − m
	VCMPPS       $0x1d, Y1, Y6, Y7             // keep = x ≥ lo (false for NaN)
	VMOVAPS      Y3, Y8
	VFMADD231PS  Y2, Y6, Y8                    // n = x·log2e + round
	VSUBPS       Y3, Y8, Y8                    // n = round(x·log2e)
	VMOVAPS      Y6, Y9
	VFNMADD231PS Y4, Y8, Y9                    // r = x − n·ln2hi
	VFNMADD231PS Y5, Y8, Y9                    // r −= n·ln2lo
	VMULPS       Y9, Y9, Y6                    // r² (x is done with)
	VMOVUPS      expc<>+352(SB), Y10
	VFMADD231PS  expc<>+320(SB), Y9, Y10       // c2 + c3·r
	VMOVUPS      expc<>+288(SB), Y11
	VFMADD231PS  expc<>+256(SB), Y9, Y11       // c4 + c5·r
	VMOVUPS      expc<>+224(SB), Y12
	VFMADD231PS  expc<>+192(SB), Y9, Y12       // c6 + c7·r
	VFMADD231PS  Y10, Y6, Y9                   // a = r + r²·(c2 + c3·r)
	VFMADD231PS  Y12, Y6, Y11                  // b = (c4 + c5·r) + r²·(c6 + c7·r)
	VMULPS       Y6, Y6, Y6                    // r⁴
	VFMADD231PS  Y11, Y6, Y9                   // a + r⁴·b
	VADDPS       expc<>+416(SB), Y9, Y10       // p = 1 + that
	VCVTPS2DQ    Y8, Y11
	VPADDD       Y13, Y11, Y11
	VPSLLD       $23, Y11, Y11                 // 2^n as float32 bits
	VMULPS       Y11, Y10, Y10                 // e = p·2^n
	VANDPS       Y7, Y10, Y10                  // 0 where x < lo
	VMOVUPS      Y10, (SI)
	VADDPS       Y10, Y15, Y15                 // the block's float32 sum
	ADDQ         $32, SI
	DECQ         CX
	TESTQ        $15, CX
	JNZ          loop

	// End of a block (CX a multiple of 16, or 0): its sum into float64.
	EXPSUM8
	TESTQ        CX, CX
	JNZ          loop

done:
	EXPTOTAL8
	VZEROUPPER
	VMOVSD        X14, ret+32(FP)
	RET

// func rowMaxAVX2(row []float32) float32
//
// The largest value of row, len(row) a multiple of 8 and at least 8, eight
// lanes at a time (VMAXPS; the values are finite or −Inf).
TEXT ·rowMaxAVX2(SB), NOSPLIT, $0-28
	MOVQ         row_base+0(FP), SI
	MOVQ         row_len+8(FP), CX
	SHRQ         $3, CX
	VMOVUPS      (SI), Y0
	ADDQ         $32, SI
	DECQ         CX
	JZ           reduce

maxloop:
	VMAXPS       (SI), Y0, Y0
	ADDQ         $32, SI
	DECQ         CX
	JNZ          maxloop

reduce:
	VEXTRACTF128 $1, Y0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0x4e, X0, X1
	VMAXPS       X1, X0, X0
	VPERMILPS    $0xb1, X0, X1
	VMAXPS       X1, X0, X0
	VZEROUPPER
	VMOVSS        X0, ret+24(FP)
	RET

// func scaleAVX2(x []float32, a float32)
//
// x *= a, len(x) a multiple of 8, eight lanes at a time.
TEXT ·scaleAVX2(SB), NOSPLIT, $0-28
	MOVQ         x_base+0(FP), SI
	MOVQ         x_len+8(FP), CX
	SHRQ         $3, CX
	JZ           scaledone
	VBROADCASTSS a+24(FP), Y0

scaleloop:
	VMULPS       (SI), Y0, Y1
	VMOVUPS      Y1, (SI)
	ADDQ         $32, SI
	DECQ         CX
	JNZ          scaleloop
	VZEROUPPER

scaledone:
	RET

// EXPCONSTS16 loads the constants of EXPSHIFT16: lo, log₂e, 1.5·2²³,
// ln 2's two parts in Z1–Z5, c0 = 1 in Z16 and c2 … c7 (1/2 … 1/5040) in
// Z18–Z23.
#define EXPCONSTS16 \
	VBROADCASTSS  expc<>+0(SB), Z1; \
	VBROADCASTSS  expc<>+32(SB), Z2; \
	VBROADCASTSS  expc<>+64(SB), Z3; \
	VBROADCASTSS  expc<>+96(SB), Z4; \
	VBROADCASTSS  expc<>+128(SB), Z5; \
	VBROADCASTSS  expc<>+416(SB), Z16; \
	VBROADCASTSS  expc<>+352(SB), Z18; \
	VBROADCASTSS  expc<>+320(SB), Z19; \
	VBROADCASTSS  expc<>+288(SB), Z20; \
	VBROADCASTSS  expc<>+256(SB), Z21; \
	VBROADCASTSS  expc<>+224(SB), Z22; \
	VBROADCASTSS  expc<>+192(SB), Z23

// EXPSHIFT16 is e^(v − m) for the sixteen lanes of v in Z6, m in Z0,
// into Z10, 0 where v − m < lo (K1 clear), by expf's reduction and
// coefficients with the polynomial in Estrin's scheme (see
// expShiftAVX2); it clobbers Z6, Z8, Z9, Z24–Z26 and K1.
#define EXPSHIFT16 \
	VSUBPS        Z0, Z6, Z6; \
	VCMPPS        $0x1d, Z1, Z6, K1; \
	VMOVAPS       Z3, Z8; \
	VFMADD231PS   Z2, Z6, Z8; \
	VSUBPS        Z3, Z8, Z8; \
	VMOVAPS       Z6, Z9; \
	VFNMADD231PS  Z4, Z8, Z9; \
	VFNMADD231PS  Z5, Z8, Z9; \
	VMULPS        Z9, Z9, Z10; \
	VMOVAPS       Z18, Z24; \
	VFMADD231PS   Z19, Z9, Z24; \
	VMOVAPS       Z20, Z25; \
	VFMADD231PS   Z21, Z9, Z25; \
	VMOVAPS       Z22, Z26; \
	VFMADD231PS   Z23, Z9, Z26; \
	VFMADD231PS   Z24, Z10, Z9; \
	VFMADD231PS   Z26, Z10, Z25; \
	VMULPS        Z10, Z10, Z10; \
	VFMADD231PS   Z25, Z10, Z9; \
	VADDPS        Z16, Z9, Z24; \
	VSCALEFPS.Z   Z8, Z24, K1, Z10

// EXPSUM16 folds the block sum Z17 into the float64 sums Z14 and Z15
// and clears it, at the end of a block of at most 16 vectors.
#define EXPSUM16 \
	VCVTPS2PD     Y17, Z12; \
	VADDPD        Z12, Z14, Z14; \
	VEXTRACTF64X4 $1, Z17, Y17; \
	VCVTPS2PD     Y17, Z12; \
	VADDPD        Z12, Z15, Z15; \
	VPXORD        Z17, Z17, Z17

// EXPTOTAL16 adds the float64 sums Z14 and Z15 into X14's low lane.
#define EXPTOTAL16 \
	VADDPD        Z15, Z14, Z14; \
	VEXTRACTF64X4 $1, Z14, Y15; \
	VADDPD        Y15, Y14, Y14; \
	VEXTRACTF128  $1, Y14, X15; \
	VADDPD        X15, X14, X14; \
	VHADDPD       X14, X14, X14

// func expShiftAVX512(row []float32, m float32) float64
//
// expShiftAVX2's sixteen-lane twin for AVX-512F: the same reduction,
// coefficients and polynomial (see there), with two differences. p·2^n is
// one VSCALEFPS, which also makes arguments below lo 0 through a mask
// register. And the sum runs in float32, sixteen lanes, over blocks of
// at most 16 vectors (256 values, each at most 1), each block then added
// to two float64 accumulators: a lane's float32 sum has at most 16 terms,
// so it is within 16 units in its last place, where converting every
// vector to float64 took four more instructions a vector.
TEXT ·expShiftAVX512(SB), NOSPLIT, $0-40
	MOVQ          row_base+0(FP), SI
	MOVQ          row_len+8(FP), CX
	SHRQ          $4, CX
	VBROADCASTSS  m+24(FP), Z0
	VPXORQ        Z14, Z14, Z14
	VPXORQ        Z15, Z15, Z15
	VPXORD        Z17, Z17, Z17
	EXPCONSTS16
	TESTQ         CX, CX
	JZ            done512

loop512:
	VMOVUPS       (SI), Z6
	EXPSHIFT16                        // e = e^(v − m), 0 below lo
	VMOVUPS       Z10, (SI)
	VADDPS        Z10, Z17, Z17       // the block's float32 sum
	ADDQ          $64, SI
	DECQ          CX
	TESTQ         $15, CX
	JNZ           loop512

	// End of a block (CX a multiple of 16, or 0): its sum into float64.
	EXPSUM16
	TESTQ         CX, CX
	JNZ           loop512

done512:
	EXPTOTAL16
	VZEROUPPER
	VMOVSD         X14, ret+32(FP)
	RET

// Eight copies each of the sign bit and of the rest of a float32's bits.
DATA signc<>+0(SB)/4, $0x80000000
DATA signc<>+4(SB)/4, $0x80000000
DATA signc<>+8(SB)/4, $0x80000000
DATA signc<>+12(SB)/4, $0x80000000
DATA signc<>+16(SB)/4, $0x80000000
DATA signc<>+20(SB)/4, $0x80000000
DATA signc<>+24(SB)/4, $0x80000000
DATA signc<>+28(SB)/4, $0x80000000
DATA signc<>+32(SB)/4, $0x7fffffff
DATA signc<>+36(SB)/4, $0x7fffffff
DATA signc<>+40(SB)/4, $0x7fffffff
DATA signc<>+44(SB)/4, $0x7fffffff
DATA signc<>+48(SB)/4, $0x7fffffff
DATA signc<>+52(SB)/4, $0x7fffffff
DATA signc<>+56(SB)/4, $0x7fffffff
DATA signc<>+60(SB)/4, $0x7fffffff
GLOBL signc<>(SB), RODATA|NOPTR, $64

// func softcapAVX2(row []float32, c float32)
//
// softcapAVX512's eight-lane twin for AVX2 and FMA, len(row) a multiple
// of 8: the same reduction, polynomial and error (see there), with 2^n
// put into the exponent bits (n ≥ −64, so never subnormal).
TEXT ·softcapAVX2(SB), NOSPLIT, $0-28
	MOVQ         row_base+0(FP), SI
	MOVQ         row_len+8(FP), CX
	SHRQ         $3, CX
	JZ           scdone
	VBROADCASTSS c+24(FP), Y0              // c
	VMOVUPS      expc<>+32(SB), Y15        // log₂e
	VADDPS       Y15, Y15, Y15
	VDIVPS       Y0, Y15, Y15              // 2·log₂e/c
	VMOVUPS      exp2c<>+32(SB), Y1        // a1
	VMOVUPS      exp2c<>+64(SB), Y2        // a2
	VMOVUPS      exp2c<>+96(SB), Y3        // a3
	VMOVUPS      exp2c<>+128(SB), Y4       // a4
	VMOVUPS      exp2c<>+160(SB), Y5       // a5
	VMOVUPS      exp2c<>+192(SB), Y13      // a6
	VMOVUPS      expc<>+416(SB), Y14       // 1

scloop:
	VMOVUPS      (SI), Y11                 // v
	VORPS        signc<>+0(SB), Y11, Y6    // −|v|
	VMULPS       Y15, Y6, Y6               // t = −2|v|·log₂e/c
	VMAXPS       exp2c<>+0(SB), Y6, Y6     // t ≥ −64
	VROUNDPS     $0, Y6, Y8                // n = round(t)
	VSUBPS       Y8, Y6, Y9                // f = t − n
	VMULPS       Y9, Y9, Y10               // f²
	VMOVAPS      Y14, Y7
	VFMADD231PS  Y1, Y9, Y7                // 1 + a1·f
	VMOVAPS      Y2, Y12
	VFMADD231PS  Y3, Y9, Y12               // a2 + a3·f
	VMOVAPS      Y4, Y6
	VFMADD231PS  Y5, Y9, Y6                // a4 + a5·f
	VFMADD231PS  Y13, Y10, Y6              // a4 + a5·f + a6·f²
	VFMADD231PS  Y12, Y10, Y7              // 1 + a1·f + f²·(a2 + a3·f)
	VMULPS       Y10, Y10, Y10             // f⁴
	VFMADD231PS  Y6, Y10, Y7               // 2^f
	VCVTPS2DQ    Y8, Y8
	VPADDD       expc<>+160(SB), Y8, Y8
	VPSLLD       $23, Y8, Y8               // 2^n as float32 bits
	VMULPS       Y8, Y7, Y10               // e = 2^f·2^n
	VMOVAPS      Y0, Y12
	VFNMADD231PS Y0, Y10, Y12              // c − c·e
	VADDPS       Y14, Y10, Y10             // 1 + e
	VDIVPS       Y10, Y12, Y12             // c·tanh|v/c|
	VANDPS       signc<>+0(SB), Y11, Y11   // v's sign
	VORPS        Y11, Y12, Y12
	VMOVUPS      Y12, (SI)
	ADDQ         $32, SI
	DECQ         CX
	JNZ          scloop
	VZEROUPPER

scdone:
	RET

// Eight copies of each constant of the softcap loops, 32 bytes apart:
// the clamp −64, then the coefficients a1 … a6 of 2^f ≈ 1 + a1·f + … +
// a6·f⁶ on [−½, ½], fitted for least maximum relative error (2.0e-9,
// below float32's rounding).
DATA exp2c<>+0(SB)/4, $0xc2800000
DATA exp2c<>+4(SB)/4, $0xc2800000
DATA exp2c<>+8(SB)/4, $0xc2800000
DATA exp2c<>+12(SB)/4, $0xc2800000
DATA exp2c<>+16(SB)/4, $0xc2800000
DATA exp2c<>+20(SB)/4, $0xc2800000
DATA exp2c<>+24(SB)/4, $0xc2800000
DATA exp2c<>+28(SB)/4, $0xc2800000
DATA exp2c<>+32(SB)/4, $0x3f317218
DATA exp2c<>+36(SB)/4, $0x3f317218
DATA exp2c<>+40(SB)/4, $0x3f317218
DATA exp2c<>+44(SB)/4, $0x3f317218
DATA exp2c<>+48(SB)/4, $0x3f317218
DATA exp2c<>+52(SB)/4, $0x3f317218
DATA exp2c<>+56(SB)/4, $0x3f317218
DATA exp2c<>+60(SB)/4, $0x3f317218
DATA exp2c<>+64(SB)/4, $0x3e75fdee
DATA exp2c<>+68(SB)/4, $0x3e75fdee
DATA exp2c<>+72(SB)/4, $0x3e75fdee
DATA exp2c<>+76(SB)/4, $0x3e75fdee
DATA exp2c<>+80(SB)/4, $0x3e75fdee
DATA exp2c<>+84(SB)/4, $0x3e75fdee
DATA exp2c<>+88(SB)/4, $0x3e75fdee
DATA exp2c<>+92(SB)/4, $0x3e75fdee
DATA exp2c<>+96(SB)/4, $0x3d635774
DATA exp2c<>+100(SB)/4, $0x3d635774
DATA exp2c<>+104(SB)/4, $0x3d635774
DATA exp2c<>+108(SB)/4, $0x3d635774
DATA exp2c<>+112(SB)/4, $0x3d635774
DATA exp2c<>+116(SB)/4, $0x3d635774
DATA exp2c<>+120(SB)/4, $0x3d635774
DATA exp2c<>+124(SB)/4, $0x3d635774
DATA exp2c<>+128(SB)/4, $0x3c1d96a6
DATA exp2c<>+132(SB)/4, $0x3c1d96a6
DATA exp2c<>+136(SB)/4, $0x3c1d96a6
DATA exp2c<>+140(SB)/4, $0x3c1d96a6
DATA exp2c<>+144(SB)/4, $0x3c1d96a6
DATA exp2c<>+148(SB)/4, $0x3c1d96a6
DATA exp2c<>+152(SB)/4, $0x3c1d96a6
DATA exp2c<>+156(SB)/4, $0x3c1d96a6
DATA exp2c<>+160(SB)/4, $0x3aaf9f2a
DATA exp2c<>+164(SB)/4, $0x3aaf9f2a
DATA exp2c<>+168(SB)/4, $0x3aaf9f2a
DATA exp2c<>+172(SB)/4, $0x3aaf9f2a
DATA exp2c<>+176(SB)/4, $0x3aaf9f2a
DATA exp2c<>+180(SB)/4, $0x3aaf9f2a
DATA exp2c<>+184(SB)/4, $0x3aaf9f2a
DATA exp2c<>+188(SB)/4, $0x3aaf9f2a
DATA exp2c<>+192(SB)/4, $0x3920fddd
DATA exp2c<>+196(SB)/4, $0x3920fddd
DATA exp2c<>+200(SB)/4, $0x3920fddd
DATA exp2c<>+204(SB)/4, $0x3920fddd
DATA exp2c<>+208(SB)/4, $0x3920fddd
DATA exp2c<>+212(SB)/4, $0x3920fddd
DATA exp2c<>+216(SB)/4, $0x3920fddd
DATA exp2c<>+220(SB)/4, $0x3920fddd
GLOBL exp2c<>(SB), RODATA|NOPTR, $224

// func softcapAVX512(row []float32, c float32)
//
// softcap for len(row) a multiple of 16, sixteen lanes at a time with
// AVX-512F: c·tanh|v/c| = (c − c·e)/(1 + e) with e = 2^t, t = −2|v|·log₂e/c
// (clamped at −64, where e is nothing to 1), and v's sign put back. 2^t
// is 2^n·2^f, n = round(t) and f = t − n in [−½, ½] exactly, 2^f a
// degree-6 polynomial by Estrin's scheme: in base 2 the reduction is one
// rounding and one subtraction, where expf's base e takes three fused
// multiply-adds, and a degree less is enough. The error: t is within
// 1.2e-7·|t| (c's reciprocal and the product), which moves e by at most
// e·|t|·ln 2·1.2e-7 ≤ 4.4e-8, and the rest is a few roundings of values
// at most c: within 2e-7 of c (TestSoftcap allows 4e-7).
TEXT ·softcapAVX512(SB), NOSPLIT, $0-28
	MOVQ          row_base+0(FP), SI
	MOVQ          row_len+8(FP), CX
	SHRQ          $4, CX
	JZ            sc512done
	VBROADCASTSS  c+24(FP), Z0                // c
	VBROADCASTSS  expc<>+32(SB), Z15          // log₂e
	VADDPS        Z15, Z15, Z15
	VDIVPS        Z0, Z15, Z15                // 2·log₂e/c
	VPBROADCASTD  signc<>+0(SB), Z27          // the sign bit
	VBROADCASTSS  exp2c<>+0(SB), Z1           // −64
	VBROADCASTSS  expc<>+416(SB), Z16         // 1
	VBROADCASTSS  exp2c<>+32(SB), Z17          // a1
	VBROADCASTSS  exp2c<>+64(SB), Z18          // a2
	VBROADCASTSS  exp2c<>+96(SB), Z19         // a3
	VBROADCASTSS  exp2c<>+128(SB), Z20         // a4
	VBROADCASTSS  exp2c<>+160(SB), Z21         // a5
	VBROADCASTSS  exp2c<>+192(SB), Z22         // a6

sc512loop:
	VMOVUPS       (SI), Z11                   // v
	VPORD         Z27, Z11, Z6                // −|v|
	VMULPS        Z15, Z6, Z6                 // t = −2|v|·log₂e/c
	VMAXPS        Z1, Z6, Z6                  // t ≥ −64
	VRNDSCALEPS   $0, Z6, Z8                  // n = round(t)
	VSUBPS        Z8, Z6, Z9                  // f = t − n
	VMULPS        Z9, Z9, Z10                 // f²
	VMOVAPS       Z16, Z24
	VFMADD231PS   Z17, Z9, Z24                // 1 + a1·f
	VMOVAPS       Z18, Z25
	VFMADD231PS   Z19, Z9, Z25                // a2 + a3·f
	VMOVAPS       Z20, Z26
	VFMADD231PS   Z21, Z9, Z26                // a4 + a5·f
	VFMADD231PS   Z22, Z10, Z26               // a4 + a5·f + a6·f²
	VFMADD231PS   Z25, Z10, Z24               // 1 + a1·f + f²·(a2 + a3·f)
	VMULPS        Z10, Z10, Z10               // f⁴
	VFMADD231PS   Z26, Z10, Z24               // 2^f
	VSCALEFPS     Z8, Z24, Z10                // e = 2^f·2^n
	VMOVAPS       Z0, Z12
	VFNMADD231PS  Z0, Z10, Z12                // c − c·e
	VADDPS        Z16, Z10, Z10               // 1 + e
	VDIVPS        Z10, Z12, Z12               // c·tanh|v/c|
	VPANDD        Z27, Z11, Z11               // v's sign
	VPORD         Z11, Z12, Z12
	VMOVUPS       Z12, (SI)
	ADDQ          $64, SI
	DECQ          CX
	JNZ           sc512loop
	VZEROUPPER

sc512done:
	RET

// The float32 positions 0, 1, …, 15, then the step 16, for the ALiBi
// loops.
DATA rampc<>+0(SB)/4, $0x00000000
DATA rampc<>+4(SB)/4, $0x3f800000
DATA rampc<>+8(SB)/4, $0x40000000
DATA rampc<>+12(SB)/4, $0x40400000
DATA rampc<>+16(SB)/4, $0x40800000
DATA rampc<>+20(SB)/4, $0x40a00000
DATA rampc<>+24(SB)/4, $0x40c00000
DATA rampc<>+28(SB)/4, $0x40e00000
DATA rampc<>+32(SB)/4, $0x41000000
DATA rampc<>+36(SB)/4, $0x41100000
DATA rampc<>+40(SB)/4, $0x41200000
DATA rampc<>+44(SB)/4, $0x41300000
DATA rampc<>+48(SB)/4, $0x41400000
DATA rampc<>+52(SB)/4, $0x41500000
DATA rampc<>+56(SB)/4, $0x41600000
DATA rampc<>+60(SB)/4, $0x41700000
DATA rampc<>+64(SB)/4, $0x41800000
GLOBL rampc<>(SB), RODATA|NOPTR, $68

// func alibiAVX2(row []float32, m, d0 float32)
//
// row[j] −= m·|d0 − j|, len(row) a multiple of 8, eight lanes at a time
// with AVX2 and FMA. The distances are formed in float32, which is exact
// while every |d0 − j| is below 2²⁴ (the caller sees to that).
TEXT ·alibiAVX2(SB), NOSPLIT, $0-32
	MOVQ          row_base+0(FP), SI
	MOVQ          row_len+8(FP), CX
	SHRQ          $3, CX
	JZ            al2done
	VBROADCASTSS  m+24(FP), Y0                // m
	VBROADCASTSS  d0+28(FP), Y1
	VSUBPS        rampc<>+0(SB), Y1, Y1       // d0 − j for this vector's lanes
	VMOVUPS       signc<>+32(SB), Y2          // all bits but the sign
	VBROADCASTSS  rampc<>+32(SB), Y3          // 8

al2loop:
	VANDPS        Y2, Y1, Y4                  // |d0 − j|
	VMOVUPS       (SI), Y5
	VFNMADD231PS  Y4, Y0, Y5                  // v − m·|d0 − j|
	VMOVUPS       Y5, (SI)
	VSUBPS        Y3, Y1, Y1
	ADDQ          $32, SI
	DECQ          CX
	JNZ           al2loop
	VZEROUPPER

al2done:
	RET

// func alibiAVX512(row []float32, m, d0 float32)
//
// alibiAVX2 sixteen lanes at a time with AVX-512F, len(row) a multiple
// of 16.
TEXT ·alibiAVX512(SB), NOSPLIT, $0-32
	MOVQ          row_base+0(FP), SI
	MOVQ          row_len+8(FP), CX
	SHRQ          $4, CX
	JZ            al512done
	VBROADCASTSS  m+24(FP), Z0                // m
	VBROADCASTSS  d0+28(FP), Z1
	VSUBPS        rampc<>+0(SB), Z1, Z1       // d0 − j for this vector's lanes
	VPBROADCASTD  signc<>+32(SB), Z2          // all bits but the sign
	VBROADCASTSS  rampc<>+64(SB), Z3          // 16

al512loop:
	VPANDD        Z2, Z1, Z4                  // |d0 − j|
	VMOVUPS       (SI), Z5
	VFNMADD231PS  Z4, Z0, Z5                  // v − m·|d0 − j|
	VMOVUPS       Z5, (SI)
	VSUBPS        Z3, Z1, Z1
	ADDQ          $64, SI
	DECQ          CX
	JNZ           al512loop
	VZEROUPPER

al512done:
	RET

// func rowMaxAVX512(row []float32) float32
//
// rowMaxAVX2 sixteen lanes at a time with AVX-512F, len(row) a multiple
// of 16 and at least 16; two accumulators, so that the VMAXPS chain is
// half as long.
TEXT ·rowMaxAVX512(SB), NOSPLIT, $0-28
	MOVQ          row_base+0(FP), SI
	MOVQ          row_len+8(FP), CX
	SHRQ          $4, CX
	VMOVUPS       (SI), Z0
	VMOVAPS       Z0, Z1
	ADDQ          $64, SI
	DECQ          CX
	JZ            max512reduce

max512loop:
	VMAXPS        (SI), Z0, Z0
	ADDQ          $64, SI
	DECQ          CX
	JZ            max512reduce
	VMAXPS        (SI), Z1, Z1
	ADDQ          $64, SI
	DECQ          CX
	JNZ           max512loop

max512reduce:
	VMAXPS        Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VMAXPS        Y1, Y0, Y0
	VEXTRACTF128  $1, Y0, X1
	VMAXPS        X1, X0, X0
	VPERMILPS     $0x4e, X0, X1
	VMAXPS        X1, X0, X0
	VPERMILPS     $0xb1, X0, X1
	VMAXPS        X1, X0, X0
	VZEROUPPER
	VMOVSS         X0, ret+24(FP)
	RET

// −126, below which 2^t is 0 to bfloat16 (EXP2F16's Z1).
DATA bf16c<>+0(SB)/4, $0xc2fc0000
GLOBL bf16c<>(SB), RODATA|NOPTR, $4

// EXP2CONSTS16 loads EXP2F16's constants: −126 in Z1, log₂e in Z2, 1
// in Z16 and exp2fc<>'s a1 … a6 in Z18–Z23; and EXP2B16's b1 … b3
// (exp2bc<>) in Z28–Z30.
#define EXP2CONSTS16 \
	VBROADCASTSS  bf16c<>+0(SB), Z1; \
	VBROADCASTSS  expc<>+32(SB), Z2; \
	VBROADCASTSS  expc<>+416(SB), Z16; \
	VBROADCASTSS  exp2fc<>+0(SB), Z18; \
	VBROADCASTSS  exp2fc<>+4(SB), Z19; \
	VBROADCASTSS  exp2fc<>+8(SB), Z20; \
	VBROADCASTSS  exp2fc<>+12(SB), Z21; \
	VBROADCASTSS  exp2fc<>+16(SB), Z22; \
	VBROADCASTSS  exp2fc<>+20(SB), Z23; \
	VBROADCASTSS  exp2bc<>+0(SB), Z28; \
	VBROADCASTSS  exp2bc<>+4(SB), Z29; \
	VBROADCASTSS  exp2bc<>+8(SB), Z30

// EXP2T16 is EXP2F16's and EXP2B16's reduction: t = (v − max)·log₂e in
// Z6 for the sixteen values v at (DI), max in Z0, log₂e in Z2; K1 the
// lanes where t ≥ −126 (Z1; NaN not); f = t − ⌊t⌋ in Z9 by VREDUCEPS.
#define EXP2T16 \
	VMOVUPS       (DI), Z6; \
	VSUBPS        Z0, Z6, Z6; \
	VMULPS        Z2, Z6, Z6; \
	VCMPPS        $0x1d, Z1, Z6, K1; \
	VREDUCEPS     $1, Z6, Z9

// EXP2F16 is softmaxRowsAVX512's e^(v − max) for the sixteen values v at
// (DI), max in Z0, into Z10: t = (v − max)·log₂e, f = t − ⌊t⌋ by
// VREDUCEPS, 2^f by exp2fc<> (a1 … a6 in Z18–Z23, 1 in Z16) and
// VSCALEFPS by t, 0 where t < −126 (Z1; NaN included); it clobbers Z6,
// Z9, Z24 and K1.
#define EXP2F16 \
	EXP2T16; \
	VMOVAPS       Z23, Z24; \
	VFMADD213PS   Z22, Z9, Z24; \
	VFMADD213PS   Z21, Z9, Z24; \
	VFMADD213PS   Z20, Z9, Z24; \
	VFMADD213PS   Z19, Z9, Z24; \
	VFMADD213PS   Z18, Z9, Z24; \
	VFMADD213PS   Z16, Z9, Z24; \
	VSCALEFPS.Z   Z6, Z24, K1, Z10

// EXP2B16 is EXP2F16 for weights that are rounded to bfloat16 (8
// significant bits, half a unit 2⁻⁹ relative): 2^f by the degree-3
// polynomial exp2bc<> (b1 … b3 in Z28–Z30), within 8.6e-5 relative of
// 2^f on [0, 1), 1/23 of that half unit, three multiply-adds where
// exp2fc<>'s float32 accuracy takes six. The same registers clobbered.
#define EXP2B16 \
	EXP2T16; \
	VMOVAPS       Z30, Z24; \
	VFMADD213PS   Z29, Z9, Z24; \
	VFMADD213PS   Z28, Z9, Z24; \
	VFMADD213PS   Z16, Z9, Z24; \
	VSCALEFPS.Z   Z6, Z24, K1, Z10

// func softmaxRowsAVX512(s []float32, stride, rows, n int, m, mNew, sums []float64, out []uint16)
//
// The online softmax's step for rows rows of a score tile at once, each
// n values long (n a multiple of 16) at row stride stride, for the fused
// loop's rows that see every key of the tile with no score modifier
// (onlineTile): row i's new max mNew[i] = max(m[i], its values), taken
// with four accumulators for every row first, then each value v
// replaced with e^(v − mNew[i]) and their sum into sums[i]. m[i] is −Inf
// or a float32 value; a row whose max is −Inf is cleared, with sum 0.
// Needs AVX-512F and AVX512DQ. With out (its base not nil; the bfloat16
// path, bf16Tile) the values go to out instead, at the same row stride,
// rounded to bfloat16 by VCVTNEPS2BF16 (to nearest, ties to even;
// AVX512_BF16, which the caller checks) and s is left as it was; the sums
// are of the float32 values (expShiftBF16AVX512 is this loop for one row
// whose max is given).
//
// The exponential is in base 2: t = (v − max)·log₂e, 2^t = 2^f·2^⌊t⌋
// with f = t − ⌊t⌋ in [0, 1) from one VREDUCEPS, 2^f by the degree-6
// polynomial exp2fc<> (Horner's rule) and ·2^⌊t⌋ by VSCALEFPS on t
// itself, 0 where t < −126. Against rounding t to the nearest integer
// (VRNDSCALEPS, then f = t − n, the polynomial exp2c<> on [−½, ½]) this
// takes two instructions fewer a vector of 16, which on the 2-core Intel
// Xeon (family 6 model 207) ran 4.3–4.9 against 3.4–4.0 Gexp/s,
// interleaved (BenchmarkSoftmaxRows); rounding t by adding 1.5·2²³
// instead of VRNDSCALEPS, or loading a6 where it is copied, gained
// nothing there. And taking every row's max before any row's
// exponentials lets the rows' reductions overlap: 3.9–4.1 against
// 3.4–3.9 Gexp/s. The values are within 8e-8 absolute and
// 1.2e-7·(1 + |t|) relative of e^(v − max) (TestSoftmaxRows: t's own
// rounding grows with |t|, on weights too small to matter); the sum is
// expShiftAVX512's, in float32 blocks of 16 vectors then float64. One
// call for the tile, so that a row of a few hundred keys pays no call or
// loop set-up of its own.
TEXT ·softmaxRowsAVX512(SB), NOSPLIT, $0-144
	MOVQ          s_base+0(FP), SI
	MOVQ          stride+24(FP), R9
	SHLQ          $2, R9                 // the row stride in bytes
	MOVQ          rows+32(FP), R10
	MOVQ          n+40(FP), R11
	SHRQ          $4, R11                // vectors a row
	MOVQ          m_base+48(FP), R12
	MOVQ          mNew_base+72(FP), R13
	MOVQ          sums_base+96(FP), R14
	EXP2CONSTS16
	TESTQ         R10, R10
	JZ            smdone
	TESTQ         R11, R11
	JZ            smdone

	// Pass 1: every row's new max into mNew, from m's, four vectors at
	// a time. Each row's reduction is independent of the next row's
	// loads, so the rows overlap, where one pass doing a row's max and
	// then its exponentials waits on each row's reduction.
	MOVQ          SI, AX                 // the row
	MOVQ          R12, BX                // its m
	MOVQ          R13, DX                // its mNew
	MOVQ          R10, R8                // rows left

smmaxrow:
	VMOVSD        (BX), X11
	VCVTSD2SS     X11, X11, X11
	VBROADCASTSS  X11, Z3
	VMOVAPS       Z3, Z4
	VMOVAPS       Z3, Z5
	VMOVAPS       Z3, Z7
	MOVQ          AX, DI
	MOVQ          R11, CX

smmax4:
	CMPQ          CX, $4
	JLT           smmax1
	VMAXPS        (DI), Z3, Z3
	VMAXPS        64(DI), Z4, Z4
	VMAXPS        128(DI), Z5, Z5
	VMAXPS        192(DI), Z7, Z7
	ADDQ          $256, DI
	SUBQ          $4, CX
	JMP           smmax4

smmax1:
	TESTQ         CX, CX
	JZ            smreduce
	VMAXPS        (DI), Z3, Z3
	ADDQ          $64, DI
	DECQ          CX
	JMP           smmax1

smreduce:
	VMAXPS        Z4, Z3, Z3
	VMAXPS        Z7, Z5, Z5
	VMAXPS        Z5, Z3, Z3
	VEXTRACTF64X4 $1, Z3, Y4
	VMAXPS        Y4, Y3, Y3
	VEXTRACTF128  $1, Y3, X4
	VMAXPS        X4, X3, X3
	VPERMILPS     $0x4e, X3, X4
	VMAXPS        X4, X3, X3
	VPERMILPS     $0xb1, X3, X4
	VMAXPS        X4, X3, X3
	VCVTSS2SD     X3, X11, X11
	VMOVSD        X11, (DX)
	ADDQ          R9, AX
	ADDQ          $8, BX
	ADDQ          $8, DX
	DECQ          R8
	JNZ           smmaxrow

	// Pass 2 keeps out's row in AX (0 without out) and its stride in
	// bytes in DX (0 without out, so that AX stays 0).
	MOVQ          out_base+120(FP), AX
	MOVQ          R9, DX
	SHRQ          $1, DX
	TESTQ         AX, AX
	CMOVQEQ       AX, DX

smrow:
	// Pass 2: the row's exponentials and their sum.
	VMOVSD        (R13), X3
	VCVTSD2SS     X3, X3, X3             // exact: it was a float32
	VBROADCASTSS  X3, Z0                 // the row's new max
	VPXORQ        Z14, Z14, Z14
	VPXORQ        Z15, Z15, Z15
	VPXORD        Z17, Z17, Z17
	MOVQ          SI, DI
	MOVQ          AX, BX
	MOVQ          R11, CX
	VUCOMISS      smninf<>+0(SB), X3
	JEQ           smclear
	TESTQ         AX, AX
	JNZ           smexpbf

smexp:
	EXP2F16
	VMOVUPS       Z10, (DI)
	VADDPS        Z10, Z17, Z17          // the block's float32 sum
	ADDQ          $64, DI
	DECQ          CX
	TESTQ         $15, CX
	JNZ           smexp
	EXPSUM16
	TESTQ         CX, CX
	JNZ           smexp
	JMP           smnext

smexpbf:
	EXP2B16
	// Z10 to sixteen bfloat16 in Y11, rounded to nearest even (AVX512_BF16)
	BYTE $0x62; BYTE $0x52; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xda // vcvtneps2bf16 %zmm10,%ymm11
	VMOVDQU       Y11, (BX)
	VADDPS        Z10, Z17, Z17          // the block's float32 sum
	ADDQ          $64, DI
	ADDQ          $32, BX
	DECQ          CX
	TESTQ         $15, CX
	JNZ           smexpbf
	EXPSUM16
	TESTQ         CX, CX
	JNZ           smexpbf
	JMP           smnext

smclear:
	TESTQ         AX, AX
	JNZ           smclearbf

smclear32:
	VMOVUPS       Z17, (DI)
	ADDQ          $64, DI
	DECQ          CX
	JNZ           smclear32
	JMP           smnext

smclearbf:
	VMOVDQU32     Y17, (BX)
	ADDQ          $32, BX
	DECQ          CX
	JNZ           smclearbf

smnext:
	EXPTOTAL16
	VMOVSD         X14, (R14)
	ADDQ          R9, SI
	ADDQ          DX, AX
	ADDQ          $8, R13
	ADDQ          $8, R14
	DECQ          R10
	JNZ           smrow

smdone:
	VZEROUPPER
	RET

DATA smninf<>+0(SB)/4, $0xff800000
GLOBL smninf<>(SB), RODATA|NOPTR, $4

// func expShiftBF16AVX512(row []float32, m float32, out []uint16) float64
//
// softmaxRowsAVX512's bfloat16 loop for one row whose max m is given
// (expShiftBF16, for the rows that see only some of a tile's keys): each
// e^(v − m) by EXP2F16 (its error there; 0 where t < −126, hidden keys
// included) stored in out rounded to bfloat16, to nearest with ties to
// even, by VCVTNEPS2BF16 (AVX512_BF16: the caller checks for it, and
// for AVX512DQ), which also flushes a subnormal e (t just above −126)
// to zero; row is left as it was, and the sum is of the float32 values,
// by expShiftAVX512's blocks. len(row) a multiple of 16, len(out) at
// least len(row).
TEXT ·expShiftBF16AVX512(SB), NOSPLIT, $0-64
	MOVQ          row_base+0(FP), DI
	MOVQ          row_len+8(FP), CX
	MOVQ          out_base+32(FP), BX
	SHRQ          $4, CX
	VBROADCASTSS  m+24(FP), Z0
	VPXORQ        Z14, Z14, Z14
	VPXORQ        Z15, Z15, Z15
	VPXORD        Z17, Z17, Z17
	EXP2CONSTS16
	TESTQ         CX, CX
	JZ            bfdone

bfloop:
	EXP2B16
	// Z10 to sixteen bfloat16 in Y11, rounded to nearest even (AVX512_BF16)
	BYTE $0x62; BYTE $0x52; BYTE $0x7e; BYTE $0x48; BYTE $0x72; BYTE $0xda // vcvtneps2bf16 %zmm10,%ymm11
	VMOVDQU       Y11, (BX)
	VADDPS        Z10, Z17, Z17          // the block's float32 sum
	ADDQ          $64, DI
	ADDQ          $32, BX
	DECQ          CX
	TESTQ         $15, CX
	JNZ           bfloop
	EXPSUM16
	TESTQ         CX, CX
	JNZ           bfloop

bfdone:
	EXPTOTAL16
	VZEROUPPER
	VMOVSD         X14, ret+56(FP)
	RET

// exp2fc<> is softmaxRowsAVX512's polynomial 2^f ≈ 1 + f·(a1 + f·(a2 +
// … + f·a6)) on [0, 1): the float32 coefficients a1 … a6 of (2^f − 1)/f
// interpolated at the Chebyshev nodes of [0, 1], within 6.3e-8 relative
// of 2^f evaluated in float32 (1 exactly at f = 0, the max's weight).
// b1 … b3 of 2^f ≈ 1 + b1·f + b2·f² + b3·f³ on [0, 1], fitted for least
// maximum relative error (8.6e-5 with these float32 values): EXP2B16's.
DATA exp2bc<>+0(SB)/4, $0x3f31f330
DATA exp2bc<>+4(SB)/4, $0x3e691b8e
DATA exp2bc<>+8(SB)/4, $0x3d9dd5b7
GLOBL exp2bc<>(SB), RODATA|NOPTR, $12

DATA exp2fc<>+0(SB)/4, $0x3f317218
DATA exp2fc<>+4(SB)/4, $0x3e75fe1f
DATA exp2fc<>+8(SB)/4, $0x3d634fcc
DATA exp2fc<>+12(SB)/4, $0x3c1e243e
DATA exp2fc<>+16(SB)/4, $0x3aa65bd8
DATA exp2fc<>+20(SB)/4, $0x395a4aaa
GLOBL exp2fc<>(SB), RODATA|NOPTR, $24

// func softmaxRowsAVX2(s []float32, stride, rows, n int, m, mNew, sums []float64)
//
// softmaxRowsAVX512's eight-lane twin for AVX2 and FMA, n a multiple of
// 8: the same max, reduction, polynomial (Horner's rule, the
// coefficients as memory operands) and sums (expShiftAVX2's blocks),
// with 2^n put into the exponent bits and the lanes where t < −126 (−Inf
// and NaN included) cleared by a mask.
TEXT ·softmaxRowsAVX2(SB), NOSPLIT, $0-120
	MOVQ          s_base+0(FP), SI
	MOVQ          stride+24(FP), R9
	SHLQ          $2, R9                 // the row stride in bytes
	MOVQ          rows+32(FP), R10
	MOVQ          n+40(FP), R11
	SHRQ          $3, R11                // vectors a row
	MOVQ          m_base+48(FP), R12
	MOVQ          mNew_base+72(FP), R13
	MOVQ          sums_base+96(FP), R14
	VBROADCASTSS  bf16c<>+0(SB), Y1      // −126
	VMOVUPS       expc<>+32(SB), Y2      // log₂e
	VMOVUPS       expc<>+160(SB), Y13    // the exponent bias, 127
	TESTQ         R10, R10
	JZ            s2done
	TESTQ         R11, R11
	JZ            s2done

s2row:
	// The row's max, from m's, four vectors at a time.
	VMOVSD         (R12), X11
	VCVTSD2SS     X11, X11, X11
	VBROADCASTSS  X11, Y3
	VMOVAPS       Y3, Y4
	VMOVAPS       Y3, Y5
	VMOVAPS       Y3, Y7
	MOVQ          SI, DI
	MOVQ          R11, CX

s2max4:
	CMPQ          CX, $4
	JLT           s2max1
	VMAXPS        (DI), Y3, Y3
	VMAXPS        32(DI), Y4, Y4
	VMAXPS        64(DI), Y5, Y5
	VMAXPS        96(DI), Y7, Y7
	ADDQ          $128, DI
	SUBQ          $4, CX
	JMP           s2max4

s2max1:
	TESTQ         CX, CX
	JZ            s2reduce
	VMAXPS        (DI), Y3, Y3
	ADDQ          $32, DI
	DECQ          CX
	JMP           s2max1

s2reduce:
	VMAXPS        Y4, Y3, Y3
	VMAXPS        Y7, Y5, Y5
	VMAXPS        Y5, Y3, Y3
	VEXTRACTF128  $1, Y3, X4
	VMAXPS        X4, X3, X3
	VPERMILPS     $0x4e, X3, X4
	VMAXPS        X4, X3, X3
	VPERMILPS     $0xb1, X3, X4
	VMAXPS        X4, X3, X3
	VCVTSS2SD     X3, X11, X11
	VMOVSD         X11, (R13)
	VBROADCASTSS  X3, Y0                 // the row's new max
	VXORPD        Y14, Y14, Y14
	VXORPS        Y15, Y15, Y15
	MOVQ          SI, DI
	MOVQ          R11, CX
	VUCOMISS      smninf<>+0(SB), X3
	JEQ           s2clear

s2exp:
	VMOVUPS       (DI), Y6
	VSUBPS        Y0, Y6, Y6             // v − max
	VMULPS        Y2, Y6, Y6             // t = (v − max)·log₂e
	VCMPPS        $0x1d, Y1, Y6, Y7      // keep = t ≥ −126 (false for NaN)
	VROUNDPS      $0, Y6, Y8             // n = round(t)
	VSUBPS        Y8, Y6, Y9             // f = t − n
	VMOVUPS       exp2c<>+192(SB), Y10   // a6
	VFMADD213PS   exp2c<>+160(SB), Y9, Y10 // a5 + a6·f
	VFMADD213PS   exp2c<>+128(SB), Y9, Y10 // a4 + …
	VFMADD213PS   exp2c<>+96(SB), Y9, Y10  // a3 + …
	VFMADD213PS   exp2c<>+64(SB), Y9, Y10  // a2 + …
	VFMADD213PS   exp2c<>+32(SB), Y9, Y10  // a1 + …
	VFMADD213PS   expc<>+416(SB), Y9, Y10  // 2^f = 1 + f·(a1 + …)
	VCVTPS2DQ     Y8, Y11
	VPADDD        Y13, Y11, Y11
	VPSLLD        $23, Y11, Y11          // 2^n as float32 bits
	VMULPS        Y11, Y10, Y10          // e = 2^f·2^n
	VANDPS        Y7, Y10, Y10           // 0 where t < −126
	VMOVUPS       Y10, (DI)
	VADDPS        Y10, Y15, Y15          // the block's float32 sum
	ADDQ          $32, DI
	DECQ          CX
	TESTQ         $15, CX
	JNZ           s2exp
	EXPSUM8
	TESTQ         CX, CX
	JNZ           s2exp
	JMP           s2next

s2clear:
	VMOVUPS       Y15, (DI)
	ADDQ          $32, DI
	DECQ          CX
	JNZ           s2clear

s2next:
	EXPTOTAL8
	VMOVSD         X14, (R14)
	ADDQ          R9, SI
	ADDQ          $8, R12
	ADDQ          $8, R13
	ADDQ          $8, R14
	DECQ          R10
	JNZ           s2row

s2done:
	VZEROUPPER
	RET
