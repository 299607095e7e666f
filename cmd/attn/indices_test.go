package main

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend/backendtest"
)

// TestRunIndices: attn run -indices I.npy attends only the keys each row
// names and writes what the same run writes with the keep-mask that
// names them (-mask), ranks 2 to 4, one list a row and one a KV head,
// causal, int32 and int64 files, both backends where they open; bad
// lists are refused with the row they name.
func TestRunIndices(t *testing.T) {
	r := rand.New(rand.NewPCG(60, 1))
	for _, tc := range []struct {
		name     string
		qs, ks   []int // B, H, N, D in the bhnd layout (rank 4), less B or H
		heads, k int
		descr    string
		flags    []string
	}{
		{"rank2", []int{3, 12}, []int{20, 12}, 1, 6, "<i4", nil},
		{"rank3 gqa", []int{4, 2, 16}, []int{2, 30, 16}, 2, 9, "<i8", []string{"-causal"}},
		{"rank4", []int{2, 4, 1, 16}, []int{2, 1, 40, 16}, 1, 12, "<i4", []string{"-lse", ""}},
	} {
		for _, be := range []string{"cpu", "auto"} {
			t.Run(tc.name+"/"+be, func(t *testing.T) {
				dir := t.TempDir()
				rank := len(tc.qs)
				b, h, kvh := 1, 1, 1
				if rank == 4 {
					b = tc.qs[0]
				}
				if rank >= 3 {
					h, kvh = tc.qs[rank-3], tc.ks[rank-3]
				}
				nq, nk := tc.qs[rank-2], tc.ks[rank-2]
				q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", tc.qs, randVals(r, prod(tc.qs)))
				k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", tc.ks, randVals(r, prod(tc.ks)))
				v := writeTestNpy(t, filepath.Join(dir, "v.npy"), "<f4", tc.ks, randVals(r, prod(tc.ks)))
				// The lists: up to k distinct keys a row, −1 padding.
				idx := make([]float64, b*tc.heads*nq*tc.k)
				for row := range b * tc.heads * nq {
					keys := r.Perm(nk)
					n := r.IntN(tc.k + 1)
					for t := range tc.k {
						idx[row*tc.k+t] = -1
						if t < n {
							idx[row*tc.k+t] = float64(keys[t])
						}
					}
				}
				mask := make([]float64, b*h*nq*nk)
				for bb := range b {
					for hh := range h {
						g := 0
						if tc.heads > 1 {
							g = hh / (h / kvh)
						}
						for i := range nq {
							for _, j := range idx[((bb*tc.heads+g)*nq+i)*tc.k:][:tc.k] {
								if j >= 0 {
									mask[((bb*h+hh)*nq+i)*nk+int(j)] = 1
								}
							}
						}
					}
				}
				ishape := []int{b, tc.heads, nq, tc.k}[4-max(rank, 2):]
				if rank == 2 {
					ishape = []int{nq, tc.k}
				}
				ix := writeTestNpy(t, filepath.Join(dir, "i.npy"), tc.descr, ishape, idx)
				mshape := append(append([]int{}, tc.qs[:rank-1]...), nk)
				m := writeTestNpy(t, filepath.Join(dir, "m.npy"), "<f4", mshape, mask)
				var outs, lses [2][]float32
				for n, src := range [][]string{{"-indices", ix}, {"-mask", m, "-strategy", "fused"}} {
					o := filepath.Join(dir, strconv.Itoa(n)+".npy")
					args := append([]string{"run", "-backend", be, "-q", q, "-k", k, "-v", v, "-o", o}, src...)
					flags := append([]string{}, tc.flags...)
					lse := ""
					for i := range flags {
						if flags[i] == "" {
							lse = filepath.Join(dir, "lse"+strconv.Itoa(n)+".npy")
							flags[i] = lse
						}
					}
					code, _, stderr := runCmd(t, append(args, flags...)...)
					if code != 0 {
						t.Fatalf("%v: exit %d\n%s", src, code, stderr)
					}
					_, outs[n] = readOutput(t, o)
					if lse != "" {
						_, lses[n] = readOutput(t, lse)
					}
				}
				for _, c := range []struct {
					what string
					a, b []float32
				}{{"out", outs[0], outs[1]}, {"LSE", lses[0], lses[1]}} {
					for i := range c.a {
						if c.a[i] != c.b[i] && backendtest.Exceeds(math.Abs(float64(c.a[i]-c.b[i])), 1e-5) {
							t.Fatalf("%s[%d] = %v with -indices, %v with the keep-mask", c.what, i, c.a[i], c.b[i])
						}
					}
				}
			})
		}
	}

	dir := t.TempDir()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{2, 8}, randVals(r, 16))
	k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", []int{5, 8}, randVals(r, 40))
	o := filepath.Join(dir, "o.npy")
	for _, bad := range []struct {
		shape []int
		descr string
		vals  []float64
		want  string
	}{
		{[]int{2, 2}, "<i4", []float64{0, 5, 1, 2}, "row 0, entry 1 names key 5"},
		{[]int{2, 2}, "<i4", []float64{0, 1, 3, 3}, "row 1 names key 3 twice"},
		{[]int{2, 2}, "<i8", []float64{0, 1, -7, 2}, "element (1, 0) is -7"},
		{[]int{3, 2}, "<i4", []float64{0, 1, 2, 3, 4, 0}, "index list of 6 entries"},
		{[]int{2, 2}, "<f4", []float64{0, 1, 2, 3}, "dtype float32"},
		{[]int{4}, "<i4", []float64{0, 1, 2, 3}, "has shape (4,)"},
	} {
		ix := writeTestNpy(t, filepath.Join(dir, "i.npy"), bad.descr, bad.shape, bad.vals)
		code, _, stderr := runCmd(t, "run", "-backend", "cpu", "-q", q, "-k", k, "-v", k, "-o", o, "-indices", ix)
		if code == 0 || !strings.Contains(stderr, bad.want) {
			t.Errorf("%v %v: exit %d, stderr %q: want a failure saying %q", bad.shape, bad.vals, code, stderr, bad.want)
		}
		// Every error names the file, the library's (a key out of
		// range, a list of the wrong length) as the header's.
		if !strings.Contains(stderr, "-indices "+ix) {
			t.Errorf("%v %v: stderr %q does not name -indices %s", bad.shape, bad.vals, stderr, ix)
		}
	}
}
