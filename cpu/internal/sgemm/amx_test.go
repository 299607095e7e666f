package sgemm

import (
	"errors"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unsafe"

	"gonum.org/v1/gonum/blas"
)

// tileImpl is a way to run AMX's blocks: the hardware's, where the CPU
// has AMX-BF16 and the kernel grants it, or a model of the tile
// instructions in Go with a Go kernel at the edges, which runs the
// driver (runBF16 with tiles) on every machine.
type tileImpl struct {
	name  string
	tiles tileFunc
	kn    *bf16Kernel
}

func tileImpls() []tileImpl {
	ts := []tileImpl{{"AMX model", amxModel, refBF16Kernel}}
	if amxCPU && amxGranted() == nil {
		ts = append(ts, tileImpl{"AMX-BF16 32×32", amxTiles, bf16Kernels[0]})
	}
	return ts
}

// refBF16Kernel is the bf16Kernel contract in Go, 8×32: C's block set to
// alpha·A·B + beta·C (C not read when beta = 0), each pair's two exact
// products added in turn to a float32 sum.
var refBF16Kernel = &bf16Kernel{name: "Go 8×32", mr: 8, nr: 32, fn: func(kp int, a *uint16, lda int, b *uint32, c *float32, ldc int, alpha, beta float32) {
	as := unsafe.Slice(a, 7*lda+2*kp)
	bs := unsafe.Slice(b, kp*32)
	cs := unsafe.Slice(c, 7*ldc+32)
	for i := range 8 {
		for j := range 32 {
			var acc float32
			for p := range kp {
				w := bs[p*32+j]
				acc += fromBF16(as[i*lda+2*p]) * fromBF16(uint16(w))
				acc += fromBF16(as[i*lda+2*p+1]) * fromBF16(uint16(w>>16))
			}
			if beta == 0 {
				cs[i*ldc+j] = alpha * acc
			} else {
				cs[i*ldc+j] = alpha*acc + beta*cs[i*ldc+j]
			}
		}
	}
}}

// amxModel is amxBF16 in Go: per job, the four 16×16 tiles of the
// 32×32 block start from C (mode 1) or zero, take each pair's two
// products in turn, and go to C (mode 1) or through t to alpha·t (+
// beta·C under mode 2).
func amxModel(jobs []amxJob, mode int, alpha, beta float32, t []float32) {
	for _, jb := range jobs {
		if jb.kp <= 0 || jb.kp%amxPairs != 0 {
			panic("amxModel: pairs not a positive multiple of 16")
		}
		lda, ldc := jb.lda/2, jb.ldc/4
		as := unsafe.Slice(jb.a, (amxRows-1)*lda+2*jb.kp)
		bs := unsafe.Slice(jb.b, jb.kp*32)
		cs := unsafe.Slice(jb.c, (amxRows-1)*ldc+32)
		for i := range amxRows {
			for j := range 32 {
				var acc float32
				if mode == 1 {
					acc = cs[i*ldc+j]
				}
				for p := range jb.kp {
					w := bs[p*32+j]
					acc += fromBF16(as[i*lda+2*p]) * fromBF16(uint16(w))
					acc += fromBF16(as[i*lda+2*p+1]) * fromBF16(uint16(w>>16))
				}
				t[i*32+j] = acc
			}
		}
		for i := range amxRows {
			for j := range 32 {
				switch mode {
				case 1:
					cs[i*ldc+j] = t[i*32+j]
				case 0:
					cs[i*ldc+j] = alpha * t[i*32+j]
				default:
					cs[i*ldc+j] = alpha*t[i*32+j] + beta*cs[i*ldc+j]
				}
			}
		}
	}
}

// AMX runs where the CPU has AMX-BF16 and Linux grants the tiles, and
// BF16Gemm then runs it unless $ATTN_CPU_BF16 turns it off. Elsewhere
// the test says why it skips. On a CPU with AMX-BF16 a refusal fails
// (ATTN_REQUIRE_AMX=0 lets it skip), and ATTN_REQUIRE_AMX=1 makes every
// skip a failure (bench/gpu-hw.sh sets it where /proc/cpuinfo lists
// amx_bf16): CI's machines have no AMX, so the test runs on the Intel
// host of a lent GPU (docs/builds.md says when it last ran).
func TestAMX(t *testing.T) {
	on, why := AMX()
	t.Logf("AMX on: %t %s; BF16Gemm runs %s", on, why, BF16Kernel())
	skipWithoutTiles(t)
	if s := bf16Setting; (s == "" || s == "auto" || s == "amx") && !on {
		t.Fatalf("AMX() = %t, %q with %s=%q on a CPU that grants the tiles", on, why, EnvBF16, s)
	}
	if on && !strings.HasPrefix(BF16Kernel(), "AMX-BF16") {
		t.Fatalf("BF16Kernel() = %q with AMX on", BF16Kernel())
	}
	if err := checkedBF16(BF16Path{kn: bf16Kernels[0], tiles: amxTiles}); err != nil {
		t.Fatalf("AMX's known-answer check: %v", err)
	}
}

// skipWithoutTiles skips t, saying why, where this CPU has no AMX-BF16
// or Linux refuses the tiles; on a CPU with AMX-BF16 a refusal fails
// (ATTN_REQUIRE_AMX=0 lets it skip), and ATTN_REQUIRE_AMX=1 makes every
// skip a failure.
func skipWithoutTiles(t *testing.T) {
	t.Helper()
	if amxCPU && amxGranted() == nil {
		return
	}
	reason := "no AMX-BF16 on this CPU (or -tags purego, GODEBUG=cpu.amxbf16=off, or no AVX512_BF16 for the edges)"
	if amxCPU {
		reason = "the kernel refused the tiles: " + amxGranted().Error()
	}
	switch req := os.Getenv("ATTN_REQUIRE_AMX"); {
	case req == "1":
		t.Fatal("ATTN_REQUIRE_AMX=1, but " + reason)
	case amxCPU && req != "0":
		t.Fatal("this CPU has AMX-BF16, but " + reason + " (ATTN_REQUIRE_AMX=0 skips)")
	}
	t.Skip("SKIP: " + reason + "; the AMX tests run on an AMX host (bench/gpu-hw.sh cpu; docs/builds.md)")
}

// TestAMXProbe runs the tiles' probe for 0, 1, 2, 1000 and 2²⁴ rounds
// (the largest whose sums stay exact) against their known sums, and
// shows that Check notices a wrong sum: with one operand of A zeroed,
// the first tile row's sums fall short. Where there are no tiles,
// NewAMXProbe must say so.
func TestAMXProbe(t *testing.T) {
	if !amxCPU || amxGranted() != nil {
		if p, err := NewAMXProbe(); p != nil || err == nil {
			t.Fatalf("NewAMXProbe() = %v, %v without the tiles", p, err)
		}
	}
	skipWithoutTiles(t)
	p, err := NewAMXProbe()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{0, 1, 2, 1000, 1 << 24} {
		if testing.Short() && n > 1000 {
			continue
		}
		if err := p.Check(n); err != nil {
			t.Error(err)
		}
	}
	if err := p.Check(1<<24 + 1); err == nil {
		t.Error("Check(2²⁴+1) passed: its sums are no longer exact")
	}
	p.a[5] = 0
	if err := p.Check(4); err == nil {
		t.Error("Check passed with an operand of A zeroed")
	}
}

// A kernel that refuses the tiles leaves the choice on what runs without
// them (the VDPBF16PS kernel, or widening where it is slow), says why,
// and gives the same answers; amx then is an error.
func TestAMXRefused(t *testing.T) {
	savedPerm, savedReq := amxPerm, amxRequest
	defer func() { amxPerm, amxRequest = savedPerm, savedReq }()
	refusal := errors.New("arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA): no space left on device")
	amxPerm, amxRequest = new(amxPermission), func() error { return refusal }
	o := cpuOffer()
	o.amx = len(o.ks) > 0 // as on a CPU with AMX, whatever this one has
	p, notes, err := o.choose("")
	if err != nil || p.AMX() || o.amx != strings.Contains(strings.Join(notes, "; "), refusal.Error()) {
		t.Fatalf("choose(\"\") after a refusal = %v, notes %q, %v", p, notes, err)
	}
	if o.amx {
		if _, _, err := o.choose("amx"); err == nil || !strings.Contains(err.Error(), refusal.Error()) {
			t.Fatalf("choose(\"amx\") after a refusal: %v", err)
		}
	}
	rng := rand.New(rand.NewPCG(5, 5))
	g := gemmCase{blas.NoTrans, blas.Trans, 40, 70, 64, 0.5, 0, 1}
	ops := newBF16Operands(g, rng)
	got := append([]float32(nil), ops.c...)
	p.Gemm(g.tB, g.m, g.n, g.k, g.alpha, ops.a, ops.lda, ops.b, ops.ldb, g.beta, got, ops.ldc)
	checkBF16C(t, g, ops, got, 0)
}

// BF16GemmBand's contract (checkBF16Band) on AMX's blocks: the model
// everywhere, the tiles where they run; bands that cut 32-row blocks,
// 16-pair runs and panels at odd places.
func TestBF16GemmBandTiles(t *testing.T) {
	for _, tl := range tileImpls() {
		t.Run(tl.name, func(t *testing.T) {
			fn := func(tB blas.Transpose, m, n, k int, alpha float32, a []uint16, lda int, b []uint16, ldb int, beta float32, c []float32, ldc int, band Band) {
				checkBand(m, beta, band)
				runBF16(tl.kn, tl.tiles, tB, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc, &band)
			}
			rng := rand.New(rand.NewPCG(3, 8))
			for _, sz := range [][3]int{{32, 32, 32}, {33, 65, 63}, {64, 256, 64}, {96, 100, 130}, {130, 300, 41}} {
				for _, bw := range [][2]float64{{1, 1}, {17, 0.5}, {40, 1}, {200, 2}, {1000, 0}} {
					for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
						checkBF16Band(t, fn, rng, sz[0], sz[1], sz[2], bw[0], bw[1], tB, false)
						checkBF16Band(t, fn, rng, sz[0], sz[2], sz[1], bw[0], bw[1], tB, true)
					}
				}
			}
		})
	}
}
