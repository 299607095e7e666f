package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	"github.com/mmcloughlin/avo/ir"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// A bf16Spec is one bfloat16 micro-kernel: mr rows of C, each nv
// vectors of 16 float32s.
type bf16Spec struct {
	name   string
	mr, nv int
}

// bf16Kernel writes
//
//	C[0:mr][0:nr] = alpha · A[0:mr][0:2kp] · B[0:2kp][0:nr] + beta · C[0:mr][0:nr]
//
// for nr = 16·nv, with A and B bfloat16 and C float32. A's rows are lda
// bfloat16s apart and hold the pairs (A[i][2p], A[i][2p+1]) as one
// 32-bit word each; B is a packed panel of kp steps, each nr words
// (B[2p][j], B[2p+1][j]). Each step loads B's nv vectors, broadcasts
// A[i]'s pair for each row i and issues nv VDPBF16PS with it, which
// adds both products of a pair into a float32 lane. The epilogue is
// kernel's.
//
// Neither avo v0.6.0 nor the Go assembler (1.26) knows VDPBF16PS, so it
// is written as its EVEX encoding (vdpbf16ps), which needs the vector
// registers fixed: this kernel names Z registers itself rather than
// leaving them to avo's allocator (the general registers still are).
func bf16Kernel(s bf16Spec) {
	const lanes = 16
	nr := s.nv * lanes
	if s.mr*s.nv+s.nv+1 > 32 {
		panic(fmt.Sprintf("%s: %d×%d needs more than 32 vector registers", s.name, s.mr, nr))
	}
	TEXT(s.name, NOSPLIT, "func(kp int, a *uint16, lda int, b *uint32, c *float32, ldc int, alpha, beta float32)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets the %d×%d block of C at c to alpha·A·B + beta·C, A and B bfloat16 (AVX512_BF16).", s.name, s.mr, nr))
	kp := Load(Param("kp"), GP64())
	lda := Load(Param("lda"), GP64())
	SHLQ(U8(1), lda)
	base, row := rowsFrom(Load(Param("a"), GP64()), lda, s.mr)
	b := Load(Param("b"), GP64())

	acc := make([]int, s.mr*s.nv)
	for i := range acc {
		acc[i] = i
		VPXORD(z(i), z(i), z(i)) // VXORPS on Z registers would need AVX512DQ
	}
	bv := make([]int, s.nv)
	for v := range bv {
		bv[v] = len(acc) + v
	}
	pair := len(acc) + s.nv

	Label("loop")
	for v := range bv {
		VMOVUPS(Mem{Base: b, Disp: v * 4 * lanes}, z(bv[v]))
	}
	for i := range s.mr {
		VPBROADCASTD(row(i), z(pair))
		for v := range bv {
			vdpbf16ps(bv[v], pair, acc[i*s.nv+v])
		}
	}
	for _, r := range base {
		ADDQ(U8(4), r)
	}
	ADDQ(U32(4*nr), b)
	DECQ(kp)
	JNZ(LabelRef("loop"))

	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	SHLQ(U8(2), ldc)
	alpha, betas, t := z(29), z(30), z(31)
	VBROADCASTSS(NewParamAddr("alpha", 48), alpha)
	bits := GP32()
	MOVL(NewParamAddr("beta", 52), bits)
	ANDL(U32(0x7fffffff), bits)
	JNZ(LabelRef("update"))
	bf16Store(s, acc, c, ldc, func(acc VecPhysical, at Mem) {
		VMULPS(alpha, acc, t)
		VMOVUPS(t, at)
	})
	VZEROUPPER()
	RET()

	Label("update")
	VBROADCASTSS(NewParamAddr("beta", 52), betas)
	bf16Store(s, acc, c, ldc, func(acc VecPhysical, at Mem) {
		VMULPS(at, betas, t)
		VFMADD231PS(alpha, acc, t)
		VMOVUPS(t, at)
	})
	VZEROUPPER()
	RET()
}

// z is the physical register Zn.
func z(n int) VecPhysical {
	return []VecPhysical{
		Z0, Z1, Z2, Z3, Z4, Z5, Z6, Z7, Z8, Z9, Z10, Z11, Z12, Z13, Z14, Z15,
		Z16, Z17, Z18, Z19, Z20, Z21, Z22, Z23, Z24, Z25, Z26, Z27, Z28, Z29, Z30, Z31,
	}[n]
}

// bf16Store is store for the bfloat16 kernels' accumulators.
func bf16Store(s bf16Spec, acc []int, c, ldc Register, write func(acc VecPhysical, at Mem)) {
	for i := range s.mr {
		for v := range s.nv {
			write(z(acc[i*s.nv+v]), Mem{Base: c, Disp: v * 64})
		}
		if i < s.mr-1 {
			ADDQ(ldc, c)
		}
	}
}

// vdpbf16ps writes VDPBF16PS Z<src2>, Z<src1>, Z<dst> (Go's operand
// order): dst += src1·src2, the pairs of bfloat16s in each 32-bit lane
// multiplied and both products added into the float32 lane. Its
// encoding is EVEX.512.F3.0F38.W0 52 /r with ModRM.mod = 11: reg is
// dst, EVEX.vvvv src1 and rm src2, each register's bits 3 and 4 held
// inverted in the prefix (R and R' for reg, V' and vvvv for vvvv, B and
// X for rm).
func vdpbf16ps(src2, src1, dst int) {
	Commentf("VDPBF16PS Z%d, Z%d, Z%d", src2, src1, dst)
	for i, x := range vdpbf16psEncoding(src2, src1, dst) {
		in := &ir.Instruction{Opcode: "BYTE", Operands: []Op{U8(x)}, ISA: []string{"AVX512BF16"}}
		if i == 0 {
			// What the encoded instruction reads and writes, for avo's
			// liveness analysis.
			in.Inputs = []Op{z(src2), z(src1), z(dst)}
			in.Outputs = []Op{z(dst)}
		}
		Instruction(in)
	}
}

// vdpbf16psEncoding is the machine code of VDPBF16PS Z<src2>, Z<src1>,
// Z<dst>.
func vdpbf16psEncoding(src2, src1, dst int) []byte {
	inv := func(n, bit int) byte { return byte(^(n >> bit)) & 1 }
	return []byte{
		0x62,
		inv(dst, 3)<<7 | inv(src2, 4)<<6 | inv(src2, 3)<<5 | inv(dst, 4)<<4 | 0b10, // R X B R' 00 mm=0F38
		0<<7 | byte(^src1&0xf)<<3 | 1<<2 | 0b10,                                    // W0, vvvv, 1, pp=F3
		0<<7 | 0b10<<5 | 0<<4 | inv(src1, 4)<<3 | 0,                                // z, L'L=512, b, V', aaa
		0x52,
		0b11<<6 | byte(dst&7)<<3 | byte(src2&7),
	}
}
