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
// begins, so that a look past them (the prefetches' guard) faults. They
// run wherever the CPU has AVX2, FMA and F16C, whether or not they are
// its choice (hasDecodeIdx).
func TestDecodeIdxKernels(t *testing.T) {
	if !hasAVX2 || !hasF16C {
		t.Skip("the indirect decoding kernels need AVX2, FMA and F16C")
	}
	rng := rand.New(rand.NewPCG(23, 24))
	for _, dt := range backend.DTypes {
		for _, n := range []int{1, 2, 3, 31, 32, 33, 63, 64, 65, 66, 97, 2*axpyChunk + 37} {
			for _, d := range []int{16, 48, 80, 128} {
				t.Run(fmt.Sprintf("%v/n=%d/d=%d", dt, n, d), func(t *testing.T) {
					const ldq, lds, ldacc = 200, 170, 150
					rows := n + 7 // more rows than keys, in a shuffled order
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
					done := dotRows4Idx(q, ldq, st, offs, n, d, s, lds, 0.5)
					if done != n&^1 {
						t.Fatalf("dotRows4Idx did %d keys of %d", done, n)
					}
					dotRowsGo(q, ldq, 4, gathered, d, done, d, want, lds, 0.5)
					checkScores(t, s, want, lds, done, d)
					p := randF32(rng, 4*ldq)
					acc := randF32(rng, 4*ldacc)
					wantAcc := append([]float32(nil), acc...)
					axpyRows4Idx(p, ldq, st, offs, n, d, acc, ldacc)
					axpyRowsGo(p, ldq, 4, gathered, d, n, d, wantAcc, ldacc)
					checkAcc(t, acc, wantAcc, ldacc, n, d)
				})
			}
		}
	}
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
