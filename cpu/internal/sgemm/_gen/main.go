// Command _gen writes the sgemm package's micro-kernels with avo
// (github.com/mmcloughlin/avo): kernel_amd64.s and the Go declarations in
// kernel_amd64_stub.go. It is a module of its own so that avo stays out of
// attn's dependencies; the package's go:generate line runs it.
package main

import (
	"fmt"

	. "github.com/mmcloughlin/avo/build"
	. "github.com/mmcloughlin/avo/operand"
	. "github.com/mmcloughlin/avo/reg"
)

// A spec is one micro-kernel: mr rows of C, each nv vectors of lanes
// float32s, held in registers from vec.
type spec struct {
	name   string
	isa    string
	mr, nv int
	lanes  int
	vec    func() VecVirtual
}

// bf16Specs are the bfloat16 kernels (bf16.go). On Zen 5, 12×32, 6×64
// and 4×64 ran no faster than 8×32, all at VDPBF16PS's peak (twice the
// float32 kernel's) once B's packing was fast; 8×32 divides the attention
// loop's tiles as the float32 kernel does.
var bf16Specs = []bf16Spec{
	{name: "kernBF16x8x32", mr: 8, nv: 2},
}

func main() {
	ConstraintExpr("amd64,!purego")
	for _, s := range []spec{
		{name: "kern6x16AVX2", isa: "AVX2 and FMA", mr: 6, nv: 2, lanes: 8, vec: YMM},
		{name: "kern8x32AVX512", isa: "AVX-512F", mr: 8, nv: 2, lanes: 16, vec: ZMM},
		// Fewer loads an FMA than 8×32; Intel's first (kernel_amd64.go).
		{name: "kern6x64AVX512", isa: "AVX-512F", mr: 6, nv: 4, lanes: 16, vec: ZMM},
	} {
		kernel(s)
	}
	vendor()
	for _, s := range bf16Specs {
		bf16Kernel(s)
	}
	bf16Packers()
	packT16()
	packT8()
	Generate()
}

// kernel writes, for each of blocks row blocks r = 0, 1, …
//
//	C[r·mr:][0:mr][0:nr] = alpha · A[r·mr:][0:mr][0:k] · B[0:k][0:nr] + beta · C[r·mr:][0:mr][0:nr]
//
// for nr = nv·lanes, A's rows lda floats apart and B's ldb floats apart
// (nr when B is a packed panel): one call sweeps a panel of B down a
// column of row blocks, so that a short k (the attention loop's Q·Kᵀ,
// k = D) does not pay a call per block. The block of C stays in mr·nv
// registers; each step loads B's row (nv vectors), then broadcasts
// A[i][p] for each row i and issues nv FMAs with it. With beta = 0 C is
// written without being read. blocks ≥ 1.
//
// The loop runs four steps an iteration: its pointer updates and branch
// otherwise take issue slots from the FMAs on the ports they share. On
// an Intel Xeon (family 6 model 207), against the FMA chains on one
// thread (the cpu package's BenchmarkSgemmAgainstFMA), four steps an
// iteration brought AVX-512 8×32's P·V, square products and Q·Kᵀ at
// D = 64 nearer the chains than one did (Q·Kᵀ at D = 128 level), and
// AVX2 6×16's every shape; fused float32 attention (attn bench, B=1 H=8
// N=4096) ran faster at D = 64 and 128 alike. The commit that made the
// change has the measurements.
//
// Each block prefetches its rows of C before its loop. The backward's
// dKᵀ and dVᵀ products add into C blocks that lie in the L3 (a KV head's
// whole dKᵀ, a MiB at N = 4096, D = 64), and the epilogue's loads of C
// otherwise wait for them: on a Zen 4 the non-causal backward (cpu's
// BenchmarkBackward) ran faster with the prefetches at D = 64 and 128,
// and so did its AVX2 path (the commit that added them has the
// measurements). The forward is level.
func kernel(s spec) {
	nr := s.nv * s.lanes
	vb := 4 * s.lanes // bytes per vector
	TEXT(s.name, NOSPLIT, "func(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int, alpha, beta float32, blocks int)")
	Pragma("noescape")
	Doc(fmt.Sprintf("%s sets blocks %d×%d blocks of C, one under the other from c, to alpha·A·B + beta·C (%s).", s.name, s.mr, nr, s.isa))
	blocks := Load(Param("blocks"), GP64())
	lda := Load(Param("lda"), GP64())
	SHLQ(U8(2), lda)
	aRow := Load(Param("a"), GP64())
	c := Load(Param("c"), GP64())
	ldc := Load(Param("ldc"), GP64())
	SHLQ(U8(2), ldc)

	Label("block")
	k := Load(Param("k"), GP64())
	a0 := GP64()
	MOVQ(aRow, a0)
	base, row := rowsFrom(a0, lda, s.mr)
	b := Load(Param("b"), GP64())
	ldb := Load(Param("ldb"), GP64())
	SHLQ(U8(2), ldb)

	// C's block, prefetched now for the epilogue's loads and stores some
	// thousand cycles on: every line of each row (its first and last
	// bytes, and the lines between).
	{
		cr := GP64()
		MOVQ(c, cr)
		for i := range s.mr {
			for off := 0; off < 4*nr; off += 64 {
				PREFETCHT0(Mem{Base: cr, Disp: off})
			}
			PREFETCHT0(Mem{Base: cr, Disp: 4*nr - 4})
			if i < s.mr-1 {
				ADDQ(ldc, cr)
			}
		}
	}

	acc := make([]VecVirtual, s.mr*s.nv)
	for i := range acc {
		acc[i] = s.vec()
		if s.lanes == 16 {
			VPXORD(acc[i], acc[i], acc[i]) // VXORPS on Z registers needs AVX512DQ; kernels pick by AVX-512F alone
		} else {
			VXORPS(acc[i], acc[i], acc[i])
		}
	}

	// step issues one step of k: B's row at bm (nv vectors), then each
	// row's A[i][p] (disp bytes on) broadcast into nv FMAs.
	step := func(bm Mem, disp int) {
		bv := make([]VecVirtual, s.nv)
		for v := range bv {
			bv[v] = s.vec()
			m := bm
			m.Disp += v * vb
			VMOVUPS(m, bv[v])
		}
		for i := range s.mr {
			t := s.vec()
			m := row(i)
			m.Disp += disp
			VBROADCASTSS(m, t)
			for v := range bv {
				VFMADD231PS(t, bv[v], acc[i*s.nv+v])
			}
		}
	}
	// Four steps an iteration (B's rows at b, b+ldb, b2 and b2+ldb,
	// b2 = b + 2·ldb), then the k mod 4 left one at a time.
	{
		quads := GP64()
		MOVQ(k, quads)
		SHRQ(U8(2), quads)
		JZ(LabelRef("tail"))
		b2 := GP64()
		Label("loop4")
		LEAQ(Mem{Base: b, Index: ldb, Scale: 2}, b2)
		step(Mem{Base: b}, 0)
		step(Mem{Base: b, Index: ldb, Scale: 1}, 4)
		step(Mem{Base: b2}, 8)
		step(Mem{Base: b2, Index: ldb, Scale: 1}, 12)
		for _, r := range base {
			ADDQ(U8(16), r)
		}
		LEAQ(Mem{Base: b, Index: ldb, Scale: 4}, b)
		DECQ(quads)
		JNZ(LabelRef("loop4"))
		Label("tail")
		ANDQ(U8(3), k)
		JZ(LabelRef("done"))
	}
	Label("loop")
	step(Mem{Base: b}, 0)
	for _, r := range base {
		ADDQ(U8(4), r)
	}
	ADDQ(ldb, b)
	DECQ(k)
	JNZ(LabelRef("loop"))
	Label("done")

	alpha := s.vec()
	VBROADCASTSS(NewParamAddr("alpha", 56), alpha)
	// beta = ±0, every bit but the sign clear, skips reading C.
	bits := GP32()
	MOVL(NewParamAddr("beta", 60), bits)
	ANDL(U32(0x7fffffff), bits)
	JNZ(LabelRef("update"))
	store(s, acc, c, ldc, func(acc VecVirtual, at Mem) {
		t := s.vec()
		VMULPS(alpha, acc, t)
		VMOVUPS(t, at)
	})
	JMP(LabelRef("next"))

	Label("update")
	betas := s.vec()
	VBROADCASTSS(NewParamAddr("beta", 60), betas)
	store(s, acc, c, ldc, func(acc VecVirtual, at Mem) {
		t := s.vec()
		VMULPS(at, betas, t)
		VFMADD231PS(alpha, acc, t)
		VMOVUPS(t, at)
	})

	// The next block: C's and A's rows mr on (store left c on the
	// block's last row).
	Label("next")
	ADDQ(ldc, c)
	for range s.mr {
		ADDQ(lda, aRow)
	}
	DECQ(blocks)
	JNZ(LabelRef("block"))
	VZEROUPPER()
	RET()
}

// vendor writes cpuidVendor, CPUID leaf 0's vendor string (the kernels'
// order depends on it: kernel_amd64.go).
func vendor() {
	TEXT("cpuidVendor", NOSPLIT, "func() (ebx, edx, ecx uint32)")
	Doc("cpuidVendor returns CPUID leaf 0's vendor string in EBX, EDX and ECX, 4 bytes each (\"Genu\", \"ineI\", \"ntel\" on Intel).")
	XORL(EAX, EAX)
	XORL(ECX, ECX)
	CPUID()
	Store(EBX, ReturnIndex(0))
	Store(EDX, ReturnIndex(1))
	Store(ECX, ReturnIndex(2))
	RET()
}

// rowsFrom lays out rows rows, ld bytes apart from the one at first, in
// groups of three off one base register each, since base, base+ld and
// base+2·ld are all one addressing mode: it returns the bases, first
// among them, and row(i), the address of row i.
func rowsFrom(first, ld Register, rows int) ([]Register, func(i int) Mem) {
	base := []Register{first}
	for g := 1; g < (rows+2)/3; g++ {
		r := GP64()
		LEAQ(Mem{Base: base[g-1], Index: ld, Scale: 2}, r)
		ADDQ(ld, r)
		base = append(base, r)
	}
	return base, func(i int) Mem {
		m := Mem{Base: base[i/3]}
		if i%3 > 0 {
			m.Index, m.Scale = ld, uint8(i%3)
		}
		return m
	}
}

// store runs one of the kernel's epilogues: write(acc, at) for each
// accumulator and the vector of C it belongs at, row by row.
func store(s spec, acc []VecVirtual, c, ldc Register, write func(acc VecVirtual, at Mem)) {
	vb := 4 * s.lanes
	for i := range s.mr {
		for v := range s.nv {
			write(acc[i*s.nv+v], Mem{Base: c, Disp: v * vb})
		}
		if i < s.mr-1 {
			ADDQ(ldc, c)
		}
	}
}
