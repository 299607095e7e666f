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

// TestRunBlocks: attn run -block-mask M.npy -block-size S skips the
// blocks M has off and writes what the same run writes with the
// keep-mask of those blocks (-mask), rank 4 and rank 2 masks, causal,
// bool and uint8 files; bad uses are refused, a float file among them,
// each error naming the file.
func TestRunBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(64, 1))
	const b, h, nq, nk, d, s = 2, 2, 40, 70, 16, 16
	qb, kb := (nq+s-1)/s, (nk+s-1)/s
	for _, tc := range []struct {
		name  string
		shape []int
		descr string
		flags []string
	}{
		{"rank4", []int{b, 1, qb, kb}, "|b1", nil},
		{"rank2 causal", []int{qb, kb}, "|u1", []string{"-causal"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{b, h, nq, d}, randVals(r, b*h*nq*d))
			k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", []int{b, h, nk, d}, randVals(r, b*h*nk*d))
			v := writeTestNpy(t, filepath.Join(dir, "v.npy"), "<f4", []int{b, h, nk, d}, randVals(r, b*h*nk*d))
			blocks := make([]float64, prod(tc.shape))
			for i := range blocks {
				if r.IntN(2) == 0 {
					blocks[i] = 1
				}
			}
			mask := make([]float64, b*h*nq*nk)
			for bb := range b {
				for hh := range h {
					for i := range nq {
						for j := range nk {
							at := (i/s)*kb + j/s
							if len(tc.shape) == 4 {
								at += bb * qb * kb
							}
							mask[((bb*h+hh)*nq+i)*nk+j] = blocks[at]
						}
					}
				}
			}
			bm := writeTestNpy(t, filepath.Join(dir, "b.npy"), tc.descr, tc.shape, blocks)
			m := writeTestNpy(t, filepath.Join(dir, "m.npy"), "<f4", []int{b, h, nq, nk}, mask)
			var outs [2][]float32
			for n, src := range [][]string{{"-block-mask", bm, "-block-size", strconv.Itoa(s)}, {"-mask", m, "-strategy", "fused"}} {
				o := filepath.Join(dir, strconv.Itoa(n)+".npy")
				args := append([]string{"run", "-backend", "cpu", "-q", q, "-k", k, "-v", v, "-o", o}, src...)
				code, _, stderr := runCmd(t, append(args, tc.flags...)...)
				if code != 0 {
					t.Fatalf("%v: exit %d\n%s", src, code, stderr)
				}
				_, outs[n] = readOutput(t, o)
			}
			for i := range outs[0] {
				if backendtest.Exceeds(math.Abs(float64(outs[0][i]-outs[1][i])), 1e-5) {
					t.Fatalf("out[%d] = %v with -block-mask, %v with the keep-mask", i, outs[0][i], outs[1][i])
				}
			}
		})
	}

	dir := t.TempDir()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{20, 8}, randVals(r, 160))
	k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", []int{30, 8}, randVals(r, 240))
	o := filepath.Join(dir, "o.npy")
	ok := writeTestNpy(t, filepath.Join(dir, "ok.npy"), "|b1", []int{2, 3}, []float64{1, 0, 1, 0, 1, 1})
	bad3 := writeTestNpy(t, filepath.Join(dir, "bad3.npy"), "|b1", []int{1, 2, 3}, []float64{1, 0, 1, 0, 1, 1})
	f32 := writeTestNpy(t, filepath.Join(dir, "f32.npy"), "<f4", []int{2, 2}, []float64{1, 0, 1, 1})
	i64 := writeTestNpy(t, filepath.Join(dir, "i64.npy"), "<i8", []int{2, 3}, []float64{1, 0, 1, 0, 1, 1})
	for _, bad := range []struct {
		args []string
		want string
		file string // the file the error must name, "" for none
	}{
		{[]string{"-block-mask", ok}, "needs -block-size", ""},
		{[]string{"-block-size", "16"}, "without -block-mask", ""},
		{[]string{"-block-mask", ok, "-block-size", "8"}, "⌈Nq/8⌉=3", ok},
		{[]string{"-block-mask", i64, "-block-size", "8"}, "⌈Nk/8⌉=4", i64},
		{[]string{"-block-mask", bad3, "-block-size", "16"}, "has shape (1, 2, 3)", bad3},
		{[]string{"-block-mask", f32, "-block-size", "16"}, "dtype float32 (<f4); want bool or integers", f32},
	} {
		code, _, stderr := runCmd(t, append([]string{"run", "-backend", "cpu", "-q", q, "-k", k, "-v", k, "-o", o}, bad.args...)...)
		if code == 0 || !strings.Contains(stderr, bad.want) {
			t.Errorf("%v: exit %d, stderr %q: want a failure saying %q", bad.args, code, stderr, bad.want)
		}
		if bad.file != "" && !strings.Contains(stderr, "-block-mask "+bad.file) {
			t.Errorf("%v: stderr %q does not name -block-mask %s", bad.args, stderr, bad.file)
		}
	}
}

// TestRunTree: attn run -tree T.npy writes what -mask writes with the
// keep-mask the tree stands for (every key before the draft, and the
// draft keys the tree keeps); a tree whose row does not see itself, or
// of floats, is refused naming the file.
func TestRunTree(t *testing.T) {
	r := rand.New(rand.NewPCG(64, 9))
	const h, nq, nk, d = 2, 4, 11, 8
	dir := t.TempDir()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{1, h, nq, d}, randVals(r, h*nq*d))
	k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", []int{1, h, nk, d}, randVals(r, h*nk*d))
	v := writeTestNpy(t, filepath.Join(dir, "v.npy"), "<f4", []int{1, h, nk, d}, randVals(r, h*nk*d))
	tree := []float64{1, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1}
	mask := make([]float64, nq*nk)
	for i := range nq {
		for j := range nk {
			mask[i*nk+j] = 1
			if j >= nk-nq {
				mask[i*nk+j] = tree[i*nq+j-(nk-nq)]
			}
		}
	}
	tf := writeTestNpy(t, filepath.Join(dir, "t.npy"), "|u1", []int{nq, nq}, tree)
	mf := writeTestNpy(t, filepath.Join(dir, "m.npy"), "<f4", []int{nq, nk}, mask)
	var outs [2][]float32
	for n, src := range [][]string{{"-tree", tf}, {"-mask", mf, "-strategy", "fused"}} {
		o := filepath.Join(dir, strconv.Itoa(n)+".npy")
		if code, _, stderr := runCmd(t, append([]string{"run", "-backend", "cpu", "-q", q, "-k", k, "-v", v, "-o", o}, src...)...); code != 0 {
			t.Fatalf("%v: exit %d\n%s", src, code, stderr)
		}
		_, outs[n] = readOutput(t, o)
	}
	for i := range outs[0] {
		if backendtest.Exceeds(math.Abs(float64(outs[0][i]-outs[1][i])), 1e-6) {
			t.Fatalf("O[%d]: %v with -tree, %v with -mask", i, outs[0][i], outs[1][i])
		}
	}
	bad := append([]float64(nil), tree...)
	bad[5] = 0 // row 1 does not see itself
	bf := writeTestNpy(t, filepath.Join(dir, "bad.npy"), "|u1", []int{nq, nq}, bad)
	ff := writeTestNpy(t, filepath.Join(dir, "f.npy"), "<f4", []int{nq, nq}, tree)
	for _, c := range []struct{ file, want string }{{bf, "-tree " + bf + ": attn: bad shape: tree of sequence 0: draft row 1 does not see itself"}, {ff, "want bool or integers"}} {
		code, _, stderr := runCmd(t, "run", "-backend", "cpu", "-q", q, "-k", k, "-v", v, "-o", filepath.Join(dir, "x.npy"), "-tree", c.file)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("-tree %s: exit %d, %q; want a failure saying %q", c.file, code, stderr, c.want)
		}
	}
}
