package sgemm

import (
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/blas"
)

// eachKernel runs test as a subtest on each kernel this CPU runs and on
// gonum's fallback (active nil), restoring active after.
func eachKernel(t *testing.T, test func(t *testing.T)) {
	saved := active
	defer func() { active = saved }()
	for _, kn := range append([]*kernel{nil}, kernels...) {
		name := "gonum"
		if kn != nil {
			name = kn.name
		}
		t.Run(name, func(t *testing.T) {
			active = kn
			test(t)
		})
	}
}

// randomBand draws m non-decreasing ranges [lo, hi) within [0, n): a
// band of width about w drifting by about step a row, clipped at both
// ends, with empty rows where it has not begun or has ended.
func randomBand(rng *rand.Rand, m, n int, w, step float64) Band {
	b := Band{Lo: make([]int, m), Hi: make([]int, m)}
	start := -w / 2
	for i := range m {
		c := start + float64(i)*step
		b.Lo[i] = min(max(int(c), 0), n)
		b.Hi[i] = min(max(int(c+w), b.Lo[i]), n)
		if i > 0 {
			b.Lo[i] = max(b.Lo[i], b.Lo[i-1])
			b.Hi[i] = max(b.Hi[i], b.Hi[i-1])
		}
	}
	return b
}

// SgemmBand on every kernel this CPU runs, and on gonum's fallback,
// against a float64 product. Under Cols each row's range of C must be
// the product and every other entry either the product or C as it was
// (a skipped block); under Inner, with A zeroed outside each row's range
// and beta = 1, all of C must be the product. Bands narrow and wide,
// drifting slow and fast, over sizes around the kernels' MR and NR and
// the k and n blocks.
func TestSgemmBand(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(3, 5))
		for _, sz := range [][3]int{{1, 1, 1}, {7, 33, 5}, {8, 32, 64}, {17, 65, 64}, {64, 256, 64}, {130, 300, 40}, {40, 600, 16}} {
			for _, bw := range [][2]float64{{1, 1}, {5, 0.5}, {40, 1}, {200, 2}, {1000, 0}} {
				for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
					checkBandCols(t, rng, sz[0], sz[1], sz[2], bw[0], bw[1], tB)
					checkBandInner(t, rng, sz[0], sz[2], sz[1], bw[0], bw[1], tB)
				}
			}
		}
	})
}

func randMat(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(rng.Float64()*2 - 1)
	}
	return x
}

// want is C = alpha·A·op(B) + beta·C0 in float64, entry (i, j), and the
// magnitude for its tolerance.
func bandWant(a, b, c0 []float32, k, n, lda, ldb, ldc, i, j int, tB blas.Transpose, alpha, beta float32) (float64, float64) {
	var sum, mag float64
	for p := range k {
		var bv float32
		if tB == blas.NoTrans {
			bv = b[p*ldb+j]
		} else {
			bv = b[j*ldb+p]
		}
		x := float64(a[i*lda+p]) * float64(bv)
		sum += x
		mag += math.Abs(x)
	}
	c := float64(beta) * float64(c0[i*ldc+j])
	return float64(alpha)*sum + c, math.Abs(float64(alpha))*mag + math.Abs(c)
}

func checkBandCols(t *testing.T, rng *rand.Rand, m, n, k int, w, step float64, tB blas.Transpose) {
	t.Helper()
	band := randomBand(rng, m, n, w, step)
	a, c0 := randMat(rng, m*k), randMat(rng, m*n)
	b, ldb := randMat(rng, k*n), n
	if tB != blas.NoTrans {
		ldb = k
	}
	for _, beta := range []float32{0, 1} {
		c := append([]float32(nil), c0...)
		Implementation{}.SgemmBand(tB, m, n, k, 0.5, a, k, b, ldb, beta, c, n, band)
		for i := range m {
			for j := range n {
				want, mag := bandWant(a, b, c0, k, n, k, ldb, n, i, j, tB, 0.5, beta)
				d := math.Abs(float64(c[i*n+j]) - want)
				ok := d <= 4*0x1p-24*float64(k+2)*mag
				if j < band.Lo[i] || j >= band.Hi[i] {
					ok = ok || c[i*n+j] == c0[i*n+j]
				}
				if !ok {
					t.Fatalf("cols %dx%dx%d band w=%g step=%g tB=%v beta=%g: C[%d][%d] = %g, want %g (row range [%d, %d))",
						m, n, k, w, step, tB, beta, i, j, c[i*n+j], want, band.Lo[i], band.Hi[i])
				}
			}
		}
	}
}

func checkBandInner(t *testing.T, rng *rand.Rand, m, n, k int, w, step float64, tB blas.Transpose) {
	t.Helper()
	band := randomBand(rng, m, k, w, step)
	band.Inner = true
	a, c0 := randMat(rng, m*k), randMat(rng, m*n)
	for i := range m {
		for p := range k {
			if p < band.Lo[i] || p >= band.Hi[i] {
				a[i*k+p] = 0
			}
		}
	}
	b, ldb := randMat(rng, k*n), n
	if tB != blas.NoTrans {
		ldb = k
	}
	c := append([]float32(nil), c0...)
	Implementation{}.SgemmBand(tB, m, n, k, 2, a, k, b, ldb, 1, c, n, band)
	for i := range m {
		for j := range n {
			want, mag := bandWant(a, b, c0, k, n, k, ldb, n, i, j, tB, 2, 1)
			if d := math.Abs(float64(c[i*n+j]) - want); !(d <= 4*0x1p-24*float64(k+2)*mag) {
				t.Fatalf("inner %dx%dx%d band w=%g step=%g tB=%v: C[%d][%d] = %g, want %g (row range [%d, %d))",
					m, n, k, w, step, tB, i, j, c[i*n+j], want, band.Lo[i], band.Hi[i])
			}
		}
	}
}

// SgemmBand refuses a band shorter than m and an inner band with beta ≠ 1.
func TestSgemmBandBadArguments(t *testing.T) {
	for name, f := range map[string]func(){
		"short band": func() {
			Implementation{}.SgemmBand(blas.NoTrans, 2, 1, 1, 1, make([]float32, 2), 1, make([]float32, 1), 1, 0, make([]float32, 2), 1, Band{Lo: []int{0}, Hi: []int{1}})
		},
		"inner beta": func() {
			Implementation{}.SgemmBand(blas.NoTrans, 1, 1, 1, 1, make([]float32, 1), 1, make([]float32, 1), 1, 0, make([]float32, 1), 1, Band{Lo: []int{0}, Hi: []int{1}, Inner: true})
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

// SgemmBandPacked with op(B) packed once gives, for each of several A,
// exactly what SgemmBand gives (the same kernel blocks, the same sums),
// on every kernel this CPU runs and on gonum's fallback, over sizes
// around the k and n blocks, both transposes of B, with and without a
// band; one PackedB is packed again at each size, its memory reused.
// A size other than the packed one panics.
func TestSgemmBandPacked(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(4, 6))
		var pb PackedB
		for _, sz := range [][3]int{{1, 1, 1}, {9, 33, 5}, {16, 64, 64}, {40, 530, 64}, {17, 1030, 128}, {12, 70, 300}} {
			m, n, k := sz[0], sz[1], sz[2]
			for _, tB := range []blas.Transpose{blas.NoTrans, blas.Trans} {
				ldb := n + 3
				if tB == blas.Trans {
					ldb = k + 2
				}
				rowsB := k
				if tB == blas.Trans {
					rowsB = n
				}
				b := randMat(rng, rowsB*ldb)
				pb.Pack(tB, n, k, b, ldb)
				for _, banded := range []bool{false, true} {
					a, lda, ldc := randMat(rng, m*(k+1)), k+1, n+4
					c0 := randMat(rng, m*ldc)
					var band *Band
					beta := float32(0.5)
					if banded {
						bd := randomBand(rng, m, n, float64(n)/3, float64(n)/float64(m))
						band, beta = &bd, 0
					}
					want := append([]float32(nil), c0...)
					if band != nil {
						Implementation{}.SgemmBand(tB, m, n, k, 0.75, a, lda, b, ldb, beta, want, ldc, *band)
					} else {
						Implementation{}.Sgemm(blas.NoTrans, tB, m, n, k, 0.75, a, lda, b, ldb, beta, want, ldc)
					}
					got := append([]float32(nil), c0...)
					Implementation{}.SgemmBandPacked(m, n, k, 0.75, a, lda, &pb, beta, got, ldc, band)
					for i := range got {
						if got[i] != want[i] {
							t.Fatalf("%d×%d×%d %v band=%v: C[%d] = %v, SgemmBand gives %v", m, n, k, tB, banded, i, got[i], want[i])
						}
					}
				}
			}
		}
		defer func() {
			if recover() == nil {
				t.Error("SgemmBandPacked at a size other than the packed one did not panic")
			}
		}()
		c := make([]float32, 4)
		Implementation{}.SgemmBandPacked(2, 2, 3, 1, make([]float32, 6), 3, &pb, 0, c, 2, nil)
	})
}

// A Prefix of a transposed B packed once gives, for every width n up to
// the packed one, exactly what Sgemm gives over B's first n rows, on
// every kernel this CPU runs and on gonum's fallback: widths inside a
// panel, at its edges and past the n block, and k past a k block (the
// prefix keeps each k block's first n blocks). A prefix wider than the
// packed B, or of a B not packed transposed, panics.
func TestPackedPrefix(t *testing.T) {
	eachKernel(t, func(t *testing.T) {
		rng := rand.New(rand.NewPCG(9, 2))
		var pb PackedB
		for _, sz := range [][3]int{{8, 256, 64}, {9, 70, 5}, {5, 1030, 300}} {
			m, full, k := sz[0], sz[1], sz[2]
			ldb := k + 2
			b := randMat(rng, full*ldb)
			pb.Pack(blas.Trans, full, k, b, ldb)
			for _, n := range []int{0, 1, 31, 32, 33, full / 2, 512, 513, full - 1, full} {
				if n > full {
					continue
				}
				a, lda, ldc := randMat(rng, m*(k+1)), k+1, n+4
				c0 := randMat(rng, m*ldc)
				want := append([]float32(nil), c0...)
				Implementation{}.Sgemm(blas.NoTrans, blas.Trans, m, n, k, 0.5, a, lda, b, ldb, 1, want, ldc)
				got := append([]float32(nil), c0...)
				pre := pb.Prefix(n)
				Implementation{}.SgemmBandPacked(m, n, k, 0.5, a, lda, &pre, 1, got, ldc, nil)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%d×%d×%d, prefix of %d: C[%d] = %v, Sgemm gives %v", m, n, k, full, i, got[i], want[i])
					}
				}
			}
		}
		for name, f := range map[string]func(){
			"too wide": func() { pb.Prefix(pb.n + 1) },
			"not transposed": func() {
				var nb PackedB
				nb.Pack(blas.NoTrans, 40, 3, randMat(rng, 3*40), 40)
				nb.Prefix(20)
			},
		} {
			func() {
				defer func() {
					if recover() == nil && (name == "too wide" || Accelerated()) {
						t.Errorf("%s: no panic", name)
					}
				}()
				f()
			}()
		}
	})
}
