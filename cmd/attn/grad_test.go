package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// TestRunGrad: attn grad writes the gradients backendtest.ReferenceGrad
// gives (within 1e-4 of each tensor's largest), plain and causal with a
// softcap, in both layouts; bad uses are refused.
func TestRunGrad(t *testing.T) {
	r := rand.New(rand.NewPCG(69, 1))
	for _, tc := range []struct {
		name   string
		qs, ks []int // B, H (or N), N (or H), D
		layout backend.Layout
		flags  []string
	}{
		{"bhnd", []int{1, 4, 9, 8}, []int{1, 2, 13, 8}, backend.BHND, nil},
		{"bnhd causal softcap", []int{2, 7, 2, 16}, []int{2, 11, 1, 16}, backend.BNHD, []string{"-layout", "bnhd", "-causal", "-softcap", "2", "-scale", "0.3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			vals := func(n int) []float64 { return randVals(r, n) }
			qv, kv, vv, dov := vals(prod(tc.qs)), vals(prod(tc.ks)), vals(prod(tc.ks)), vals(prod(tc.qs))
			q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", tc.qs, qv)
			k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", tc.ks, kv)
			v := writeTestNpy(t, filepath.Join(dir, "v.npy"), "<f4", tc.ks, vv)
			do := writeTestNpy(t, filepath.Join(dir, "do.npy"), "<f4", tc.qs, dov)
			out := func(n string) string { return filepath.Join(dir, n+".npy") }
			args := append([]string{"grad", "-backend", "cpu", "-q", q, "-k", k, "-v", v, "-do", do, "-dq", out("dq"), "-dk", out("dk"), "-dv", out("dv")}, tc.flags...)
			if code, _, stderr := runCmd(t, args...); code != 0 {
				t.Fatalf("exit %d\n%s", code, stderr)
			}
			f32 := func(x []float64) []float32 {
				y := make([]float32, len(x))
				for i := range x {
					y[i] = float32(x[i])
				}
				return y
			}
			p := backend.Problem{B: tc.qs[0], D: tc.qs[3], Layout: tc.layout}
			if tc.layout == backend.BNHD {
				p.Nq, p.H, p.Nk, p.KVHeads = tc.qs[1], tc.qs[2], tc.ks[1], tc.ks[2]
				p.Causal, p.Softcap, p.Scale = true, 2, 0.3
			} else {
				p.H, p.Nq, p.KVHeads, p.Nk = tc.qs[1], tc.qs[2], tc.ks[1], tc.ks[2]
			}
			want := backendtest.ReferenceGrad(backendtest.Case{Problem: p, Q: f32(qv), K: f32(kv), V: f32(vv)}, f32(dov))
			for _, c := range []struct {
				name string
				want []float64
			}{{"dq", want.DQ}, {"dk", want.DK}, {"dv", want.DV}} {
				_, got := readOutput(t, out(c.name))
				if err := backendtest.NearGrad(c.name, got, c.want, 1e-4); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
	dir := t.TempDir()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{2, 8}, randVals(r, 16))
	o := filepath.Join(dir, "o.npy")
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-q", q, "-k", q, "-v", q, "-do", q, "-dq", o, "-dk", o}, "missing required flag -dv"},
		{[]string{"-q", q, "-k", q, "-v", q, "-do", q, "-dq", o, "-dk", o, "-dv", o, "-layout", "x"}, "want bhnd or bnhd"},
		{[]string{"-q", q, "-k", q, "-v", q, "-do", q, "-dq", o, "-dk", o, "-dv", o, "-dsinks", o + "s"}, "-dsinks is the gradient of the sink logits: give -sinks"},
		{[]string{"-q", q, "-k", q, "-v", q, "-do", q, "-dq", o, "-dk", o, "-dv", o, "-o", q}, "give both or neither"},
		{[]string{"-q", q, "-k", q, "-v", q, "-do", q, "-dq", o, "-dk", o + "k", "-dv", o + "v", "-dtype", "q8"}, "quantized caches are not trained"},
		{[]string{"-q", q, "-k", q, "-v", q, "-do", q, "-dq", q, "-dk", o + "k", "-dv", o + "v"}, "would overwrite the input -q"},
		{[]string{"-q", q, "-k", q, "-v", q, "-do", q, "-dq", o, "-dk", o, "-dv", o + "v"}, "-dq and -dk both name"},
	} {
		code, _, stderr := runCmd(t, append([]string{"grad", "-backend", "cpu"}, bad.args...)...)
		if code == 0 || !strings.Contains(stderr, bad.want) {
			t.Errorf("%v: exit %d, stderr %q: want a failure saying %q", bad.args, code, stderr, bad.want)
		}
	}
}

// TestRunGradVariants: attn grad with attn run's variant files (ALiBi,
// sinks, key lengths, a bias and a keep-mask) writes ReferenceGrad's
// gradients, -dsinks and -dbias among them; given attn run's -o and -lse
// it writes the same gradients without recomputing the forward.
func TestRunGradVariants(t *testing.T) {
	r := rand.New(rand.NewPCG(69, 2))
	dir := t.TempDir()
	path := func(n string) string { return filepath.Join(dir, n+".npy") }
	qs, ks := []int{2, 4, 9, 8}, []int{2, 2, 13, 8}
	vals := func(n int) []float64 { return randVals(r, n) }
	qv, kv, vv, dov, bv := vals(prod(qs)), vals(prod(ks)), vals(prod(ks)), vals(prod(qs)), vals(4*9*13)
	mv := make([]float64, 9*13)
	for i := range mv {
		mv[i] = float64((i % 5) % 4) // 0 every fifth key of a row, so row 0 keeps keys 1 … 3
	}
	alibi, sinks, lens := []float64{0.5, 0.25, 0.125, 0.0625}, []float64{0, 1, -1, 2}, []float64{13, 6}
	in := []string{"-q", writeTestNpy(t, path("q"), "<f4", qs, qv), "-k", writeTestNpy(t, path("k"), "<f4", ks, kv),
		"-v", writeTestNpy(t, path("v"), "<f4", ks, vv), "-causal",
		"-alibi", writeTestNpy(t, path("alibi"), "<f4", []int{4}, alibi), "-sinks", writeTestNpy(t, path("sinks"), "<f4", []int{4}, sinks),
		"-kv-lens", writeTestNpy(t, path("lens"), "<i4", []int{2}, lens), "-bias", writeTestNpy(t, path("bias"), "<f4", []int{4, 9, 13}, bv),
		"-mask", writeTestNpy(t, path("mask"), "<f4", []int{9, 13}, mv)}
	do := writeTestNpy(t, path("do"), "<f4", qs, dov)
	outs := []string{"-dq", path("dq"), "-dk", path("dk"), "-dv", path("dv"), "-dsinks", path("dsinks"), "-dbias", path("dbias")}
	if code, _, stderr := runCmd(t, append(append([]string{"grad", "-backend", "cpu", "-do", do}, in...), outs...)...); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	f32 := func(x []float64) []float32 {
		y := make([]float32, len(x))
		for i := range x {
			y[i] = float32(x[i])
		}
		return y
	}
	p := backend.Problem{B: 2, H: 4, KVHeads: 2, Nq: 9, Nk: 13, D: 8, Causal: true, Variants: backend.Variants{
		ALiBi: f32(alibi), Sinks: f32(sinks), KVLens: []int{13, 6}}}
	c := backendtest.Case{Problem: p, Q: f32(qv), K: f32(kv), V: f32(vv),
		Bias: &backendtest.HostMask{Shape: [4]int{1, 4, 9, 13}, Data: f32(bv)}, Keep: &backendtest.HostMask{Shape: [4]int{1, 1, 9, 13}, Data: f32(mv)}}
	want := backendtest.ReferenceGrad(c, f32(dov))
	check := func(suffix string) {
		t.Helper()
		for _, c := range []struct {
			name string
			want []float64
		}{{"dq", want.DQ}, {"dk", want.DK}, {"dv", want.DV}, {"dsinks", want.DSinks}, {"dbias", want.DBias}} {
			_, got := readOutput(t, path(c.name+suffix))
			if err := backendtest.NearGrad(c.name+suffix, got, c.want, 1e-4); err != nil {
				t.Fatal(err)
			}
		}
	}
	check("")
	// The forward from attn run, then the backward from it.
	if code, _, stderr := runCmd(t, append([]string{"run", "-backend", "cpu", "-o", path("o"), "-lse", path("lse")}, in...)...); code != 0 {
		t.Fatalf("attn run: exit %d\n%s", code, stderr)
	}
	outs = []string{"-dq", path("dq2"), "-dk", path("dk2"), "-dv", path("dv2"), "-dsinks", path("dsinks2"), "-dbias", path("dbias2")}
	if code, _, stderr := runCmd(t, append(append([]string{"grad", "-backend", "cpu", "-do", do, "-o", path("o"), "-lse", path("lse")}, in...), outs...)...); code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	check("2")
}

// TestRunGradBlocks: attn grad with -block-mask writes the gradients it
// writes with the element keep-mask the blocks stand for (-mask); the
// block mask needs its size.
func TestRunGradBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(69, 3))
	const b, h, nq, nk, d, s = 1, 2, 40, 70, 8, 16
	qb, kb := (nq+s-1)/s, (nk+s-1)/s
	dir := t.TempDir()
	path := func(n string) string { return filepath.Join(dir, n+".npy") }
	q := writeTestNpy(t, path("q"), "<f4", []int{b, h, nq, d}, randVals(r, b*h*nq*d))
	k := writeTestNpy(t, path("k"), "<f4", []int{b, h, nk, d}, randVals(r, b*h*nk*d))
	v := writeTestNpy(t, path("v"), "<f4", []int{b, h, nk, d}, randVals(r, b*h*nk*d))
	do := writeTestNpy(t, path("do"), "<f4", []int{b, h, nq, d}, randVals(r, b*h*nq*d))
	blocks := make([]float64, qb*kb)
	for i := range blocks {
		blocks[i] = float64(r.IntN(2))
	}
	mask := make([]float64, nq*nk)
	for i := range nq {
		for j := range nk {
			mask[i*nk+j] = blocks[(i/s)*kb+j/s]
		}
	}
	bm := writeTestNpy(t, path("bm"), "|u1", []int{qb, kb}, blocks)
	m := writeTestNpy(t, path("m"), "<f4", []int{nq, nk}, mask)
	sameGrads(t, dir, []string{"-q", q, "-k", k, "-v", v, "-do", do, "-causal"}, []string{"-block-mask", bm, "-block-size", "16"}, []string{"-mask", m})
	if code, _, stderr := runCmd(t, "grad", "-backend", "cpu", "-q", q, "-k", k, "-v", v, "-do", do, "-dq", path("x"), "-dk", path("y"), "-dv", path("z"), "-block-mask", bm); code == 0 || !strings.Contains(stderr, "-block-mask needs -block-size") {
		t.Errorf("-block-mask without its size: exit %d, %q", code, stderr)
	}
}

// TestRunGradVFromK: attn grad -v-from-k DV writes the gradient of K
// through K and through V (its first DV columns) together: attn grad
// over an explicit V (K's columns copied) gives dK and dV whose sum on
// the shared columns is it; -v and -dv are refused beside it.
func TestRunGradVFromK(t *testing.T) {
	r := rand.New(rand.NewPCG(69, 4))
	const b, h, n, d, dv = 1, 2, 20, 12, 8
	dir := t.TempDir()
	path := func(x string) string { return filepath.Join(dir, x+".npy") }
	kv := randVals(r, b*n*d)
	vv := make([]float64, b*n*dv)
	for row := range b * n {
		copy(vv[row*dv:(row+1)*dv], kv[row*d:row*d+dv])
	}
	q := writeTestNpy(t, path("q"), "<f4", []int{b, n, h, d}, randVals(r, b*n*h*d))
	k := writeTestNpy(t, path("k"), "<f4", []int{b, n, 1, d}, kv)
	v := writeTestNpy(t, path("v"), "<f4", []int{b, n, 1, dv}, vv)
	do := writeTestNpy(t, path("do"), "<f4", []int{b, n, h, dv}, randVals(r, b*n*h*dv))
	common := []string{"grad", "-backend", "cpu", "-layout", "bnhd", "-causal", "-q", q, "-k", k, "-do", do}
	if code, _, stderr := runCmd(t, append(common, "-v-from-k", "8", "-dq", path("dq0"), "-dk", path("dk0"))...); code != 0 {
		t.Fatalf("-v-from-k: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCmd(t, append(common, "-v", v, "-dq", path("dq1"), "-dk", path("dk1"), "-dv", path("dv1"))...); code != 0 {
		t.Fatalf("explicit V: exit %d\n%s", code, stderr)
	}
	_, dk0 := readOutput(t, path("dk0"))
	_, dk1 := readOutput(t, path("dk1"))
	_, dv1 := readOutput(t, path("dv1"))
	want := make([]float64, len(dk1))
	for i, x := range dk1 {
		want[i] = float64(x)
	}
	for row := range b * n {
		for c := range dv {
			want[row*d+c] += float64(dv1[row*dv+c])
		}
	}
	if err := backendtest.NearGrad("dk", dk0, want, 1e-5); err != nil {
		t.Error(err)
	}
	for _, bad := range [][]string{{"-v", v}, {"-dv", path("x")}} {
		args := append(append(common, "-v-from-k", "8", "-dq", path("y"), "-dk", path("z")), bad...)
		if code, _, stderr := runCmd(t, args...); code != 2 || !strings.Contains(stderr, "-v-from-k takes V from K") {
			t.Errorf("-v-from-k with %s: exit %d, %q", bad[0], code, stderr)
		}
	}
}

// TestRunGradIndices: attn grad with -indices (per KV head lists, −1
// padding, a row with no key) writes the gradients it writes with the
// element keep-mask the lists stand for (-mask).
func TestRunGradIndices(t *testing.T) {
	r := rand.New(rand.NewPCG(69, 4))
	const b, h, kvh, nq, nk, d, per = 1, 4, 2, 9, 40, 8, 6
	dir := t.TempDir()
	path := func(n string) string { return filepath.Join(dir, n+".npy") }
	q := writeTestNpy(t, path("q"), "<f4", []int{b, h, nq, d}, randVals(r, b*h*nq*d))
	k := writeTestNpy(t, path("k"), "<f4", []int{b, kvh, nk, d}, randVals(r, b*kvh*nk*d))
	v := writeTestNpy(t, path("v"), "<f4", []int{b, kvh, nk, d}, randVals(r, b*kvh*nk*d))
	do := writeTestNpy(t, path("do"), "<f4", []int{b, h, nq, d}, randVals(r, b*h*nq*d))
	idx := make([]float64, kvh*nq*per)
	mask := make([]float64, h*nq*nk)
	for g := range kvh {
		for i := range nq {
			list := idx[(g*nq+i)*per:][:per]
			for x, j := range r.Perm(nk)[:per] {
				list[x] = float64(j)
				if x%4 == 3 || i == 5 {
					list[x] = -1 // padding; row 5 names no key
					continue
				}
				for hg := range h / kvh {
					mask[((g*h/kvh+hg)*nq+i)*nk+j] = 1
				}
			}
		}
	}
	ix := writeTestNpy(t, path("ix"), "<i4", []int{b, kvh, nq, per}, idx)
	m := writeTestNpy(t, path("m"), "<f4", []int{b, h, nq, nk}, mask)
	sameGrads(t, dir, []string{"-q", q, "-k", k, "-v", v, "-do", do}, []string{"-indices", ix}, []string{"-mask", m})
}

// sameGrads runs attn grad on the CPU with the flags in, once with
// sparse and once with mask beside them (writing into dir), and holds
// the first run's gradients to the second's within 1e-5.
func sameGrads(t *testing.T, dir string, in, sparse, mask []string) {
	t.Helper()
	var got [2][3][]float32
	for n, src := range [][]string{sparse, mask} {
		var outs [3]string
		for i, name := range []string{"dq", "dk", "dv"} {
			outs[i] = filepath.Join(dir, fmt.Sprint("same-", name, n, ".npy"))
		}
		args := append(append([]string{"grad", "-backend", "cpu", "-dq", outs[0], "-dk", outs[1], "-dv", outs[2]}, in...), src...)
		if code, _, stderr := runCmd(t, args...); code != 0 {
			t.Fatalf("%v: exit %d\n%s", src, code, stderr)
		}
		for i, o := range outs {
			_, got[n][i] = readOutput(t, o)
		}
	}
	for i, name := range []string{"dq", "dk", "dv"} {
		want := make([]float64, len(got[1][i]))
		for j, x := range got[1][i] {
			want[j] = float64(x)
		}
		if err := backendtest.NearGrad(name, got[0][i], want, 1e-5); err != nil {
			t.Error(err)
		}
	}
}
