package main

import (
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/kernels"
)

// concatRows is past then cur along the sequence axis of [B, H, N, D]
// tensors in BHND (bnhd false) or [B, N, H, D] (bnhd true): the tests'
// own concatenation, by coordinates.
func concatRows(past, cur []float64, b, h, p, n, d int, bnhd bool) []float64 {
	out := make([]float64, b*h*(p+n)*d)
	at := func(bi, hi, i, rows int) int {
		if bnhd {
			return ((bi*rows+i)*h + hi) * d
		}
		return ((bi*h+hi)*rows + i) * d
	}
	for bi := range b {
		for hi := range h {
			for i := range p + n {
				src, from := past, at(bi, hi, i, p)
				if i >= p {
					src, from = cur, at(bi, hi, i-p, n)
				}
				copy(out[at(bi, hi, i, p+n):at(bi, hi, i, p+n)+d], src[from:from+d])
			}
		}
	}
	return out
}

// -past-k and -past-v: attention over the past's keys then K's, query i
// at key position P + i under -causal, as the reference computes it on
// the concatenation; -present-k and -present-v hold exactly that
// concatenation, in K's dtype.
func TestRunPast(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 1))
	for _, tc := range []struct {
		name               string
		bnhd               bool
		b, h, kvh, nq, n   int
		past, d, dv        int
		causal             bool
		descr, pastDescr   string
		offset             *int // -causal-offset, overriding the past's
		wantPresent, wantO string
	}{
		{name: "bhnd/causal", b: 2, h: 4, kvh: 2, nq: 4, n: 6, past: 12, d: 8, dv: 8, causal: true, descr: "<f4", pastDescr: "<f4", wantPresent: "<f4"},
		{name: "bnhd/causal/nq=n", bnhd: true, b: 1, h: 2, kvh: 2, nq: 3, n: 3, past: 5, d: 4, dv: 6, causal: true, descr: "<f8", pastDescr: "<f8", wantPresent: "<f4"},
		{name: "bhnd/no-causal", b: 2, h: 2, kvh: 1, nq: 2, n: 1, past: 7, d: 8, dv: 8, descr: "<f4", pastDescr: "<f4", wantPresent: "<f4"},
		{name: "empty-past", b: 1, h: 2, kvh: 2, nq: 3, n: 3, past: 0, d: 4, dv: 4, causal: true, descr: "<f4", pastDescr: "<f4", wantPresent: "<f4"},
		{name: "float16", b: 1, h: 3, kvh: 3, nq: 2, n: 2, past: 4, d: 8, dv: 8, causal: true, descr: "<f2", pastDescr: "<f2", wantPresent: "<f2"},
		{name: "float32 past, float16 keys", b: 1, h: 1, kvh: 1, nq: 2, n: 2, past: 3, d: 4, dv: 4, causal: true, descr: "<f2", pastDescr: "<f4", wantPresent: "<f2"},
		{name: "causal offset overrides", b: 1, h: 2, kvh: 1, nq: 4, n: 4, past: 6, d: 4, dv: 4, causal: true, descr: "<f4", pastDescr: "<f4", wantPresent: "<f4", offset: new(int)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			shape := func(heads, n, d int) []int {
				if tc.bnhd {
					return []int{tc.b, n, heads, d}
				}
				return []int{tc.b, heads, n, d}
			}
			// Values a float16 file holds exactly.
			vals := func(n int) []float64 {
				v := randVals(r, n)
				for i := range v {
					v[i] = float64(kernels.Float16.Decode(kernels.Float16.Encode(float32(v[i]))))
				}
				return v
			}
			q := vals(tc.b * tc.h * tc.nq * tc.d)
			k, v := vals(tc.b*tc.kvh*tc.n*tc.d), vals(tc.b*tc.kvh*tc.n*tc.dv)
			pk, pv := vals(tc.b*tc.kvh*tc.past*tc.d), vals(tc.b*tc.kvh*tc.past*tc.dv)
			file := func(name, descr string, shape []int, x []float64) string {
				return writeTestNpy(t, filepath.Join(dir, name), descr, shape, x)
			}
			out, presK, presV := filepath.Join(dir, "o.npy"), filepath.Join(dir, "pk.npy"), filepath.Join(dir, "pv.npy")
			lse := filepath.Join(dir, "lse.npy")
			args := []string{"run", "-backend", "cpu",
				"-q", file("q.npy", tc.descr, shape(tc.h, tc.nq, tc.d), q),
				"-k", file("k.npy", tc.descr, shape(tc.kvh, tc.n, tc.d), k),
				"-v", file("v.npy", tc.descr, shape(tc.kvh, tc.n, tc.dv), v),
				"-past-k", file("pastk.npy", tc.pastDescr, shape(tc.kvh, tc.past, tc.d), pk),
				"-past-v", file("pastv.npy", tc.pastDescr, shape(tc.kvh, tc.past, tc.dv), pv),
				"-present-k", presK, "-present-v", presV, "-o", out, "-lse", lse}
			layout := backend.BHND
			if tc.bnhd {
				args = append(args, "-layout", "bnhd")
				layout = backend.BNHD
			}
			if tc.causal {
				args = append(args, "-causal")
			}
			if tc.offset != nil {
				args = append(args, "-causal-offset", "0")
			}
			code, stdout, stderr := runCmd(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, "wrote "+presK) || !strings.Contains(stdout, "past and new keys") {
				t.Errorf("stdout %q does not report the present keys", stdout)
			}
			keys := concatRows(pk, k, tc.b, tc.kvh, tc.past, tc.n, tc.d, tc.bnhd)
			values := concatRows(pv, v, tc.b, tc.kvh, tc.past, tc.n, tc.dv, tc.bnhd)
			for _, p := range []struct {
				path  string
				want  []float64
				shape []int
			}{{presK, keys, shape(tc.kvh, tc.past+tc.n, tc.d)}, {presV, values, shape(tc.kvh, tc.past+tc.n, tc.dv)}} {
				var gotShape []int
				var got []float32
				if tc.wantPresent == "<f2" {
					gotShape, got = readHalfOutput(t, p.path)
				} else {
					gotShape, got = readOutput(t, p.path)
				}
				if !slices.Equal(gotShape, p.shape) {
					t.Fatalf("%s: shape %v, want %v", p.path, gotShape, p.shape)
				}
				for i, w := range p.want {
					if float64(got[i]) != w {
						t.Fatalf("%s[%d] = %v, want %v exactly", p.path, i, got[i], w)
					}
				}
			}
			offset := tc.past
			if tc.offset != nil {
				offset = *tc.offset
			}
			prob := backend.Problem{B: tc.b, H: tc.h, KVHeads: tc.kvh, Nq: tc.nq, Nk: tc.past + tc.n, D: tc.d, Dv: tc.dv, Layout: layout}
			if tc.causal {
				prob.CausalOffset = &offset
			}
			want := backendtest.Reference(backendtest.Case{Problem: prob, Q: float32s(q), K: float32s(keys), V: float32s(values)})
			var gotO []float32
			if tc.descr == "<f2" {
				_, gotO = readHalfOutput(t, out)
				for i, w := range want.O { // the output is rounded to float16
					want.O[i] = float64(kernels.Float16.Decode(kernels.Float16.Encode(float32(w))))
				}
				for i := range gotO {
					if d := math.Abs(float64(gotO[i]) - want.O[i]); backendtest.Exceeds(d, 0x1p-10*max(1, math.Abs(want.O[i]))) {
						t.Fatalf("O[%d] = %v, want %v", i, gotO[i], want.O[i])
					}
				}
			} else {
				_, gotO = readOutput(t, out)
				checkClose(t, "O", gotO, want.O)
			}
			_, gotL := readOutput(t, lse)
			checkClose(t, "LSE", gotL, want.LSE)
			noTemps(t, dir)
		})
	}
}

// A packed or paged call: the files and flags for attn run, and the
// reference's case on the same values.
type seqRun struct {
	args []string
	ref  backendtest.Case
}

// packedRun writes a packed call: queries of lengths qs and keys of
// lengths ks ([total, heads, dim] rows), cu_seqlens in descr.
func packedRun(t *testing.T, r *rand.Rand, dir, descr string, h, kvh, d int, qs, ks []int, causal bool) seqRun {
	cu := func(ns []int) ([]float64, []int, int) {
		f, c, most := []float64{0}, []int{0}, 0
		for _, n := range ns {
			c = append(c, c[len(c)-1]+n)
			f = append(f, float64(c[len(c)-1]))
			most = max(most, n)
		}
		return f, c, most
	}
	cqf, cq, nq := cu(qs)
	ckf, ck, nk := cu(ks)
	q := randVals(r, cq[len(cq)-1]*h*d)
	k, v := randVals(r, ck[len(ck)-1]*kvh*d), randVals(r, ck[len(ck)-1]*kvh*d)
	w := func(name string, shape []int, x []float64) string {
		return writeTestNpy(t, filepath.Join(dir, name), "<f4", shape, x)
	}
	args := []string{"-q", w("q.npy", []int{cq[len(cq)-1], h, d}, q),
		"-k", w("k.npy", []int{ck[len(ck)-1], kvh, d}, k), "-v", w("v.npy", []int{ck[len(ck)-1], kvh, d}, v),
		"-cu-seqlens-q", writeTestNpy(t, filepath.Join(dir, "cuq.npy"), descr, []int{len(cqf)}, cqf),
		"-cu-seqlens-k", writeTestNpy(t, filepath.Join(dir, "cuk.npy"), descr, []int{len(ckf)}, ckf)}
	if causal {
		args = append(args, "-causal")
	}
	p := backend.Problem{B: len(qs), H: h, KVHeads: kvh, Nq: nq, Nk: nk, D: d, Layout: backend.BNHD, Causal: causal,
		Packed: &backend.Packed{CuQ: cq, CuK: ck}}
	return seqRun{args, backendtest.Case{Problem: p, Q: float32s(q), K: float32s(k), V: float32s(v)}}
}

// pagedRun writes a paged call: B = len(lens) caches of those lengths in
// pages of size keys, per blocks a row, the table's unread entries −1,
// every unread pool row NaN, Q [B, nq, H, D].
func pagedRun(t *testing.T, r *rand.Rand, dir string, h, kvh, d, nq, size, per, spare int, lens []int) seqRun {
	b := len(lens)
	used := 0
	for _, n := range lens {
		used += (n + size - 1) / size
	}
	pages := used + spare
	order := r.Perm(pages)
	table := make([]int, b*per)
	for i, n := range lens {
		for blk := range per {
			table[i*per+blk] = -1
			if blk < (n+size-1)/size {
				table[i*per+blk], order = order[0], order[1:]
			}
		}
	}
	p := backend.Problem{B: b, H: h, KVHeads: kvh, Nq: nq, Nk: per * size, D: d, Layout: backend.BNHD, Causal: true,
		Variants: backend.Variants{KVLens: lens}, Paged: &backend.Paged{PageSize: size, Pages: pages, PerSeq: per, Table: table}}
	q := randVals(r, b*nq*h*d)
	k, v := randVals(r, pages*size*kvh*d), randVals(r, pages*size*kvh*d)
	read := map[int]bool{}
	for i, n := range lens {
		for j := range n {
			read[table[i*per+j/size]*size+j%size] = true
		}
	}
	for row := range pages * size {
		if !read[row] {
			for e := range kvh * d {
				k[row*kvh*d+e], v[row*kvh*d+e] = math.NaN(), math.NaN()
			}
		}
	}
	ints := func(x []int) []float64 {
		f := make([]float64, len(x))
		for i, n := range x {
			f[i] = float64(n)
		}
		return f
	}
	w := func(name string, shape []int, x []float64) string {
		return writeTestNpy(t, filepath.Join(dir, name), "<f4", shape, x)
	}
	args := []string{"-q", w("q.npy", []int{b, nq, h, d}, q),
		"-k", w("k.npy", []int{pages, size, kvh, d}, k), "-v", w("v.npy", []int{pages, size, kvh, d}, v),
		"-block-table", writeTestNpy(t, filepath.Join(dir, "table.npy"), "<i4", []int{b, per}, ints(table)),
		"-cache-lens", writeTestNpy(t, filepath.Join(dir, "lens.npy"), "<i8", []int{b}, ints(lens)), "-causal"}
	return seqRun{args, backendtest.Case{Problem: p, Q: float32s(q), K: float32s(k), V: float32s(v)}}
}

// Packed sequences and paged caches through attn run, held to the
// reference: the output has Q's shape, the LSE is [H, total] when
// packed, and a pool's unread rows (NaN here) are neither checked nor
// read.
func TestRunSeqs(t *testing.T) {
	r := rand.New(rand.NewPCG(14, 2))
	for _, tc := range []struct {
		name string
		make func(dir string) seqRun
	}{
		{"packed/int32/causal/gqa", func(dir string) seqRun {
			return packedRun(t, r, dir, "<i4", 4, 2, 8, []int{5, 0, 1, 9}, []int{7, 3, 1, 20}, true)
		}},
		{"packed/int64", func(dir string) seqRun {
			return packedRun(t, r, dir, "<i8", 2, 2, 4, []int{3, 4}, []int{2, 6}, false)
		}},
		{"paged/page-size-1", func(dir string) seqRun { return pagedRun(t, r, dir, 2, 1, 8, 2, 1, 9, 3, []int{9, 4}) }},
		{"paged/decode", func(dir string) seqRun { return pagedRun(t, r, dir, 4, 2, 16, 1, 4, 5, 2, []int{0, 17, 7}) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			sr := tc.make(dir)
			out, lse := filepath.Join(dir, "o.npy"), filepath.Join(dir, "lse.npy")
			args := append([]string{"run", "-backend", "cpu", "-o", out, "-lse", lse}, sr.args...)
			code, stdout, stderr := runCmd(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !strings.Contains(stdout, "fused") {
				t.Errorf("stdout %q does not say the fused strategy ran", stdout)
			}
			want := backendtest.Reference(sr.ref)
			p := sr.ref.Problem
			oShape, o := readOutput(t, out)
			wantShape := []int{p.B, p.Nq, p.H, p.D}
			wantLSE := []int{p.B, p.H, p.Nq}
			if p.Packed != nil {
				wantShape, wantLSE = []int{p.TotalQ(), p.H, p.D}, []int{p.H, p.TotalQ()}
			}
			if !slices.Equal(oShape, wantShape) {
				t.Errorf("O has shape %v, want %v", oShape, wantShape)
			}
			checkClose(t, "O", o, want.O)
			lShape, l := readOutput(t, lse)
			if !slices.Equal(lShape, wantLSE) {
				t.Errorf("LSE has shape %v, want %v", lShape, wantLSE)
			}
			checkClose(t, "LSE", l, want.LSE)
			noTemps(t, dir)
		})
	}
}

// Every bad packed, paged or past input: exit status 1 (2 for flags that
// cannot go together), one line naming the flag, the file and the sizes,
// nothing written.
func TestRunSeqsBadInputs(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	f32 := func(name string, shape ...int) string {
		return writeTestNpy(t, path(name), "<f4", shape, seq(prod(shape)))
	}
	ints := func(name, descr string, shape []int, vals ...float64) string {
		return writeTestNpy(t, path(name), descr, shape, vals)
	}
	out, present := path("out.npy"), path("present.npy")
	// Packed: Q [7, 4, 8], K and V [9, 2, 8] in two sequences.
	pq, pk, pv := f32("pq.npy", 7, 4, 8), f32("pk.npy", 9, 2, 8), f32("pv.npy", 9, 2, 8)
	cuq, cuk := ints("cuq.npy", "<i4", []int{3}, 0, 3, 7), ints("cuk.npy", "<i8", []int{3}, 0, 4, 9)
	packed := func(extra ...string) []string {
		return append([]string{"run", "-backend", "cpu", "-q", pq, "-k", pk, "-v", pv, "-o", out, "-cu-seqlens-q", cuq, "-cu-seqlens-k", cuk}, extra...)
	}
	packedWith := func(flag, file string, extra ...string) []string {
		a := packed(extra...)
		for i := range a {
			if a[i] == flag {
				a[i+1] = file
			}
		}
		return a
	}
	// Paged: Q [2, 3, 4, 8], pools of 5 pages of 4 keys, 2 KV heads.
	gq, gk, gv := f32("gq.npy", 2, 3, 4, 8), f32("gk.npy", 5, 4, 2, 8), f32("gv.npy", 5, 4, 2, 8)
	table := ints("table.npy", "<i4", []int{2, 3}, 0, 1, -1, 2, 3, 4)
	lens := ints("lens.npy", "<i8", []int{2}, 8, 12)
	paged := func(extra ...string) []string {
		return append([]string{"run", "-backend", "cpu", "-q", gq, "-k", gk, "-v", gv, "-o", out, "-block-table", table, "-cache-lens", lens}, extra...)
	}
	pagedWith := func(flag, file string, extra ...string) []string {
		a := paged(extra...)
		for i := range a {
			if a[i] == flag {
				a[i+1] = file
			}
		}
		return a
	}
	nanPool := seq(5 * 4 * 2 * 8)
	nanPool[(3*4+1)*2*8+8+2] = math.NaN() // page 3, slot 1, head 1, element 2: sequence 1's key 5
	// Past: Q [1, 2, 3, 4], K and V [1, 2, 3, 4], pasts of 5.
	dq, dk, dv := f32("dq.npy", 1, 2, 3, 4), f32("dk.npy", 1, 2, 3, 4), f32("dv.npy", 1, 2, 3, 4)
	pastk, pastv := f32("pastk.npy", 1, 2, 5, 4), f32("pastv.npy", 1, 2, 5, 4)
	past := func(extra ...string) []string {
		return append([]string{"run", "-backend", "cpu", "-q", dq, "-k", dk, "-v", dv, "-o", out, "-past-k", pastk, "-past-v", pastv, "-present-k", present}, extra...)
	}
	nanPast := seq(40)
	nanPast[7] = math.Inf(-1)

	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"cu_q not from 0", packedWith("-cu-seqlens-q", ints("cuq1.npy", "<i4", []int{3}, 1, 3, 7)), 1,
			[]string{"-cu-seqlens-q " + path("cuq1.npy") + " starts at 1, want 0"}},
		{"cu_q decreasing", packedWith("-cu-seqlens-q", ints("cuqd.npy", "<i8", []int{3}, 0, 5, 4)), 1,
			[]string{"-cu-seqlens-q " + path("cuqd.npy") + " decreases: entry 1 is 5, entry 2 is 4"}},
		{"cu_q short of total", packedWith("-cu-seqlens-q", ints("cuq6.npy", "<i4", []int{3}, 0, 3, 6)), 1,
			[]string{"-cu-seqlens-q " + path("cuq6.npy") + " ends at 6 but " + pq + " has 7 rows"}},
		{"cu_k past total", packedWith("-cu-seqlens-k", ints("cuk10.npy", "<i4", []int{3}, 0, 4, 10)), 1,
			[]string{"-cu-seqlens-k " + path("cuk10.npy") + " ends at 10 but " + pk + " has 9 rows"}},
		{"cu counts differ", packedWith("-cu-seqlens-k", ints("cuk2.npy", "<i4", []int{2}, 0, 9)), 1,
			[]string{"-cu-seqlens-k " + path("cuk2.npy") + " has 2 entries, -cu-seqlens-q " + cuq + " 3"}},
		{"cu float", packedWith("-cu-seqlens-q", f32("cuqf.npy", 3)), 1, []string{"-cu-seqlens-q " + path("cuqf.npy") + ": dtype float32 (<f4); want a vector of B+1 int32 or int64"}},
		{"cu rank 2", packedWith("-cu-seqlens-q", ints("cuq2d.npy", "<i4", []int{1, 3}, 0, 3, 7)), 1, []string{"-cu-seqlens-q " + path("cuq2d.npy") + " has shape (1, 3)"}},
		{"packed rank 4", packedWith("-q", gq), 1, []string{gq + " has shape [2 3 4 8]; packed queries (-cu-seqlens-q " + cuq + ") are rank 3"}},
		{"packed heads", packedWith("-k", f32("pk3.npy", 9, 3, 8)), 1, []string{"KV head counts differ"}},
		{"packed dims", packedWith("-k", f32("pk7.npy", 9, 2, 7)), 1, []string{pq + " has D=8, " + path("pk7.npy") + " has D=7"}},
		{"packed bhnd", packed("-layout", "bhnd"), 2, []string{"-layout bhnd: packed sequences (-cu-seqlens-q) are [total, H, D] rows"}},
		{"packed weights", packed("-weights", path("w.npy")), 2, []string{"-weights needs the staged strategy, which takes no packed sequences"}},
		{"packed staged", packed("-strategy", "staged"), 2, []string{"-strategy staged takes no packed sequences"}},
		{"cu_k alone", []string{"run", "-q", pq, "-k", pk, "-v", pv, "-o", out, "-cu-seqlens-k", cuk}, 2, []string{"give -cu-seqlens-q too"}},
		{"cu_k and table", packed("-block-table", table), 2, []string{"-cu-seqlens-k (packed keys) and -block-table (a paged cache) both give the keys"}},
		{"kv-lens with cu_k", packed("-kv-lens", lens), 2, []string{"-kv-lens with -cu-seqlens-k"}},

		{"table entry out of range", pagedWith("-block-table", ints("table5.npy", "<i8", []int{2, 3}, 0, 1, -1, 2, 5, 4)), 1,
			[]string{"-block-table " + path("table5.npy") + ": sequence 1 block 1 (keys 4 … 7 of its 12) names page 5, want 0 … 4 (" + gk + " has 5 pages)"}},
		{"cache beyond pages", pagedWith("-cache-lens", ints("lens13.npy", "<i4", []int{2}, 13, 12)), 1,
			[]string{"-cache-lens " + path("lens13.npy") + ": cache length 13 of sequence 0 is beyond its 3 pages of 4 keys"}},
		{"cache lengths count", pagedWith("-cache-lens", ints("lens1.npy", "<i4", []int{1}, 8)), 1,
			[]string{"-cache-lens " + path("lens1.npy") + ": 1 cache lengths for B=2 sequences"}},
		{"table rows", pagedWith("-block-table", ints("table3.npy", "<i4", []int{3, 3}, 0, 1, -1, 2, 3, 4, 0, 0, 0)), 1,
			[]string{"-block-table " + path("table3.npy") + " has 3 rows for B=2 sequences of " + gq}},
		{"table float", pagedWith("-block-table", f32("tablef.npy", 2, 3)), 1, []string{"-block-table " + path("tablef.npy") + ": dtype float32 (<f4); want a matrix [B, blocks]"}},
		{"table vector", pagedWith("-block-table", ints("table1d.npy", "<i4", []int{6}, 0, 1, -1, 2, 3, 4)), 1, []string{"-block-table " + path("table1d.npy") + " has shape (6,)"}},
		{"pool rank", pagedWith("-k", f32("gk3.npy", 20, 2, 8)), 1, []string{path("gk3.npy") + " has shape [20 2 8]; a paged cache (-block-table " + table + ") is a pool of rank 4"}},
		{"pools differ", pagedWith("-v", f32("gv4.npy", 4, 4, 2, 8)), 1, []string{"page pools differ: " + gk + " has 5 pages of 4 keys, " + path("gv4.npy") + " 4 pages of 4"}},
		{"pool heads", pagedWith("-k", f32("gk1.npy", 5, 4, 3, 8), "-v", f32("gv1.npy", 5, 4, 3, 8)), 1, []string{gq + " has H=4 heads, not a multiple of the 3 KV heads of " + path("gk1.npy")}},
		{"NaN on a read page", pagedWith("-k", writeTestNpy(t, path("gknan.npy"), "<f4", []int{5, 4, 2, 8}, nanPool)), 1,
			[]string{"-k " + path("gknan.npy") + " (K)", "K of shape [5 4 2 8] holds NaN at [3 1 1 2] (sequence 1's key 5, on page 3)", "-allow-nonfinite"}},
		{"cache-lens alone", []string{"run", "-q", dq, "-k", dk, "-v", dv, "-o", out, "-cache-lens", lens}, 2, []string{"-cache-lens gives a paged cache's lengths; give -block-table too"}},
		{"kv-lens with table", paged("-kv-lens", lens), 2, []string{"-kv-lens with -block-table"}},
		{"paged scores", paged("-scores", path("s.npy")), 2, []string{"-scores needs the staged strategy"}},
		{"paged heatmap", paged("-heatmap", path("h.png")), 2, []string{"-heatmap needs the staged strategy"}},
		{"paged with past", paged("-past-k", pastk, "-past-v", pastv), 2, []string{"-past-k and -past-v extend dense K and V"}},

		{"past alone", []string{"run", "-q", dq, "-k", dk, "-v", dv, "-o", out, "-past-k", pastk}, 2, []string{"-past-k and -past-v come together"}},
		{"past rank", past("-past-k", f32("pastk3.npy", 2, 5, 4)), 1, []string{"-past-k " + path("pastk3.npy") + " has rank 3 (shape (2, 5, 4)) but " + dk + " has rank 4"}},
		{"past heads", past("-past-k", f32("pastkh.npy", 1, 1, 5, 4)), 1,
			[]string{"-past-k " + path("pastkh.npy") + " of shape (1, 1, 5, 4) (B=1 H=1 D=4, bhnd) does not extend " + dk + " of shape (1, 2, 3, 4) (B=1 H=2 D=4)"}},
		{"past dims", past("-past-v", f32("pastvd.npy", 1, 2, 5, 3)), 1, []string{"-past-v " + path("pastvd.npy") + " of shape (1, 2, 5, 3) (B=1 H=2 D=3, bhnd) does not extend"}},
		{"past lengths", past("-past-v", f32("pastv6.npy", 1, 2, 6, 4)), 1, []string{"the pasts differ in length: -past-k " + pastk + " has 5 keys, -past-v " + path("pastv6.npy") + " 6 values"}},
		{"past -Inf", past("-past-v", writeTestNpy(t, path("pastvinf.npy"), "<f4", []int{1, 2, 5, 4}, nanPast)), 1, []string{path("pastvinf.npy") + ": element (0, 0, 1, 3) is -Inf"}},
		{"past int", past("-past-k", ints("pastki.npy", "<i4", []int{1, 2, 5, 4}, seq(40)...)), 1, []string{path("pastki.npy") + ": dtype int32 (<i4); attn reads float16, float32 or float64"}},
		{"present overwrites past", past("-present-v", pastv), 2, []string{"-present-v " + pastv + " would overwrite the input -past-v"}},
		{"present and -o", past("-present-v", out), 2, []string{"-o and -present-v both name"}},
		{"past bias Nk", past("-bias", f32("bias3.npy", 3, 3)), 1, []string{"bias " + path("bias3.npy") + " of shape [3 3] does not broadcast to [B=1, H=2, Nq=3, Nk=8]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			if !strings.HasPrefix(stderr, "attn run: ") {
				t.Errorf("stderr %q does not start with \"attn run: \"", stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q\ndoes not contain %q", stderr, w)
				}
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			for _, p := range []string{out, present} {
				if _, err := os.Stat(p); err == nil {
					t.Errorf("a failed run wrote %s", p)
				}
			}
		})
	}
	noTemps(t, dir)
}
