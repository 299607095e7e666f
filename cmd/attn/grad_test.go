package main

import (
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
		{[]string{"-q", q, "-k", q, "-v", q, "-do", q, "-dq", o, "-dk", o, "-dv", o, "-layout", "x"}, "unknown layout"},
	} {
		code, _, stderr := runCmd(t, append([]string{"grad", "-backend", "cpu"}, bad.args...)...)
		if code == 0 || !strings.Contains(stderr, bad.want) {
			t.Errorf("%v: exit %d, stderr %q: want a failure saying %q", bad.args, code, stderr, bad.want)
		}
	}
}
