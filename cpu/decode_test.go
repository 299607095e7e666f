package cpu

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime/debug"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// The decoding kernels against their Go forms (the sixteen-lane ones, or
// under GODEBUG=cpu.avx512f=off the eight-lane ones), for K and V stored in
// each dtype, at strides wider than the rows, key counts around the
// kernels' quads and axpyRows4's chunks of keys (axpyChunk ± 1 and a
// chunk and a part), and head dims that take each column path (64 at a
// time, then 16): within float32 summation's error, and nothing written outside
// the rows asked for.
// axpyChunk is the keys the sixteen-lane axpyRows4 kernels take at a time
// (AXPY_CHUNK in _gen/decode.py).
const axpyChunk = 64

func TestDecodeKernels(t *testing.T) {
	if !hasDecode() {
		t.Skip("no decoding kernels on this CPU or build, so the Gemms run: AVX-512F, AVX2 with FMA and F16C, or NEON, without -tags purego, runs this test")
	}
	rng := rand.New(rand.NewPCG(21, 22))
	for _, dt := range backend.DTypes {
		for _, n := range []int{1, 3, 4, 5, 8, 12, axpyChunk - 1, axpyChunk, axpyChunk + 1, 2*axpyChunk + 37} {
			for _, d := range []int{16, 48, 64, 80, 128} {
				t.Run(fmt.Sprintf("%v/n=%d/d=%d", dt, n, d), func(t *testing.T) {
					const ldq, lds, ldacc = 200, 170, 150
					stride := d + 24
					q := randF32(rng, 4*ldq)
					kv := randF32(rng, n*stride)
					raw := rawRows{store: store{t: dt}, stride: stride}
					if dt.Half() {
						raw.h = make([]uint16, len(kv))
						narrow(dt, raw.h, kv)
						widen(dt, kv, raw.h) // the values the kernels read
					} else {
						raw.f32 = kv
					}
					s := randF32(rng, 4*lds)
					want := append([]float32(nil), s...)
					done := dotRows4(q, ldq, raw, n, d, s, lds, 0.5)
					if step := decodeStep(); done != n/step*step {
						t.Fatalf("dotRows4 did %d keys of %d", done, n)
					}
					dotRowsGo(q, ldq, 4, kv, stride, done, d, want, lds, 0.5)
					checkScores(t, s, want, lds, done, d)
					p := randF32(rng, 4*ldq)
					acc := randF32(rng, 4*ldacc)
					wantAcc := append([]float32(nil), acc...)
					if !axpyRows4(p, ldq, raw, n, d, acc, ldacc) {
						t.Fatal("axpyRows4 did not run")
					}
					axpyRowsGo(p, ldq, 4, kv, stride, n, d, wantAcc, ldacc)
					checkAcc(t, acc, wantAcc, ldacc, n, d)
				})
			}
		}
	}
}

// checkScores compares a dot kernel's scores s (rows lds apart) with
// the Go form's: within float32 summation's error over d values for the
// done keys it took, and unchanged past them.
func checkScores(t *testing.T, s, want []float32, lds, done, d int) {
	t.Helper()
	for i := range s {
		if r, j := i/lds, i%lds; s[i] != want[i] && (j >= done || backendtest.Exceeds(math.Abs(float64(s[i]-want[i])), 1e-5*float64(d))) {
			t.Fatalf("s[%d][%d] = %v, want %v", r, j, s[i], want[i])
		}
	}
}

// checkAcc compares an axpy kernel's accumulator acc (rows ldacc apart)
// with the Go form's: within float32 summation's error over n keys in
// the dv columns, and unchanged past them.
func checkAcc(t *testing.T, acc, want []float32, ldacc, n, dv int) {
	t.Helper()
	for i := range acc {
		if r, c := i/ldacc, i%ldacc; acc[i] != want[i] && (c >= dv || backendtest.Exceeds(math.Abs(float64(acc[i]-want[i])), 1e-5*float64(n+1))) {
			t.Fatalf("acc[%d][%d] = %v, want %v", r, c, acc[i], want[i])
		}
	}
}

func randF32(rng *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(2*rng.Float64() - 1)
	}
	return x
}

// A steady-state decoding step allocates nothing: Fused's state, its
// workers' scratch and its worker goroutines are the backend's, kept
// between calls. GC is off while counting, so that it cannot empty the
// pools.
func TestDecodeAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates as it tracks")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	be := newBackend(t, WithThreads(2))
	for _, dt := range backend.DTypes {
		p := backend.Problem{B: 1, H: 8, KVHeads: 2, Nq: 1, Nk: 700, D: 64, Causal: true}.Resolved()
		alloc := func(n int) backend.Buffer {
			buf, err := be.Alloc(dt, n)
			if err != nil {
				t.Fatal(err)
			}
			return buf
		}
		q, k, v, o := alloc(p.QLen()), alloc(p.KLen()), alloc(p.VLen()), alloc(p.OLen())
		ctx := context.Background()
		fp := backend.FusedParams{Problem: p}
		if n := testing.AllocsPerRun(20, func() {
			if err := be.Fused(ctx, fp, q, k, v, o, nil); err != nil {
				t.Fatal(err)
			}
		}); n != 0 {
			t.Errorf("%v: a decoding step allocated %v times", dt, n)
		}
	}
}
