package main

import (
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cmd/attn/internal/bench"
)

// TestRunVFromK: attn run -v-from-k DV takes V as K's first DV columns
// (MLA's latent cache) and writes what the same run writes given those
// columns as -v, ranks 2 to 4, causal and not, both strategies, both
// backends where they open; bad uses are refused before any work.
func TestRunVFromK(t *testing.T) {
	r := rand.New(rand.NewPCG(56, 1))
	for _, tc := range []struct {
		name   string
		qs, ks []int
		dv     int
		flags  []string
	}{
		{"rank2", []int{3, 12}, []int{7, 12}, 8, nil},
		{"rank3 mqa causal", []int{8, 2, 20}, []int{1, 9, 20}, 16, []string{"-causal"}},
		{"rank4 fused", []int{1, 4, 1, 24}, []int{1, 1, 30, 24}, 16, []string{"-causal", "-strategy", "fused", "-scale", "0.2"}},
		{"rank4 staged", []int{2, 2, 3, 9}, []int{2, 2, 5, 9}, 9, []string{"-strategy", "staged"}},
	} {
		for _, be := range []string{"cpu", "auto"} {
			t.Run(tc.name+"/"+be, func(t *testing.T) {
				dir := t.TempDir()
				q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", tc.qs, randVals(r, prod(tc.qs)))
				kv := randVals(r, prod(tc.ks))
				k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", tc.ks, kv)
				d := tc.ks[len(tc.ks)-1]
				vs := append(slices.Clone(tc.ks[:len(tc.ks)-1]), tc.dv)
				var vv []float64
				for i := 0; i < len(kv); i += d {
					vv = append(vv, kv[i:i+tc.dv]...)
				}
				v := writeTestNpy(t, filepath.Join(dir, "v.npy"), "<f4", vs, vv)
				var outs [2][]float32
				for i, src := range [][]string{{"-v-from-k", strconv.Itoa(tc.dv)}, {"-v", v}} {
					o := filepath.Join(dir, strconv.Itoa(i)+".npy")
					args := append([]string{"run", "-backend", be, "-q", q, "-k", k, "-o", o}, src...)
					code, _, stderr := runCmd(t, append(args, tc.flags...)...)
					if code != 0 {
						t.Fatalf("%v: exit %d\n%s", src, code, stderr)
					}
					shape, vals := readOutput(t, o)
					if want := append(slices.Clone(tc.qs[:len(tc.qs)-1]), tc.dv); !slices.Equal(shape, want) {
						t.Fatalf("%v: output of shape %v, want %v", src, shape, want)
					}
					outs[i] = vals
				}
				for i := range outs[0] {
					if backendtest.Exceeds(math.Abs(float64(outs[0][i]-outs[1][i])), 1e-6) {
						t.Fatalf("out[%d] = %v with -v-from-k, %v with its columns as -v", i, outs[0][i], outs[1][i])
					}
				}
			})
		}
	}

	dir := t.TempDir()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{2, 8}, randVals(r, 16))
	k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", []int{3, 8}, randVals(r, 24))
	o := filepath.Join(dir, "o.npy")
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-v-from-k", "9"}, "head dim of 8"},
		{[]string{"-v-from-k", "-1"}, "-v-from-k -1"},
		{[]string{"-v-from-k", "4", "-v", k}, "give no -v"},
		{[]string{"-v-from-k", "4", "-past-k", k}, "no past or present"},
	} {
		code, _, stderr := runCmd(t, append([]string{"run", "-backend", "cpu", "-q", q, "-k", k, "-o", o}, bad.args...)...)
		if code == 0 || !strings.Contains(stderr, bad.want) {
			t.Errorf("%v: exit %d, stderr %q: want a failure saying %q", bad.args, code, stderr, bad.want)
		}
	}
}

// TestBenchVFromK: attn bench -v-from-k DV, spelt as run's and grad's,
// measures V as K's first DV columns (results.json records V from K and
// Dv); a DV past D, a negative one or another -dv beside it is a usage
// error naming the sizes.
func TestBenchVFromK(t *testing.T) {
	fixedCeilings(t, false)
	out := t.TempDir()
	common := []string{"bench", "-backend", "cpu", "-n", "12", "-heads", "2", "-kvheads", "1", "-d", "16", "-budget", "1ms", "-isolate=false"}
	code, _, stderr := runCmd(t, append(common, "-v-from-k", "8", "-out", out)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := readResults(t, out)
	if len(r.Points) == 0 {
		t.Fatal("no points")
	}
	for _, pt := range r.Points {
		if !pt.VFromK || pt.Dv != 8 || pt.D != 16 || pt.Status != bench.StatusOK {
			t.Errorf("%s: V from K %v, D = %d, Dv = %d, %s %s; want V from K, 16, 8, ok", pt.Strategy, pt.VFromK, pt.D, pt.Dv, pt.Status, pt.Error)
		}
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"-v-from-k", "17"}, "first 17 columns with D = 16"},
		{[]string{"-v-from-k", "-1"}, "(V from K: -1)"},
		{[]string{"-v-from-k", "8", "-dv", "4"}, "first 8 columns and a V head dim of 4"},
		{[]string{"-v-from-k"}, "-v-from-k"},
	} {
		code, _, stderr := runCmd(t, append(append(common, "-out", ""), bad.args...)...)
		if code != 2 || !strings.Contains(stderr, bad.want) {
			t.Errorf("attn bench %v: exit %d, stderr %q; want 2 and %q", bad.args, code, stderr, bad.want)
		}
	}
}
