//go:build amd64 && !purego && linux

package cpu

import (
	"fmt"
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"

	"github.com/attn-go/attn/backend"
)

// The indirect decoding kernels (dotRows4Idx, axpyRows4Idx: key j's row
// at a byte offset of its own) against the Go forms over the same rows
// gathered, for K and V stored in each dtype: rows in a shuffled order
// (one named twice), key counts around a pair, the prefetch distances
// (32 and 64 keys on, which must not read past the offsets) and the
// chunks of 64 keys, and head dims of one and several column passes.
// Within float32 summation's error, and nothing written outside the
// rows asked for; the offsets end where a page that cannot be read
// begins, so that a look past them (the prefetches' guard) faults. The
// eight-lane kernels run wherever the CPU has AVX2, FMA and F16C, the
// sixteen-lane ones (each prefetch's twin) where it has AVX-512F,
// whichever is its choice (hasDecodeIdx).
func TestDecodeIdxKernels(t *testing.T) {
	if !hasAVX2 || !hasF16C {
		t.Skip("the indirect decoding kernels need AVX2, FMA and F16C: an x86 CPU with them (every class CI runs on) runs this test")
	}
	t.Run("AVX2", func(t *testing.T) { checkDecodeIdx(t, 0) })
	if !hasAVX512 {
		t.Log("no AVX-512F: the sixteen-lane indirect kernels not run")
		return
	}
	for _, l2 := range []bool{false, true} {
		t.Run(fmt.Sprintf("AVX512/l2=%v", l2), func(t *testing.T) {
			defer useIdxPrefetch(1, l2)()
			checkDecodeIdx(t, 1)
		})
	}
}

// checkDecodeIdx is TestDecodeIdxKernels for the kernels of width w.
func checkDecodeIdx(t *testing.T, w int) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, dt := range backend.DTypes {
		for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 19, 20, 31, 32, 33, 35, 36, 37, 63, 64, 65, 66, 97, 2*axpyChunk + 37} {
			for _, d := range []int{16, 48, 64, 80, 128, 144} {
				t.Run(fmt.Sprintf("%v/n=%d/d=%d", dt, n, d), func(t *testing.T) { checkDecodeIdxCase(t, rng, w, dt, n, d) })
			}
		}
	}
}

// checkDecodeIdxCase runs the indirect kernels of width w on n keys of
// d columns stored as dt against the Go forms (TestDecodeIdxKernels).
func checkDecodeIdxCase(t *testing.T, rng *rand.Rand, w int, dt backend.DType, n, d int) {
	const ldacc = 150
	ldq, lds := max(200, n+5), max(170, n+3) // p's and s's rows hold n keys'
	rows := n + 7                            // more rows than keys, in a shuffled order
	stride := d + 8
	kv := randF32(rng, rows*stride)
	st := store{t: dt}
	if dt.Half() {
		st.h = make([]uint16, len(kv))
		narrow(dt, st.h, kv)
		widen(dt, kv, st.h) // the values the kernels read
	} else {
		st.f32 = kv
	}
	perm := rng.Perm(rows)[:n]
	if n > 2 {
		perm[n-1] = perm[0] // a row read twice
	}
	offs := guarded(t, n)
	gathered := make([]float32, n*d)
	for j, r := range perm {
		offs[j] = r * stride * dt.Size()
		copy(gathered[j*d:(j+1)*d], kv[r*stride:])
	}
	q := randF32(rng, 4*ldq)
	s := randF32(rng, 4*lds)
	want := append([]float32(nil), s...)
	done := dotRows4IdxW(w, q, ldq, st, offs, n, d, s, lds, 0.5)
	if step := 2 << w; done != n/step*step {
		t.Fatalf("dotRows4Idx did %d keys of %d", done, n)
	}
	dotRowsGo(q, ldq, 4, gathered, d, done, d, want, lds, 0.5)
	checkScores(t, s, want, lds, done, d)
	p := randF32(rng, 4*ldq)
	acc := randF32(rng, 4*ldacc)
	wantAcc := append([]float32(nil), acc...)
	axpyRows4IdxW(w, p, ldq, st, offs, n, d, acc, ldacc)
	axpyRowsGo(p, ldq, 4, gathered, d, n, d, wantAcc, ldacc)
	checkAcc(t, acc, wantAcc, ldacc, n, d)
}

// FuzzDecodeIdx runs the indirect kernels of each width the CPU has on
// fuzzed key counts, head dims, dtypes and row orders against the Go
// forms (checkDecodeIdxCase).
func FuzzDecodeIdx(f *testing.F) {
	if !hasAVX2 || !hasF16C {
		f.Skip("the indirect decoding kernels need AVX2, FMA and F16C")
	}
	f.Add(uint16(2048), uint8(7), uint8(0), uint64(1))
	f.Add(uint16(37), uint8(0), uint8(5), uint64(2))
	f.Add(uint16(1), uint8(8), uint8(4), uint64(3))
	f.Fuzz(func(t *testing.T, nk uint16, db, kind uint8, seed uint64) {
		n := 1 + int(nk)%4096
		d := 16 * (1 + int(db)%9)
		w := int(kind) % 2
		if w == 1 && !hasAVX512 {
			w = 0
		}
		if w == 1 && kind&2 != 0 {
			defer useIdxPrefetch(1, kind&4 != 0)()
		}
		dt := backend.DTypes[int(kind>>3)%len(backend.DTypes)]
		checkDecodeIdxCase(t, rand.New(rand.NewPCG(seed, uint64(n))), w, dt, n, d)
	})
}

// guarded returns n ints that end where a page that cannot be read or
// written begins (freed when t ends).
func guarded(t *testing.T, n int) []int {
	t.Helper()
	page := syscall.Getpagesize()
	size := (n*8+page-1)/page*page + page
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[size-page:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	return unsafe.Slice((*int)(unsafe.Pointer(&mem[size-page-n*8])), n)
}
