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
