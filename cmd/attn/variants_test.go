package main

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
)

// Each variant flag changes what attn run computes as the float64
// reference says it should, on the staged path (O, weights, LSE and the
// scores at each stage) and the fused one (O, LSE); each case's variant
// changes the reference's answer, so a flag that were ignored would fail.
func TestRunVariants(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	off := func(n int) *int { return &n }
	type file struct {
		descr string
		vals  []float64
	}
	for _, tc := range []struct {
		name       string
		qs, ks, vs []int
		flags      []string
		alibi      *file // [H]
		sinks      *file // [H]
		kvLens     *file // [B]
		biasShape  []int
		set        func(p *refProblem)
		emptyRows  []int // flat query rows that see no key
	}{
		{name: "causal offset 0 is top-left", qs: []int{2, 3, 4}, ks: []int{2, 7, 4}, vs: []int{2, 7, 3},
			flags: []string{"-causal-offset", "0"}, set: func(p *refProblem) { p.offset = off(0) }},
		{name: "causal offset 2", qs: []int{5, 4}, ks: []int{5, 4}, vs: []int{5, 4},
			flags: []string{"-causal-offset", "2"}, set: func(p *refProblem) { p.offset = off(2) }},
		{name: "negative causal offset leaves empty rows", qs: []int{5, 4}, ks: []int{6, 4}, vs: []int{6, 2},
			flags: []string{"-causal-offset", "-2"}, set: func(p *refProblem) { p.offset = off(-2) }, emptyRows: []int{0, 1}},
		{name: "causal window", qs: []int{1, 2, 9, 4}, ks: []int{1, 1, 9, 4}, vs: []int{1, 1, 9, 4},
			flags: []string{"-causal", "-window", "2,0"}, set: func(p *refProblem) { p.causal, p.window = true, &[2]int{2, 0} }},
		{name: "two-sided window", qs: []int{6, 4}, ks: []int{8, 4}, vs: []int{8, 4},
			flags: []string{"-window", "1,2"}, set: func(p *refProblem) { p.window = &[2]int{1, 2} }},
		{name: "window unbounded left is causal", qs: []int{6, 4}, ks: []int{6, 4}, vs: []int{6, 4},
			flags: []string{"-window", "-1,0"}, set: func(p *refProblem) { p.window = &[2]int{-1, 0} }},
		{name: "softcap", qs: []int{2, 5, 8}, ks: []int{2, 6, 8}, vs: []int{2, 6, 8},
			flags: []string{"-softcap", "0.4", "-scale", "3"}, set: func(p *refProblem) { p.softcap, p.scale = 0.4, 3 }},
		{name: "alibi float64", qs: []int{4, 5, 4}, ks: []int{2, 5, 4}, vs: []int{2, 5, 4},
			alibi: &file{"<f8", []float64{0.5, 0.25, 0.125, 1}}, flags: []string{"-causal"}, set: func(p *refProblem) { p.causal = true }},
		{name: "sinks float32", qs: []int{2, 4, 4}, ks: []int{2, 6, 4}, vs: []int{2, 6, 4},
			sinks: &file{"<f4", []float64{1.5, -0.5}}},
		{name: "key lengths int32 causal", qs: []int{3, 1, 4, 4}, ks: []int{3, 1, 6, 4}, vs: []int{3, 1, 6, 4},
			kvLens: &file{"<i4", []float64{6, 3, 0}}, flags: []string{"-causal"}, set: func(p *refProblem) { p.causal = true },
			emptyRows: []int{8, 9, 10, 11, 4}}, // batch 2 has no key; batch 1's row 0 sits at key −1
		{name: "key lengths int64", qs: []int{2, 1, 3, 4}, ks: []int{2, 1, 5, 4}, vs: []int{2, 1, 5, 4},
			kvLens: &file{"<i8", []float64{2, 5}}},
		{name: "sinks on rows that see nothing", qs: []int{1, 2, 3, 4}, ks: []int{1, 1, 4, 4}, vs: []int{1, 1, 4, 4},
			kvLens: &file{"<i8", []float64{0}}, sinks: &file{"<f4", []float64{0.5, 2}}, emptyRows: []int{0, 1, 2, 3, 4, 5}},
		{name: "all at once", qs: []int{2, 4, 6, 8}, ks: []int{2, 2, 9, 8}, vs: []int{2, 2, 9, 5},
			alibi: &file{"<f4", []float64{0.5, 0.25, 0.125, 0.0625}}, sinks: &file{"<f8", []float64{0, 1, -1, 0.5}},
			kvLens: &file{"<i8", []float64{9, 7}}, biasShape: []int{6, 9},
			flags: []string{"-causal-offset", "1", "-window", "3,1", "-softcap", "1.5", "-scale", "0.8"},
			set:   func(p *refProblem) { p.offset, p.window, p.softcap, p.scale = off(1), &[2]int{3, 1}, 1.5, 0.8 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := refProblem{qs: tc.qs, ks: tc.ks, vs: tc.vs}
			p.q, p.k, p.v = randVals(r, prod(tc.qs)), randVals(r, prod(tc.ks)), randVals(r, prod(tc.vs))
			args := []string{"run", "-backend", "cpu"}
			for _, in := range []struct {
				flag  string
				shape []int
				vals  []float64
			}{{"-q", tc.qs, p.q}, {"-k", tc.ks, p.k}, {"-v", tc.vs, p.v}} {
				args = append(args, in.flag, writeTestNpy(t, filepath.Join(dir, in.flag[1:]+".npy"), "<f8", in.shape, in.vals))
			}
			plain := p
			if tc.biasShape != nil {
				p.biasShape, p.bias = tc.biasShape, randVals(r, prod(tc.biasShape))
				plain.biasShape, plain.bias = p.biasShape, p.bias
				args = append(args, "-bias", writeTestNpy(t, filepath.Join(dir, "bias.npy"), "<f8", tc.biasShape, p.bias))
			}
			if f := tc.alibi; f != nil {
				p.alibi = f.vals
				args = append(args, "-alibi", writeTestNpy(t, filepath.Join(dir, "alibi.npy"), f.descr, []int{len(f.vals)}, f.vals))
			}
			if f := tc.sinks; f != nil {
				p.sinks = f.vals
				args = append(args, "-sinks", writeTestNpy(t, filepath.Join(dir, "sinks.npy"), f.descr, []int{len(f.vals)}, f.vals))
			}
			if f := tc.kvLens; f != nil {
				for _, n := range f.vals {
					p.kvLens = append(p.kvLens, int(n))
				}
				args = append(args, "-kv-lens", writeTestNpy(t, filepath.Join(dir, "lens.npy"), f.descr, []int{len(f.vals)}, f.vals))
			}
			if tc.set != nil {
				tc.set(&p)
			}
			args = append(args, tc.flags...)
			wantO, wantW, wantL, wantS := referenceScores(p)
			plainO, _, plainL, _ := referenceScores(plain)
			if maxDiff(wantO, plainO)+maxDiff(wantL, plainL) < 1e-3 {
				t.Fatalf("the case's variants do not change the reference's answer: it tests nothing")
			}
			b, h, nq, _ := dims4(tc.qs)
			for _, row := range tc.emptyRows {
				want := math.Inf(-1)
				if p.sinks != nil {
					want = p.sinks[row/nq%h]
				}
				if wantL[row] != want {
					t.Fatalf("reference: row %d has LSE %v, want %v (it sees no key)", row, wantL[row], want)
				}
			}
			_, _, nk, _ := dims4(tc.ks)
			full := []int{b, h, nq, nk}
			before := snapshot(t, dir)

			for _, stage := range []backend.ScoreStage{backend.StageRaw, backend.StageCapped, backend.StageBiased, backend.StageMasked} {
				out := filepath.Join(dir, "out-"+stage.String())
				if err := os.Mkdir(out, 0o755); err != nil {
					t.Fatal(err)
				}
				o, w, l, s := filepath.Join(out, "o.npy"), filepath.Join(out, "w.npy"), filepath.Join(out, "l.npy"), filepath.Join(out, "s.npy")
				a := append(slices.Clone(args), "-o", o, "-weights", w, "-lse", l, "-scores", s)
				if stage != backend.StageBiased {
					a = append(a, "-scores-stage", stage.String())
				}
				code, stdout, stderr := runCmd(t, a...)
				if code != 0 {
					t.Fatalf("%s: exit %d\nstderr: %s", stage, code, stderr)
				}
				if !strings.Contains(stdout, "wrote "+s+": float32 "+shapeTuple(full[4-len(tc.qs):])+" (cpu, staged, "+stage.String()+" scores)") {
					t.Errorf("stdout %q does not report the %s scores", stdout, stage)
				}
				_, got := readOutput(t, o)
				checkClose(t, "O", got, wantO)
				_, got = readOutput(t, l)
				checkClose(t, "LSE", got, wantL)
				_, got = readOutput(t, w)
				checkClose(t, "weights", got, wantW)
				shape, got := readOutput(t, s)
				if !slices.Equal(shape, full[4-len(tc.qs):]) {
					t.Errorf("%s scores of shape %v, want %v", stage, shape, full[4-len(tc.qs):])
				}
				checkClose(t, stage.String()+" scores", got, wantS[stage])
				noTemps(t, out)
			}

			o, l := filepath.Join(dir, "fo.npy"), filepath.Join(dir, "fl.npy")
			code, _, stderr := runCmd(t, append(slices.Clone(args), "-strategy", "fused", "-o", o, "-lse", l)...)
			if code != 0 {
				t.Fatalf("fused: exit %d\nstderr: %s", code, stderr)
			}
			_, got := readOutput(t, o)
			checkClose(t, "fused O", got, wantO)
			_, got = readOutput(t, l)
			checkClose(t, "fused LSE", got, wantL)

			after := snapshot(t, dir)
			for name, data := range before {
				if !bytes.Equal(after[name], data) {
					t.Errorf("input %s was modified", name)
				}
			}
		})
	}
}

// maxDiff is the largest |a − b|, infinities of one sign equal and of
// differing signs (or one finite) counting as 1.
func maxDiff(a, b []float64) float64 {
	d := 0.0
	for i := range a {
		switch {
		case a[i] == b[i]:
		case math.IsInf(a[i], 0) || math.IsInf(b[i], 0):
			d = max(d, 1)
		default:
			d = max(d, math.Abs(a[i]-b[i]))
		}
	}
	return d
}

// Every bad variant input is refused with a message naming the value,
// the sizes and the file, exit status 2 for a bad flag value and 1 for a
// bad file, and nothing written: an existing output is left as it was,
// and no temporary file remains.
func TestRunVariantBadInputs(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	// B = 2, H = 2 (one KV head), Nq = 3, Nk = 5.
	q := writeTestNpy(t, path("q.npy"), "<f4", []int{2, 2, 3, 4}, seq(48))
	k := writeTestNpy(t, path("k.npy"), "<f4", []int{2, 1, 5, 4}, seq(40))
	vec := func(name, descr string, vals ...float64) string {
		return writeTestNpy(t, path(name), descr, []int{len(vals)}, vals)
	}
	out := path("out.npy")
	old := []byte("the old output")
	writeFile(t, out, old)
	base := func(extra ...string) []string {
		return append([]string{"run", "-backend", "cpu", "-q", q, "-k", k, "-v", k, "-o", out}, extra...)
	}
	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"window side below -1", base("-window", "-2,0"), 2, []string{"-window", "window (-2, 0): each side must be ≥ 0, or −1"}},
		{"window one number", base("-window", "3"), 2, []string{`"3" is not L,R`}},
		{"window not numbers", base("-window", "a,b"), 2, []string{`"a,b" is not L,R`}},
		{"window beyond 2^40", base("-window", "2000000000000,0"), 2, []string{"window (2000000000000, 0)", "beyond 2⁴⁰"}},
		{"softcap 0", base("-softcap", "0"), 2, []string{"softcap 0 caps nothing"}},
		{"softcap negative", base("-softcap", "-1.5"), 2, []string{"softcap -1.5 must be finite and > 0"}},
		{"softcap NaN", base("-softcap", "NaN"), 2, []string{"softcap NaN must be finite"}},
		{"softcap Inf", base("-softcap", "Inf"), 2, []string{"softcap +Inf must be finite"}},
		{"softcap past float32", base("-softcap", "1e39"), 2, []string{"softcap +Inf must be finite"}},
		{"softcap not a number", base("-softcap", "x"), 2, []string{`"x" is not a number`}},
		{"causal offset not an integer", base("-causal-offset", "1.5"), 2, []string{`"1.5" is not an integer`}},
		{"causal offset beyond 2^40", base("-causal-offset", "-2000000000000"), 2, []string{"causal offset -2000000000000 is beyond ±2⁴⁰"}},
		{"unknown stage", base("-scores", path("s.npy"), "-scores-stage", "softmaxed"), 2, []string{`unknown score stage "softmaxed"`, "raw, capped, biased or masked"}},
		{"stage without scores", base("-scores-stage", "raw"), 2, []string{"-scores-stage picks the stage of the -scores output; give -scores too"}},
		{"scores fused", base("-scores", path("s.npy"), "-strategy", "fused"), 2, []string{"-scores needs the staged strategy"}},
		{"scores overwrites alibi", base("-alibi", vec("a.npy", "<f4", 1, 2), "-scores", path("a.npy")), 2, []string{"-scores " + path("a.npy") + " would overwrite the input -alibi"}},
		{"output overwrites key lengths", base("-kv-lens", vec("kl.npy", "<i4", 1, 2), "-lse", path("kl.npy")), 2, []string{"would overwrite the input -kv-lens"}},
		{"alibi too few", base("-alibi", vec("a1.npy", "<f4", 0.5)), 1, []string{"-alibi " + path("a1.npy") + ": ", "ALiBi slopes: 1 values for H=2 query heads"}},
		{"alibi too many", base("-alibi", vec("a3.npy", "<f8", 0.5, 0.25, 1)), 1, []string{"a3.npy: ", "ALiBi slopes: 3 values for H=2"}},
		{"alibi NaN", base("-alibi", vec("anan.npy", "<f4", 0.5, math.NaN())), 1, []string{"-alibi " + path("anan.npy") + ": ", "ALiBi slopes: head 1 is NaN, want finite"}},
		{"alibi past float32", base("-alibi", vec("abig.npy", "<f8", 1e39, 0.5)), 1, []string{"abig.npy: ", "ALiBi slopes: head 0 is +Inf, want finite"}},
		{"alibi int", base("-alibi", vec("ai.npy", "<i4", 1, 2)), 1, []string{"-alibi " + path("ai.npy") + ": dtype int32 (<i4); want a vector of H float32 or float64"}},
		{"alibi matrix", base("-alibi", writeTestNpy(t, path("a22.npy"), "<f4", []int{1, 2}, []float64{1, 2})), 1, []string{"-alibi " + path("a22.npy") + " has shape (1, 2); want a vector of H"}},
		{"sinks too many", base("-sinks", vec("s3.npy", "<f4", 0, 0, 0)), 1, []string{"-sinks " + path("s3.npy") + ": ", "sinks: 3 values for H=2 query heads"}},
		{"sinks -Inf", base("-sinks", vec("sinf.npy", "<f8", math.Inf(-1), 0)), 1, []string{"sinf.npy: ", "sinks: head 0 is -Inf, want finite"}},
		{"key length negative", base("-kv-lens", vec("kneg.npy", "<i8", 5, -1)), 1, []string{"-kv-lens " + path("kneg.npy") + ": ", "key lengths: batch 1 has -1, want 0 … Nk=5"}},
		{"key length past Nk", base("-kv-lens", vec("kbig.npy", "<i4", 6, 5)), 1, []string{"kbig.npy: ", "key lengths: batch 0 has 6, want 0 … Nk=5"}},
		{"key lengths wrong count", base("-kv-lens", vec("k3.npy", "<i4", 1, 2, 3)), 1, []string{"k3.npy: ", "key lengths: 3 values for B=2 batches"}},
		{"key lengths float", base("-kv-lens", vec("kf.npy", "<f4", 1, 2)), 1, []string{"-kv-lens " + path("kf.npy") + ": dtype float32 (<f4); want a vector of B int32 or int64"}},
		{"key lengths uint8", base("-kv-lens", vec("ku.npy", "|u1", 1, 2)), 1, []string{"dtype uint8 (|u1)"}},
		{"key lengths missing", base("-kv-lens", path("nope.npy")), 1, []string{"nope.npy", "no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\nstderr: %s", code, tc.code, stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q\ndoes not contain %q", stderr, w)
				}
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if b, _ := os.ReadFile(out); !bytes.Equal(b, old) {
				t.Errorf("a failed run changed %s", out)
			}
			if _, err := os.Stat(path("s.npy")); err == nil {
				t.Errorf("a failed run wrote the scores")
			}
		})
	}
	noTemps(t, dir)
}
