package main

import (
	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// bf16Packers write the bfloat16 kernels' B packing for whole panels:
// nv·16 columns and kp whole pairs of k. Each needs AVX-512F alone, which
// a bfloat16 kernel needs too.
func bf16Packers() {
	packNN()
	packT()
}

// packNN writes
//
//	dst[p][j] = B[2p][j] | B[2p+1][j]<<16,  p < kp, j < 16·nv
//
// for B's rows ldb bfloat16s apart and dst's rows 16·nv words apart:
// each 16 columns of the two rows zero-extended to words, the second
// shifted up and the two ORed.
func packNN() {
	TEXT("bf16PackNNAVX512", NOSPLIT, "func(kp int, b *uint16, ldb int, dst *uint32, nv int)")
	Pragma("noescape")
	Doc("bf16PackNNAVX512 packs kp pairs of rows of B, 16·nv columns, into a bfloat16 kernel's panel (AVX-512F).")
	kp := Load(Param("kp"), GP64())
	b := Load(Param("b"), GP64())
	ldb := Load(Param("ldb"), GP64())
	SHLQ(U8(1), ldb)
	dst := Load(Param("dst"), GP64())
	nv := Load(Param("nv"), GP64())
	lo, hi := GP64(), GP64()
	v := GP64()
	Label("pair")
	MOVQ(b, lo)
	LEAQ(Mem{Base: b, Index: ldb, Scale: 1}, hi)
	MOVQ(nv, v)
	Label("chunk")
	x, y := ZMM(), ZMM()
	VPMOVZXWD(Mem{Base: lo}, x)
	VPMOVZXWD(Mem{Base: hi}, y)
	VPSLLD(U8(16), y, y)
	VPORD(y, x, x)
	VMOVDQU32(x, Mem{Base: dst})
	ADDQ(U8(32), lo)
	ADDQ(U8(32), hi)
	ADDQ(U8(64), dst)
	DECQ(v)
	JNZ(LabelRef("chunk"))
	LEAQ(Mem{Base: b, Index: ldb, Scale: 2}, b)
	DECQ(kp)
	JNZ(LabelRef("pair"))
	VZEROUPPER()
	RET()
}

// packT writes
//
//	dst[p][j] = B[j][2p] | B[j][2p+1]<<16,  p < kp, j < 16·nv
//
// for B's rows ldb bfloat16s apart (a transposed op(B)): each word is a
// pair in B's row already, so each 16 of dst's are one gather from 16
// rows, at the byte offsets idx holds (row l at l·2·ldb).
func packT() {
	TEXT("bf16PackTAVX512", NOSPLIT, "func(kp int, b *uint16, ldb int, dst *uint32, nv int, idx *[16]int32)")
	Pragma("noescape")
	Doc("bf16PackTAVX512 packs kp pairs of columns of B, 16·nv rows, into a bfloat16 kernel's panel (AVX-512F).")
	kp := Load(Param("kp"), GP64())
	b := Load(Param("b"), GP64())
	ldb := Load(Param("ldb"), GP64())
	SHLQ(U8(5), ldb) // 16 rows of 2-byte bfloat16s
	dst := Load(Param("dst"), GP64())
	nv := Load(Param("nv"), GP64())
	stride := GP64()
	MOVQ(nv, stride)
	SHLQ(U8(6), stride) // a row of dst: nv·16 words
	idx := ZMM()
	VMOVDQU32(Mem{Base: Load(Param("idx"), GP64())}, idx)
	p, at, to := GP64(), GP64(), GP64()
	Label("chunk")
	MOVQ(kp, p)
	MOVQ(b, at)
	MOVQ(dst, to)
	Label("pair")
	x := ZMM()
	KXNORW(K1, K1, K1)
	VPXORD(x, x, x)
	VPGATHERDD(Mem{Base: at, Index: idx, Scale: 1}, K1, x)
	VMOVDQU32(x, Mem{Base: to})
	ADDQ(U8(4), at)
	ADDQ(stride, to)
	DECQ(p)
	JNZ(LabelRef("pair"))
	ADDQ(ldb, b)
	ADDQ(U8(64), dst)
	DECQ(nv)
	JNZ(LabelRef("chunk"))
	VZEROUPPER()
	RET()
}

// transposeLanes loads n rows (8 or 16) a register each (vec makes
// them) and transposes them within their 128-bit lanes: 32-bit and then
// 64-bit interleaves. It returns bb, where lane L of bb[4k+m] holds rows
// 4k … 4k+3 of column 4L+m; packT16 and packT8 finish the transpose
// across lanes.
func transposeLanes(n int, vec func() VecVirtual, row func(int) Mem) []VecVirtual {
	r := make([]VecVirtual, n)
	for i := range r {
		r[i] = vec()
		VMOVUPS(row(i), r[i])
	}
	// a[2k], a[2k+1]: rows 2k and 2k+1 interleaved, a lane's first two
	// columns and its last two.
	a := make([]VecVirtual, n)
	for k := range n / 2 {
		a[2*k], a[2*k+1] = vec(), vec()
		VUNPCKLPS(r[2*k+1], r[2*k], a[2*k])
		VUNPCKHPS(r[2*k+1], r[2*k], a[2*k+1])
	}
	bb := make([]VecVirtual, n)
	for k := range n / 4 {
		for m := range 4 {
			bb[4*k+m] = vec()
		}
		VUNPCKLPD(a[4*k+2], a[4*k], bb[4*k])
		VUNPCKHPD(a[4*k+2], a[4*k], bb[4*k+1])
		VUNPCKLPD(a[4*k+3], a[4*k+1], bb[4*k+2])
		VUNPCKHPD(a[4*k+3], a[4*k+1], bb[4*k+3])
	}
	return bb
}

// packT16 writes
//
//	dst[p][i] = B[i][p],  i < 16, p < 16·kq
//
// for B's 16 rows ldb floats apart and dst's rows ldd floats apart: a
// transposed op(B)'s panel rows, 16 columns of it, for the float32
// kernels. Each 16×16 block is loaded a row a register and transposed
// in registers — 32-bit and then 64-bit interleaves within 128-bit
// lanes, then two rounds of lane shuffles — and stored a column a
// register. AVX-512F alone.
func packT16() {
	TEXT("packT16AVX512", NOSPLIT, "func(kq int, b *float32, ldb int, dst *float32, ldd int)")
	Pragma("noescape")
	Doc("packT16AVX512 packs 16·kq columns of 16 rows of B, transposed, into dst (AVX-512F).")
	kq := Load(Param("kq"), GP64())
	b := Load(Param("b"), GP64())
	ldb := Load(Param("ldb"), GP64())
	SHLQ(U8(2), ldb)
	dst := Load(Param("dst"), GP64())
	ldd := Load(Param("ldd"), GP64())
	SHLQ(U8(2), ldd)
	base, row := rowsFrom(b, ldb, 16)
	out := dst // dst's rows are written in order, ldd bytes apart
	Label("block")
	bb := transposeLanes(16, ZMM, row)
	// Column 4L+m is lane L of bb[m], bb[4+m], bb[8+m], bb[12+m]: a 4×4
	// transpose of 128-bit lanes in two rounds of VSHUFF32X4. c[m][0]
	// and c[m][1] hold lanes 0, 1 and 2, 3 of bb[m] and bb[4+m], c[m][2]
	// and c[m][3] the same of bb[8+m] and bb[12+m].
	var c [4][4]VecVirtual
	for m := range 4 {
		for i := range c[m] {
			c[m][i] = ZMM()
		}
		VSHUFF32X4(U8(0x44), bb[4+m], bb[m], c[m][0])
		VSHUFF32X4(U8(0xee), bb[4+m], bb[m], c[m][1])
		VSHUFF32X4(U8(0x44), bb[12+m], bb[8+m], c[m][2])
		VSHUFF32X4(U8(0xee), bb[12+m], bb[8+m], c[m][3])
	}
	for col := range 16 {
		l, m := col/4, col%4
		lo, hi := c[m][l/2], c[m][2+l/2]
		imm := uint8(0x88) // even lanes: L = 0 or 2
		if l%2 == 1 {
			imm = 0xdd
		}
		x := ZMM()
		VSHUFF32X4(U8(imm), hi, lo, x)
		VMOVUPS(x, Mem{Base: out})
		ADDQ(ldd, out)
	}
	for _, g := range base {
		ADDQ(U8(64), g)
	}
	DECQ(kq)
	JNZ(LabelRef("block"))
	VZEROUPPER()
	RET()
}

// packT8 writes
//
//	dst[p][i] = B[i][p],  i < 8, p < 8·kq
//
// for B's 8 rows ldb floats apart and dst's rows ldd floats apart: a
// transposed operand's 8×8 blocks in a row, for the AVX2 machines that
// packT16 does not serve (Sgemm's packAT: Aᵀ's rows). Each block is
// loaded a row a register, transposed in registers — 32-bit and then
// 64-bit interleaves within 128-bit lanes, then one round of lane
// permutes — and stored a column a register. AVX alone.
func packT8() {
	TEXT("packT8AVX2", NOSPLIT, "func(kq int, b *float32, ldb int, dst *float32, ldd int)")
	Pragma("noescape")
	Doc("packT8AVX2 packs 8·kq columns of 8 rows of B, transposed, into dst (AVX).")
	kq := Load(Param("kq"), GP64())
	b := Load(Param("b"), GP64())
	ldb := Load(Param("ldb"), GP64())
	SHLQ(U8(2), ldb)
	dst := Load(Param("dst"), GP64())
	ldd := Load(Param("ldd"), GP64())
	SHLQ(U8(2), ldd)
	base, row := rowsFrom(b, ldb, 8)
	out := dst
	Label("block8")
	bb := transposeLanes(8, YMM, row)
	// Column 4L+m: lane L of bb[m] (rows 0 … 3), then lane L of bb[4+m].
	for col := range 8 {
		l, m := col/4, col%4
		imm := uint8(0x20) // the low lanes of bb[m] and bb[4+m]
		if l == 1 {
			imm = 0x31 // their high lanes
		}
		x := YMM()
		VPERM2F128(U8(imm), bb[4+m], bb[m], x)
		VMOVUPS(x, Mem{Base: out})
		ADDQ(ldd, out)
	}
	for _, g := range base {
		ADDQ(U8(32), g)
	}
	DECQ(kq)
	JNZ(LabelRef("block8"))
	VZEROUPPER()
	RET()
}
