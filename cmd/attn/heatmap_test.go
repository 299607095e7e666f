package main

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cmd/attn/internal/heatmap"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
)

// decodePNG reads an image the command wrote and checks it is a PNG of
// a plausible size.
func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if s := img.Bounds().Size(); s.X < 200 || s.Y < 100 {
		t.Fatalf("%s is only %v pixels", path, s)
	}
	return img
}

// printedWeights reads the nq × nk table of weights attn heatmap prints:
// the last nk numbers of the nq lines after the heading.
func printedWeights(t *testing.T, stdout string, nq, nk int) []float64 {
	t.Helper()
	lines := strings.Split(stdout, "\n")
	i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "weights, one row per query") })
	if i < 0 || len(lines) < i+2+nq {
		t.Fatalf("no table of weights in\n%s", stdout)
	}
	var w []float64
	for _, l := range lines[i+2 : i+2+nq] {
		f := strings.Fields(l)
		if len(f) < nk {
			t.Fatalf("row %q has fewer than %d weights", l, nk)
		}
		for _, s := range f[len(f)-nk:] {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("row %q: %v", l, err)
			}
			w = append(w, v)
		}
	}
	return w
}

func checkPrinted(t *testing.T, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d weights printed, want %d", len(got), len(want))
	}
	for i := range want {
		if backendtest.Exceeds(math.Abs(got[i]-want[i]), 2e-6) {
			t.Fatalf("weight %d printed as %v, want %.6f", i, got[i], want[i])
		}
	}
}

// TestHeatmapTutorial draws the default picture, the tutorial's example,
// and checks it prints the weights explain shows in its step 6.
func TestHeatmapTutorial(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "tutorial.png")
	code, stdout, stderr := runCmd(t, "heatmap", "-backend", "cpu", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"weights, one row per query (backend cpu, scale 1):\n",
		"          input 1   input 2   input 3\n",
		"input 1  0.063379  0.468311  0.468311\n",
		"input 2  0.000006  0.982008  0.017986\n",
		"input 3  0.000295  0.880537  0.119168\n",
		"wrote " + out + ": 3×3 weights (cpu)\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	decodePNG(t, out)
	noTemps(t, dir)

	// The weights are explain's, to the digits printed.
	be, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	in := &explainInputs{x: matrix(tutorialX), wq: matrix(tutorialWQ), wk: matrix(tutorialWK), wv: matrix(tutorialWV), scale: 1}
	ex, err := computeExplain(context.Background(), be, in)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, len(ex.weights.Data))
	for i, v := range ex.weights.Data {
		want[i] = float64(v)
	}
	checkPrinted(t, printedWeights(t, stdout, 3, 3), want)
}

// TestHeatmapQK draws one head of rank-2, -3 and -4 queries and keys in
// both layouts, with grouped-query heads, and checks the printed weights
// against the float64 reference.
func TestHeatmapQK(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name   string
		qs, ks []int // BHND
		head   [2]int
		flags  []string
		scale  float64
		causal bool
	}{
		{name: "rank2", qs: []int{4, 8}, ks: []int{6, 8}},
		{name: "rank2 scale 0 is 1/√D", qs: []int{4, 8}, ks: []int{6, 8}, flags: []string{"-scale", "0"}},
		{name: "rank2 causal scale", qs: []int{5, 3}, ks: []int{5, 3}, flags: []string{"-causal", "-scale", "0.7"}, scale: 0.7, causal: true},
		{name: "rank3 head 2", qs: []int{3, 4, 5}, ks: []int{3, 4, 5}, head: [2]int{0, 2}, flags: []string{"-head", "2"}},
		{name: "rank4 gqa", qs: []int{2, 4, 3, 4}, ks: []int{2, 2, 7, 4}, head: [2]int{1, 3}, flags: []string{"-head", "1,3"}},
		{name: "rank4 bnhd mqa causal", qs: []int{2, 2, 6, 4}, ks: []int{2, 1, 9, 4}, head: [2]int{1, 1}, flags: []string{"-head", "1,1", "-layout", "bnhd", "-causal"}, causal: true},
		{name: "rank3 bnhd", qs: []int{3, 2, 4}, ks: []int{3, 2, 4}, head: [2]int{0, 1}, flags: []string{"-head", "0,1", "-layout", "bnhd"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := refProblem{qs: tc.qs, ks: tc.ks, vs: tc.ks, scale: tc.scale, causal: tc.causal}
			p.q, p.k = randVals(r, prod(tc.qs)), randVals(r, prod(tc.ks))
			p.v = p.k
			bnhd := slices.Contains(tc.flags, "bnhd")
			file := func(name string, shape []int, vals []float64) string {
				if bnhd {
					shape, vals = toBNHD(shape, vals)
				}
				return writeTestNpy(t, filepath.Join(dir, name), "<f4", shape, vals)
			}
			q, k := file("q.npy", tc.qs, p.q), file("k.npy", tc.ks, p.k)
			out := filepath.Join(dir, "w.svg")
			args := append([]string{"heatmap", "-backend", "cpu", "-q", q, "-k", k, "-o", out}, tc.flags...)
			code, stdout, stderr := runCmd(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			_, w, _ := reference(p)
			_, h, nq, _ := dims4(tc.qs)
			_, _, nk, _ := dims4(tc.ks)
			off := (tc.head[0]*h + tc.head[1]) * nq * nk
			checkPrinted(t, printedWeights(t, stdout, nq, nk), w[off:off+nq*nk])
			svg, err := os.ReadFile(out)
			if err != nil || !bytes.HasPrefix(svg, []byte("<?xml")) || !bytes.Contains(svg, []byte("<svg")) {
				t.Errorf("%s is not an SVG (%v): %.40q", out, err, svg)
			}
		})
	}
}

// toBNHD reorders a BHND tensor of rank 3 or 4 to BNHD.
func toBNHD(shape []int, vals []float64) ([]int, []float64) {
	if len(shape) < 3 {
		return shape, vals
	}
	b, h, n, d := dims4(shape)
	out := make([]float64, len(vals))
	for bi := range b {
		for hi := range h {
			for i := range n {
				copy(out[((bi*n+i)*h+hi)*d:][:d], vals[((bi*h+hi)*n+i)*d:][:d])
			}
		}
	}
	if len(shape) == 3 {
		return []int{n, h, d}, out
	}
	return []int{b, n, h, d}, out
}

// TestHeatmapX computes queries and keys from -x, -wq and -wk as explain
// does, with the labels given.
func TestHeatmapX(t *testing.T) {
	dir := t.TempDir()
	x := writeTestNpy(t, filepath.Join(dir, "x.npy"), "<f8", []int{2, 2}, []float64{1, 0, 0, 1})
	id := writeTestNpy(t, filepath.Join(dir, "id.npy"), "<f4", []int{2, 2}, []float64{1, 0, 0, 1})
	out := filepath.Join(dir, "x.png")
	code, stdout, stderr := runCmd(t, "heatmap", "-backend", "cpu", "-x", x, "-wq", id, "-wk", id, "-scale", "2", "-labels", "cat, sat", "-title", "two tokens", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"          cat       sat\n",
		"cat  0.880797  0.119203\n",
		"sat  0.119203  0.880797\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	decodePNG(t, out)

	// Only W_k replaced: x and W_q stay the tutorial's, the labels
	// explain's.
	wk := writeTestNpy(t, filepath.Join(dir, "wk.npy"), "<f4", []int{4, 3}, make([]float64, 12))
	code, stdout, stderr = runCmd(t, "heatmap", "-backend", "cpu", "-wk", wk, "-o", out, "-annotate", "off")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	third := strings.Repeat("  0.333333", 3)
	if !strings.Contains(stdout, "input 3"+third+"\n") {
		t.Errorf("zero keys should give uniform weights:\n%s", stdout)
	}
}

// TestHeatmapLarge draws 100 queries without printing them, and refuses
// more than 512 queries or keys before computing anything.
func TestHeatmapLarge(t *testing.T) {
	dir := t.TempDir()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{100, 4}, seq(400))
	out := filepath.Join(dir, "big.png")
	code, stdout, stderr := runCmd(t, "heatmap", "-backend", "cpu", "-q", q, "-k", q, "-causal", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "weights, one row") || stdout != "wrote "+out+": 100×100 weights (cpu)\n" {
		t.Errorf("stdout %q: want only the file written", stdout)
	}
	decodePNG(t, out)

	big := writeTestNpy(t, filepath.Join(dir, "big.npy"), "<f4", []int{1, 513, 2}, make([]float64, 1026))
	small := writeTestNpy(t, filepath.Join(dir, "small.npy"), "<f4", []int{1, 8, 2}, make([]float64, 16))
	x := writeTestNpy(t, filepath.Join(dir, "x.npy"), "<f4", []int{600, 4}, make([]float64, 2400))
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"-q", big, "-k", small}, []string{"Nq=513", "Nk=8", "512×512", "slice"}},
		{[]string{"-q", small, "-k", big}, []string{"Nq=8", "Nk=513"}},
		{[]string{"-x", x}, []string{"600 inputs", "512×512", "slice"}},
	} {
		never := filepath.Join(dir, "never.png")
		args := append([]string{"heatmap", "-backend", "cpu", "-o", never}, tc.args...)
		code, stdout, stderr := runCmd(t, args...)
		if code != 1 || stdout != "" || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "attn heatmap: ") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit 1 and one line", tc.args, code, stdout, stderr)
		}
		for _, s := range tc.want {
			if !strings.Contains(stderr, s) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, stderr, s)
			}
		}
		if _, err := os.Stat(never); err == nil {
			t.Errorf("%v: %s written despite the error", tc.args, never)
		}
	}
	noTemps(t, dir)
}

// TestHeatmapErrors checks usage errors (exit 2) and data errors (exit
// 1), and that a failed run leaves an existing output as it was.
func TestHeatmapErrors(t *testing.T) {
	dir := t.TempDir()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{2, 3, 4}, seq(24))
	k4 := writeTestNpy(t, filepath.Join(dir, "k4.npy"), "<f4", []int{5, 4}, seq(20))
	k2 := writeTestNpy(t, filepath.Join(dir, "k2.npy"), "<f4", []int{5, 2}, seq(10))
	vec := writeTestNpy(t, filepath.Join(dir, "vec.npy"), "<f4", []int{4}, seq(4))
	qpng := writeTestNpy(t, filepath.Join(dir, "q.png"), "<f4", []int{3, 4}, seq(12)) // a .npy by any other name
	out := writeFile(t, filepath.Join(dir, "old.png"), []byte("old"))
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"q alone", []string{"-q", q}, 2, "-q and -k go together"},
		{"q and x", []string{"-q", q, "-k", q, "-x", q}, 2, "use one or the other"},
		{"head without q", []string{"-head", "1,1"}, 2, "-head picks a head of -q and -k"},
		{"layout without q", []string{"-layout", "bnhd"}, 2, "-layout orders"},
		{"labels twice", []string{"-labels", "a,b,c", "-klabels", "x,y,z"}, 2, "use it or -qlabels/-klabels"},
		{"bad head", []string{"-q", q, "-k", q, "-head", "a,b"}, 2, "want b,h"},
		{"three head", []string{"-q", q, "-k", q, "-head", "0,1,2"}, 2, "want b,h"},
		{"negative head", []string{"-q", q, "-k", q, "-head", "-1"}, 2, "want b,h"},
		{"bad layout", []string{"-q", q, "-k", q, "-layout", "nhd"}, 2, "want bhnd or bnhd"},
		{"negative max", []string{"-max", "-1"}, 2, "want a finite weight above 0"},
		{"annotate", []string{"-annotate", "maybe"}, 2, "want auto, on or off"},
		{"gif", []string{"-o", filepath.Join(dir, "w.gif")}, 2, `"gif" is not one of png`},
		{"no extension", []string{"-o", filepath.Join(dir, "w")}, 2, "has no extension"},
		{"empty o", []string{"-o", ""}, 2, "-o needs a file name"},
		{"overwrite input", []string{"-q", q, "-k", qpng, "-o", qpng}, 2, "-o " + qpng + " would overwrite the input -k"},
		{"backend", []string{"-backend", "abacus"}, 2, `unknown backend "abacus"`},
		{"positional", []string{"x.npy"}, 2, `unexpected argument "x.npy"`},
		{"unknown flag", []string{"-v", q}, 2, "flag provided but not defined: -v"},

		{"head out of range", []string{"-q", q, "-k", q, "-head", "0,2", "-o", out}, 1, "head 0,2 is not in " + q + " of shape (2, 3, 4): it has B=1 and H=2"},
		{"rank mismatch", []string{"-q", q, "-k", k4, "-o", out}, 1, "must have one rank"},
		{"rank 1", []string{"-q", vec, "-k", vec, "-o", out}, 1, "has rank 1"},
		{"head dims", []string{"-q", k4, "-k", k2, "-o", out}, 1, "head dims differ"},
		{"labels count", []string{"-labels", "a,b", "-o", out}, 1, "-labels has 2 names but there are 3 queries"},
		{"klabels count", []string{"-qlabels", "a,b,c", "-klabels", "x", "-o", out}, 1, "-klabels has 1 names but there are 3 keys"},
		{"labels nq != nk", []string{"-q", k4, "-k", writeTestNpy(t, filepath.Join(dir, "k3.npy"), "<f4", []int{3, 4}, seq(12)), "-labels", "a,b,c,d,e", "-o", out}, 1, "5 queries and 3 keys"},
		{"missing file", []string{"-x", filepath.Join(dir, "nope.npy"), "-o", out}, 1, "no such file"},
		{"x widths", []string{"-wq", k2, "-o", out}, 1, "k2.npy is (5, 2) but x has 4 features per input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"heatmap", "-backend", "cpu"}, tc.args...)
			if tc.code == 2 && !slices.Contains(tc.args, "-o") {
				args = append(args, "-o", filepath.Join(dir, "never.png"))
				if tc.name == "gif" || tc.name == "no extension" || tc.name == "empty o" || tc.name == "overwrite input" {
					args = args[:len(args)-2]
				}
			}
			code, stdout, stderr := runCmd(t, args...)
			if code != tc.code || stdout != "" || !strings.HasPrefix(stderr, "attn heatmap: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout, stderr, tc.code, tc.want)
			}
			if tc.code == 1 && strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q is not one line", stderr)
			}
			if tc.code == 2 && (strings.Count(stderr, "\n") != 2 || !strings.HasSuffix(stderr, "Run \"attn heatmap -h\" for its usage.\n")) {
				t.Errorf("stderr %q is not the problem's line, then the hint to run -h", stderr)
			}
		})
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "old" {
		t.Errorf("a failed run changed %s: %q, %v", out, b, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "never.png")); err == nil {
		t.Error("never.png written by a failed run")
	}
	noTemps(t, dir)

	// A good run replaces the old file.
	if code, _, stderr := runCmd(t, "heatmap", "-backend", "cpu", "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	decodePNG(t, out)
	noTemps(t, dir)
}

// TestRunHeatmap draws one head from attn run and checks it is the
// picture of that head's weights, as written by -weights, and the
// refusals of -heatmap.
func TestRunHeatmap(t *testing.T) {
	dir := t.TempDir()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{2, 3, 4, 5}, seq(120))
	k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", []int{2, 3, 6, 5}, randVals(rand.New(rand.NewPCG(5, 6)), 180))
	o, w, img := filepath.Join(dir, "o.npy"), filepath.Join(dir, "w.npy"), filepath.Join(dir, "p.png")
	code, stdout, stderr := runCmd(t, "run", "-backend", "cpu", "-q", q, "-k", k, "-v", k, "-o", o, "-weights", w, "-heatmap", img, "-heatmap-head", "1,2", "-causal")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "wrote "+img+": the 4×6 weights of head 1,2 (cpu, staged)\n") {
		t.Errorf("stdout %q does not report the heatmap", stdout)
	}
	got, err := os.ReadFile(img)
	if err != nil {
		t.Fatal(err)
	}
	_, all := readOutput(t, w)
	off := (1*3 + 2) * 4 * 6
	var want bytes.Buffer
	if err := heatmap.Write(&want, "png", 4, 6, all[off:off+24], &heatmap.Options{Title: "Attention weights: q.npy · k.npy, head 1,2, causal"}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Error("the heatmap is not the picture of head 1,2 of the weights")
	}
	noTemps(t, dir)

	// Without -weights the weights are still computed for the picture,
	// and auto runs staged for them.
	code, stdout, stderr = runCmd(t, "run", "-backend", "cpu", "-q", q, "-k", k, "-v", k, "-o", o, "-heatmap", filepath.Join(dir, "p.pdf"))
	if code != 0 || !strings.Contains(stdout, "p.pdf: the 4×6 weights of head 0,0 (cpu, staged)") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	big := writeTestNpy(t, filepath.Join(dir, "big.npy"), "<f4", []int{600, 2}, make([]float64, 1200))
	small := writeTestNpy(t, filepath.Join(dir, "small.npy"), "<f4", []int{3, 2}, make([]float64, 6))
	fresh := filepath.Join(dir, "fresh.npy")
	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"fused", []string{"-q", q, "-k", k, "-v", k, "-o", fresh, "-heatmap", img, "-strategy", "fused"}, 2, "-heatmap draws the weights, which need the staged strategy"},
		{"head alone", []string{"-q", q, "-k", k, "-v", k, "-o", fresh, "-heatmap-head", "0,1"}, 2, "give -heatmap too"},
		{"bad head", []string{"-q", q, "-k", k, "-v", k, "-o", fresh, "-heatmap", img, "-heatmap-head", "x"}, 2, "want b,h"},
		{"format", []string{"-q", q, "-k", k, "-v", k, "-o", fresh, "-heatmap", filepath.Join(dir, "p.bmp")}, 2, `"bmp" is not one of png`},
		{"same as -o", []string{"-q", q, "-k", k, "-v", k, "-o", img, "-heatmap", img}, 2, "-o and -heatmap both name"},
		{"head out of range", []string{"-q", q, "-k", k, "-v", k, "-o", fresh, "-heatmap", img, "-heatmap-head", "2,0"}, 1, "-heatmap-head: head 2,0 is not in " + q + " of shape (2, 3, 4, 5): it has B=2 and H=3"},
		{"too many queries", []string{"-q", big, "-k", small, "-v", small, "-o", fresh, "-heatmap", img}, 1, "-heatmap: Nq=600 queries and Nk=3 keys: a heatmap draws at most 512×512 weights; slice the inputs"},
		{"too many keys", []string{"-q", small, "-k", big, "-v", big, "-o", fresh, "-heatmap", img}, 1, "Nq=3 queries and Nk=600 keys"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := os.ReadFile(img)
			args := append([]string{"run", "-backend", "cpu"}, tc.args...)
			code, stdout, stderr := runCmd(t, args...)
			if code != tc.code || stdout != "" || !strings.HasPrefix(stderr, "attn run: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d and %q", code, stdout, stderr, tc.code, tc.want)
			}
			if _, err := os.Stat(fresh); err == nil {
				t.Errorf("%s written by a failed run", fresh)
			}
			if after, _ := os.ReadFile(img); !bytes.Equal(before, after) {
				t.Errorf("a failed run changed %s", img)
			}
		})
	}
	noTemps(t, dir)
}

// TestHeadMatrix checks the slicing of one head out of rank 2, 3 and 4
// tensors in both layouts against the element each layout puts there.
func TestHeadMatrix(t *testing.T) {
	for _, tc := range []struct {
		shape  []int
		layout kernels.Layout
		at     func(b, h, i, x int) []int // the index of (b, h, i, x) in shape
	}{
		{[]int{3, 2}, kernels.BHND, func(_, _, i, x int) []int { return []int{i, x} }},
		{[]int{3, 2}, kernels.BNHD, func(_, _, i, x int) []int { return []int{i, x} }},
		{[]int{4, 3, 2}, kernels.BHND, func(_, h, i, x int) []int { return []int{h, i, x} }},
		{[]int{3, 4, 2}, kernels.BNHD, func(_, h, i, x int) []int { return []int{i, h, x} }},
		{[]int{2, 4, 3, 2}, kernels.BHND, func(b, h, i, x int) []int { return []int{b, h, i, x} }},
		{[]int{2, 3, 4, 2}, kernels.BNHD, func(b, h, i, x int) []int { return []int{b, i, h, x} }},
	} {
		data := make([]float32, prod(tc.shape))
		for i := range data {
			data[i] = float32(i)
		}
		nb, nh, n, d := operand.Dims(tc.shape, tc.layout)
		for b := range nb {
			for h := range nh {
				m := headMatrix(data, tc.shape, tc.layout, b, h)
				if !slices.Equal(m.Shape, []int{n, d}) {
					t.Fatalf("%v %v: head is %v, want [%d %d]", tc.shape, tc.layout, m.Shape, n, d)
				}
				for i := range n {
					for x := range d {
						idx := tc.at(b, h, i, x)
						off := 0
						for a, s := range tc.shape {
							off = off*s + idx[a]
						}
						if got := m.Data[i*d+x]; got != data[off] {
							t.Fatalf("%v %v head %d,%d: [%d, %d] = %v, want %v", tc.shape, tc.layout, b, h, i, x, got, data[off])
						}
					}
				}
			}
		}
	}
}

func TestParseHead(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want [2]int
		ok   bool
	}{
		{"0,0", [2]int{0, 0}, true}, {"1,3", [2]int{1, 3}, true}, {" 2 , 5 ", [2]int{2, 5}, true}, {"4", [2]int{0, 4}, true},
		{"", [2]int{}, false}, {"1,", [2]int{}, false}, {"a", [2]int{}, false}, {"-1,0", [2]int{}, false}, {"1,2,3", [2]int{}, false},
	} {
		got, err := parseHead(tc.in)
		if (err == nil) != tc.ok || (tc.ok && got != tc.want) {
			t.Errorf("parseHead(%q) = %v, %v; want %v, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}
