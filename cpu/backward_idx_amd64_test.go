//go:build amd64 && !purego

package cpu

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The index-list backward's kernels (dotRows4Idx, axpyRows4Idx,
// axpyAccIdx: rows found through byte offsets) against the Go forms
// over the same rows gathered: rows in a shuffled order (read twice
// where the kernel only reads them), key and row counts around a quad,
// head dims of one and several column passes and a sixteen-column tail.
// Within float32 summation's error, and nothing written outside the
// rows and columns asked for.
func TestBackIdxKernels(t *testing.T) {
	if !hasAVX512 {
		t.Skip("the index-list backward's kernels need AVX-512F: an x86 CPU with it (Zen 4 and 5, the Xeons) runs this test")
	}
	rng := rand.New(rand.NewPCG(80, 81))
	for _, d := range []int{16, 48, 64, 80, 128, 144} {
		for _, n := range []int{4, 8, 60, 64, 68, 260} {
			t.Run(fmt.Sprintf("d=%d/n=%d", d, n), func(t *testing.T) {
				const ldq, lds, ldp, ldacc = 200, 300, 280, 170
				rows, stride := n+9, d+8
				kv := randF32(rng, rows*stride)
				perm := rng.Perm(rows)[:n]
				perm[n-1] = perm[0] // a row read twice
				offs := make([]int, n)
				gathered := make([]float32, n*d)
				for j, r := range perm {
					offs[j] = 4 * r * stride
					copy(gathered[j*d:(j+1)*d], kv[r*stride:])
				}
				// s[r][j] = alpha·q[r]·k_j − sub[r]
				q := randF32(rng, 4*ldq)
				s := randF32(rng, 4*lds)
				want := append([]float32(nil), s...)
				sub := [4]float32{0.5, -1, 0, 3}
				dotsIdx(q, ldq, kv, offs, n, d, s, lds, 0.25, sub)
				dotRowsGo(q, ldq, 4, gathered, d, n, d, want, lds, 0.25)
				for r := range 4 {
					for j := range n {
						want[r*lds+j] -= sub[r]
					}
				}
				checkScores(t, s, want, lds, n, d)
				// acc[r] += Σ_j p[r][j]·v_j
				p := randF32(rng, 4*ldp)
				acc := randF32(rng, 4*ldacc)
				wantAcc := append([]float32(nil), acc...)
				axpysIdx(p, ldp, kv, offs, n, d, acc, ldacc)
				axpyRowsGo(p, ldp, 4, gathered, d, n, d, wantAcc, ldacc)
				checkAcc(t, acc, wantAcc, ldacc, n, d)
			})
		}
	}
	// acc_i += Σ_j w[i][j]·v[j] into m rows found through offsets.
	for _, dv := range []int{16, 48, 64, 80, 128, 144} {
		for _, n := range []int{1, 3, 4, 8} {
			for _, m := range []int{4, 8, 20} {
				t.Run(fmt.Sprintf("acc/dv=%d/n=%d/m=%d", dv, n, m), func(t *testing.T) {
					const ldw, ldv = 11, 150
					rows, stride := m+5, dv+24
					acc := randF32(rng, rows*stride)
					want := append([]float32(nil), acc...)
					w, v := randF32(rng, m*ldw), randF32(rng, n*ldv)
					offs := make([]int, m)
					for i, r := range rng.Perm(rows)[:m] {
						offs[i] = 4 * r * stride
						accRow := want[r*stride:][:dv]
						axpyRowsGo(w[i*ldw:], ldw, 1, v, ldv, n, dv, accRow, stride)
					}
					accIdx(w, ldw, v, ldv, n, dv, acc, offs, m)
					checkAcc(t, acc, want, stride, n, dv)
				})
			}
		}
	}
}
