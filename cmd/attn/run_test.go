package main

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
	"github.com/sbinet/npyio"
)

// refProblem is an attn run call for the float64 reference, every tensor
// in C order with the shapes the command reads in BHND.
type refProblem struct {
	q, k, v    []float64
	qs, ks, vs []int
	bias       []float64
	biasShape  []int
	keep       []float64 // nonzero keeps
	keepShape  []int
	scale      float64 // 0: 1/√D
	causal     bool
	// The variants, as backend.Variants defines them; zero values are
	// none.
	offset  *int      // causal offset; implies causal
	window  *[2]int   // left, right; −1 unbounded
	softcap float64   // 0: none
	alibi   []float64 // [H]
	sinks   []float64 // [H]
	kvLens  []int     // [B]
}

// dims4 reads a rank-2, 3 or 4 shape as B, H, N, D.
func dims4(s []int) (b, h, n, d int) {
	return operand.Dims(s, kernels.BHND)
}

// testCase is p as backendtest's Case, every value as the float32 attn
// run reads it.
func (p refProblem) testCase() backendtest.Case {
	b, h, nq, d := dims4(p.qs)
	_, hkv, nk, _ := dims4(p.ks)
	_, _, _, dv := dims4(p.vs)
	prob := backend.Problem{B: b, H: h, KVHeads: hkv, Nq: nq, Nk: nk, D: d, Dv: dv,
		Scale: float32(p.scale), Causal: p.causal,
		Variants: backend.Variants{CausalOffset: p.offset, Softcap: float32(p.softcap),
			ALiBi: float32s(p.alibi), Sinks: float32s(p.sinks), KVLens: p.kvLens}}
	if p.window != nil {
		prob.Window = &backend.Window{Left: p.window[0], Right: p.window[1]}
	}
	c := backendtest.Case{Problem: prob, Q: float32s(p.q), K: float32s(p.k), V: float32s(p.v)}
	mask := func(shape []int, data []float64) *backendtest.HostMask {
		m := &backendtest.HostMask{Shape: [4]int{1, 1, 1, 1}, Data: float32s(data)}
		copy(m.Shape[4-len(shape):], shape)
		return m
	}
	if p.bias != nil {
		c.Bias = mask(p.biasShape, p.bias)
	}
	if p.keep != nil {
		c.Keep = mask(p.keepShape, p.keep)
	}
	return c
}

// float32s rounds x to float32; nil stays nil.
func float32s(x []float64) []float32 {
	if x == nil {
		return nil
	}
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// reference is backendtest.Reference on p: the output (the query's shape
// with last dim Dv), the weights [B, H, Nq, Nk] and the log-sum-exp
// [B, H, Nq].
func reference(p refProblem) (o, w, lse []float64) {
	o, w, lse, _ = referenceScores(p)
	return o, w, lse
}

// referenceScores is reference with the scores [B, H, Nq, Nk] at each
// stage too, indexed by backend.ScoreStage.
func referenceScores(p refProblem) (o, w, lse []float64, scores [4][]float64) {
	want := backendtest.Reference(p.testCase())
	scores[backend.StageRaw] = want.Raw
	scores[backend.StageCapped] = want.Capped
	scores[backend.StageBiased] = want.Scores
	scores[backend.StageMasked] = want.Masked
	return want.O, want.P, want.LSE, scores
}

func randVals(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = 2*r.Float64() - 1
	}
	return v
}

func checkClose(t *testing.T, what string, got []float32, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, len(got), len(want))
	}
	for i, w := range want {
		g := float64(got[i])
		if math.IsInf(w, -1) && math.IsInf(g, -1) {
			continue
		}
		if g != w && backendtest.Exceeds(math.Abs(g-w), 1e-4*max(1, math.Abs(w))) {
			t.Fatalf("%s[%d] = %v, want %v", what, i, g, w)
		}
	}
}

func TestRunMatchesReference(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	type input struct {
		descr   string
		fortran bool
	}
	f32 := input{"<f4", false}
	for _, tc := range []struct {
		name       string
		qs, ks, vs []int
		in         input // dtype and order of q, k, v
		biasShape  []int
		keepShape  []int
		keepDescr  string
		flags      []string
		scale      float64
		causal     bool
		hideRow    bool // mask a whole query row
	}{
		{name: "rank2 causal", qs: []int{5, 4}, ks: []int{7, 4}, vs: []int{7, 3}, in: f32, causal: true, flags: []string{"-causal"}},
		{name: "rank2 scale 0 is 1/√D", qs: []int{3, 4}, ks: []int{5, 4}, vs: []int{5, 2}, in: f32, flags: []string{"-scale", "0"}},
		{name: "rank2 decode", qs: []int{1, 8}, ks: []int{9, 8}, vs: []int{9, 8}, in: f32, causal: true, flags: []string{"-causal", "-strategy", "fused"}},
		{name: "rank3 gqa bias mask float64", qs: []int{4, 6, 5}, ks: []int{2, 6, 5}, vs: []int{2, 6, 3}, in: input{"<f8", false},
			biasShape: []int{6, 6}, keepShape: []int{1, 6}, keepDescr: "|b1", scale: 0.3, flags: []string{"-scale", "0.3"}},
		{name: "rank4 mqa causal bias mask fused", qs: []int{2, 2, 5, 4}, ks: []int{2, 1, 5, 4}, vs: []int{2, 1, 5, 4}, in: f32,
			biasShape: []int{2, 1, 5, 5}, keepShape: []int{5, 5}, keepDescr: "<i8", causal: true, hideRow: true,
			flags: []string{"-causal", "-strategy", "fused"}},
		{name: "rank4 big-endian fortran staged", qs: []int{1, 4, 3, 4}, ks: []int{1, 2, 6, 4}, vs: []int{1, 2, 6, 2},
			in: input{">f8", true}, biasShape: []int{4, 1, 1}, flags: []string{"-strategy", "staged"}},
		{name: "rank4 cross attention causal", qs: []int{1, 2, 3, 4}, ks: []int{1, 2, 8, 4}, vs: []int{1, 2, 8, 4}, in: input{">f4", false},
			causal: true, flags: []string{"-causal"}},
		{name: "rank3 float16 mask", qs: []int{2, 4, 6}, ks: []int{2, 7, 6}, vs: []int{2, 7, 5}, in: f32,
			keepShape: []int{2, 4, 7}, keepDescr: "<f2", hideRow: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := refProblem{qs: tc.qs, ks: tc.ks, vs: tc.vs, scale: tc.scale, causal: tc.causal}
			p.q, p.k, p.v = randVals(r, prod(tc.qs)), randVals(r, prod(tc.ks)), randVals(r, prod(tc.vs))
			args := []string{"run", "-backend", "cpu"}
			for _, in := range []struct {
				flag  string
				shape []int
				vals  []float64
			}{{"-q", tc.qs, p.q}, {"-k", tc.ks, p.k}, {"-v", tc.vs, p.v}} {
				path := filepath.Join(dir, strings.TrimPrefix(in.flag, "-")+".npy")
				writeFile(t, path, encodeTest(tc.in.descr, tc.in.fortran, in.shape, in.vals))
				args = append(args, in.flag, path)
			}
			if tc.biasShape != nil {
				p.biasShape = tc.biasShape
				p.bias = randVals(r, prod(tc.biasShape))
				p.bias[0] = math.Inf(-1) // −Inf hides a key
				args = append(args, "-bias", writeTestNpy(t, filepath.Join(dir, "bias.npy"), "<f8", tc.biasShape, p.bias))
			}
			if tc.keepShape != nil {
				p.keepShape = tc.keepShape
				p.keep = make([]float64, prod(tc.keepShape))
				for i := range p.keep {
					if r.IntN(4) != 0 {
						p.keep[i] = 1
					}
				}
				if tc.hideRow {
					nk := tc.keepShape[len(tc.keepShape)-1]
					for j := range nk {
						p.keep[nk+j] = 0 // query row 1 sees nothing
					}
				}
				args = append(args, "-mask", writeTestNpy(t, filepath.Join(dir, "mask.npy"), tc.keepDescr, tc.keepShape, p.keep))
			}
			outDir := filepath.Join(dir, "out")
			if err := os.Mkdir(outDir, 0o755); err != nil {
				t.Fatal(err)
			}
			oPath, lPath, wPath := filepath.Join(outDir, "o.npy"), filepath.Join(outDir, "lse.npy"), filepath.Join(outDir, "w.npy")
			args = append(args, "-o", oPath, "-lse", lPath)
			staged := !slices.Contains(tc.flags, "fused")
			if staged {
				args = append(args, "-weights", wPath)
			}
			args = append(args, tc.flags...)

			before := snapshot(t, dir)
			code, stdout, stderr := runCmd(t, args...)
			if code != 0 {
				t.Fatalf("exit %d\nstderr: %s", code, stderr)
			}
			if !strings.Contains(stdout, "wrote "+oPath) {
				t.Errorf("stdout %q does not report writing %s", stdout, oPath)
			}
			wantO, wantW, wantL := reference(p)

			oShape, o := readOutput(t, oPath)
			wantOShape := slices.Clone(tc.qs)
			wantOShape[len(wantOShape)-1] = tc.vs[len(tc.vs)-1]
			if !slices.Equal(oShape, wantOShape) {
				t.Errorf("output shape %v, want %v", oShape, wantOShape)
			}
			checkClose(t, "O", o, wantO)

			b, h, nq, _ := dims4(tc.qs)
			_, _, nk, _ := dims4(tc.ks)
			full := []int{b, h, nq, nk}
			lShape, lse := readOutput(t, lPath)
			if want := full[4-len(tc.qs) : 3]; !slices.Equal(lShape, want) {
				t.Errorf("LSE shape %v, want %v", lShape, want)
			}
			checkClose(t, "LSE", lse, wantL)
			if staged {
				wShape, w := readOutput(t, wPath)
				if want := full[4-len(tc.qs):]; !slices.Equal(wShape, want) {
					t.Errorf("weights shape %v, want %v", wShape, want)
				}
				checkClose(t, "weights", w, wantW)
			}
			if tc.hideRow {
				_, _, _, dv := dims4(tc.vs)
				for x := range dv {
					if o[dv+x] != 0 {
						t.Errorf("fully masked row: O[1][%d] = %v, want 0", x, o[dv+x])
					}
				}
			}
			after := snapshot(t, dir)
			for name, data := range before {
				if !bytes.Equal(after[name], data) {
					t.Errorf("input %s was modified", name)
				}
			}
			noTemps(t, outDir)
		})
	}
}

// snapshot reads every regular file directly in dir.
func snapshot(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string][]byte{}
	for _, e := range ents {
		if e.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			m[e.Name()] = b
		}
	}
	return m
}

// TestRunReadsNpyioFiles reads inputs written by npyio itself (nested
// arrays give it the shape).
func TestRunReadsNpyioFiles(t *testing.T) {
	dir := t.TempDir()
	q := [2][3]float64{{1, 0, 1}, {0, 2, 0}}
	k := [3][3]float32{{1, 1, 0}, {0, 1, 1}, {1, 0, 0}}
	v := [3][2]float32{{1, 2}, {3, 4}, {5, 6}}
	paths := map[string]string{}
	for name, val := range map[string]any{"q": q, "k": k, "v": v} {
		paths[name] = filepath.Join(dir, name+".npy")
		f, err := os.Create(paths[name])
		if err != nil {
			t.Fatal(err)
		}
		if err := npyio.Write(f, val); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "o.npy")
	code, _, stderr := runCmd(t, "run", "-backend", "cpu", "-q", paths["q"], "-k", paths["k"], "-v", paths["v"], "-o", out, "-scale", "1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p := refProblem{qs: []int{2, 3}, ks: []int{3, 3}, vs: []int{3, 2}, scale: 1,
		q: []float64{1, 0, 1, 0, 2, 0}, k: []float64{1, 1, 0, 0, 1, 1, 1, 0, 0}, v: []float64{1, 2, 3, 4, 5, 6}}
	want, _, _ := reference(p)
	shape, got := readOutput(t, out)
	if !slices.Equal(shape, []int{2, 2}) {
		t.Errorf("shape %v, want [2 2]", shape)
	}
	checkClose(t, "O", got, want)
}

// TestRunReplacesOutputAtomically checks that an existing output is
// replaced whole on success and left alone on failure.
func TestRunReplacesOutputAtomically(t *testing.T) {
	dir := t.TempDir()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{3, 4}, seq(12))
	k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", []int{5, 4}, seq(20))
	v := writeTestNpy(t, filepath.Join(dir, "v.npy"), "<f4", []int{5, 4}, seq(20))
	bad := writeTestNpy(t, filepath.Join(dir, "bad.npy"), "<f4", []int{5, 3}, seq(15))
	out := filepath.Join(dir, "o.npy")
	old := bytes.Repeat([]byte("old output "), 1000) // longer than the new one
	writeFile(t, out, old)

	// A failed run leaves the old file as it was.
	if code, _, stderr := runCmd(t, "run", "-backend", "cpu", "-q", q, "-k", bad, "-v", v, "-o", out); code != 1 {
		t.Fatalf("mismatched K: exit %d, want 1 (%s)", code, stderr)
	}
	if b, _ := os.ReadFile(out); !bytes.Equal(b, old) {
		t.Fatal("a failed run changed the existing output")
	}

	// A failed write (to a directory that does not exist) leaves nothing.
	if code, _, stderr := runCmd(t, "run", "-backend", "cpu", "-q", q, "-k", k, "-v", v, "-o", filepath.Join(dir, "missing", "o.npy")); code != 1 {
		t.Fatalf("output in a missing directory: exit %d, want 1 (%s)", code, stderr)
	}

	// The second output fails: neither the first nor the second is written.
	if code, _, _ := runCmd(t, "run", "-backend", "cpu", "-q", q, "-k", k, "-v", v, "-o", out, "-lse", filepath.Join(dir, "missing", "l.npy")); code != 1 {
		t.Fatalf("lse in a missing directory: exit %d, want 1", code)
	}
	if b, _ := os.ReadFile(out); !bytes.Equal(b, old) {
		t.Fatal("a run whose second output failed replaced the first")
	}

	st0, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCmd(t, "run", "-backend", "cpu", "-q", q, "-k", k, "-v", v, "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	st1, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if os.SameFile(st0, st1) {
		t.Error("the output was rewritten in place, not replaced by a rename")
	}
	shape, data := readOutput(t, out)
	if !slices.Equal(shape, []int{3, 4}) || len(data) != 12 {
		t.Errorf("replaced output has shape %v and %d elements", shape, len(data))
	}
	if st1.Mode().Perm() != 0o644 {
		t.Errorf("output mode %v, want 0644", st1.Mode().Perm())
	}
	noTemps(t, dir)
}

// TestRunBadInputs runs every kind of bad input through the command and
// checks the exit status and that the message names the problem.
func TestRunBadInputs(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	f32 := func(name string, shape ...int) string {
		return writeTestNpy(t, path(name), "<f4", shape, seq(prod(shape)))
	}
	q, k, v := f32("q.npy", 4, 8), f32("k.npy", 6, 8), f32("v.npy", 6, 8)
	out := path("out.npy")
	base := func(extra ...string) []string {
		return append([]string{"run", "-backend", "cpu", "-q", q, "-k", k, "-v", v, "-o", out}, extra...)
	}
	with := func(flag, file string, extra ...string) []string {
		args := map[string]string{"-q": q, "-k": k, "-v": v}
		args[flag] = file
		return append([]string{"run", "-backend", "cpu", "-q", args["-q"], "-k", args["-k"], "-v", args["-v"], "-o", out}, extra...)
	}
	header := func(name, dict string, data int) string {
		b := npyHeader(1, dict)
		return writeFile(t, path(name), append(b, make([]byte, data)...))
	}
	nanQ := seq(32)
	nanQ[9] = math.NaN()
	infK := seq(48)
	infK[47] = math.Inf(1)
	big := seq(32)
	big[3] = 1e39
	nanMask := make([]float64, 6)
	nanMask[2] = math.NaN()
	trunc := encodeTest("<f4", false, []int{4, 8}, seq(32))
	trailing := append(encodeTest("<f4", false, []int{4, 8}, seq(32)), 0, 0, 0, 0)
	hugeHeader := []byte("\x93NUMPY\x02\x00\xff\xff\xff\x7f{'descr'")
	noNewline := []byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'}")
	disorder := npyHeader(1, "{'shape': (2, 2), 'fortran_order': False, 'descr': '<f4', }")

	for _, tc := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"missing file", with("-q", path("nope.npy")), 1, []string{"nope.npy", "no such file"}},
		{"not npy", with("-q", writeFile(t, path("text.npy"), []byte("hello, world\n"))), 1, []string{"text.npy: not a .npy file"}},
		{"rank 5", with("-q", f32("q5.npy", 1, 1, 1, 4, 8)), 1, []string{"q5.npy has rank 5", "[1 1 1 4 8]", "want 2 [N,D]"}},
		{"rank 1 q", with("-q", f32("q1.npy", 8)), 1, []string{"q1.npy has rank 1", "[8]"}},
		{"ranks differ", with("-q", f32("q3.npy", 1, 4, 8)), 1, []string{"q3.npy has rank 3 but", "k.npy has rank 2", "must have one rank"}},
		{"D differs q k", with("-k", f32("k7.npy", 6, 7)), 1, []string{"head dims differ", "q.npy has D=8", "k7.npy has D=7"}},
		{"N differs k v", with("-v", f32("v5.npy", 5, 8)), 1, []string{"key counts differ", "k.npy has N=6", "v5.npy has N=5"}},
		{"H not multiple of KV heads", []string{"run", "-backend", "cpu", "-q", f32("qh3.npy", 3, 4, 8), "-k", f32("kh2.npy", 2, 6, 8), "-v", f32("vh2.npy", 2, 6, 8), "-o", out},
			1, []string{"qh3.npy has H=3 heads, not a multiple of the 2 KV heads of", "kh2.npy"}},
		{"KV heads differ", []string{"run", "-q", f32("qh4.npy", 4, 4, 8), "-k", f32("kh2b.npy", 2, 6, 8), "-v", f32("vh1.npy", 1, 6, 8), "-o", out},
			1, []string{"KV head counts differ"}},
		{"batch differs", []string{"run", "-q", f32("qb2.npy", 2, 1, 4, 8), "-k", f32("kb1.npy", 1, 1, 6, 8), "-v", f32("vb1.npy", 1, 1, 6, 8), "-o", out},
			1, []string{"batch sizes differ"}},
		{"bias does not broadcast", base("-bias", f32("bias35.npy", 3, 5)), 1,
			[]string{"bias " + path("bias35.npy") + " of shape [3 5] does not broadcast to [B=1, H=1, Nq=4, Nk=6]", "Nq dimension is 3, want 1 or 4"}},
		{"bias rank 5", base("-bias", f32("bias5.npy", 1, 1, 1, 4, 6)), 1, []string{"bias5.npy has rank 5"}},
		{"mask does not broadcast", base("-mask", writeTestNpy(t, path("mask7.npy"), "|b1", []int{7}, make([]float64, 7))), 1,
			[]string{"mask " + path("mask7.npy") + " of shape [7] does not broadcast", "Nk dimension is 7, want 1 or 6"}},
		{"mask NaN", base("-mask", writeTestNpy(t, path("masknan.npy"), "<f8", []int{6}, nanMask)), 1, []string{"masknan.npy: element (2,) is NaN"}},
		{"mask NaN float16", base("-mask", writeTestNpy(t, path("masknan2.npy"), "<f2", []int{6}, nanMask)), 1, []string{"masknan2.npy: element (2,) is NaN"}},
		{"mask complex", base("-mask", header("maskc.npy", "{'descr': '<c8', 'fortran_order': False, 'shape': (6,), }", 48)), 1,
			[]string{"maskc.npy: dtype complex64 (<c8)"}},
		{"empty q", with("-q", f32("q0.npy", 0, 8)), 1, []string{"q0.npy is empty: shape (0, 8)"}},
		{"empty k", with("-k", f32("k0.npy", 6, 0)), 1, []string{"is empty: shape (6, 0)"}},
		{"int64 k", with("-k", writeTestNpy(t, path("k64.npy"), "<i8", []int{6, 8}, seq(48))), 1,
			[]string{"k64.npy: dtype int64 (<i8); attn reads float16, float32 or float64"}},
		{"object dtype", with("-q", header("qobj.npy", "{'descr': '|O', 'fortran_order': False, 'shape': (4, 8), }", 64)), 1,
			[]string{"qobj.npy", "|O", "not a simple numeric type"}},
		{"shape overflows int", with("-q", header("qhuge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }", 12)), 1,
			[]string{"qhuge.npy: header shape (1099511627776, 1099511627776) has more elements than fit in an int", "needs 4.0 YiB but the file holds 12 bytes of data"}},
		{"shape bigger than file", with("-q", header("qbig.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1048576, 1048576, 1024), }", 12)), 1,
			[]string{"qbig.npy: header shape (1048576, 1048576, 1024) of float32 needs 4.0 PiB but the file holds 12 bytes of data"}},
		{"negative dim", with("-q", header("qneg.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-4, 8), }", 12)), 1,
			[]string{"qneg.npy: header shape (-4, 8) has a negative dimension"}},
		{"header longer than file", with("-q", writeFile(t, path("qhdr.npy"), hugeHeader)), 1,
			[]string{"qhdr.npy: .npy header claims 2147483647 bytes but the file holds only 8"}},
		{"header without newline", with("-q", writeFile(t, path("qnl.npy"), noNewline)), 1, []string{"qnl.npy: malformed .npy header", "newline"}},
		{"header keys out of order", with("-q", writeFile(t, path("qord.npy"), disorder)), 1, []string{"qord.npy: malformed .npy header"}},
		{"unknown version", with("-q", writeFile(t, path("qv9.npy"), []byte("\x93NUMPY\x09\x00\x00\x00"))), 1, []string{"version 9.0 is not supported"}},
		{"truncated data", with("-q", writeFile(t, path("qtrunc.npy"), trunc[:len(trunc)-5])), 1,
			[]string{"qtrunc.npy: header shape (4, 8) of float32 needs 128 bytes but the file holds 123 bytes of data (truncated"}},
		{"trailing data", with("-q", writeFile(t, path("qtrail.npy"), trailing)), 1, []string{"qtrail.npy", "holds 132 bytes of data: trailing bytes"}},
		{"NaN in q", with("-q", writeTestNpy(t, path("qnan.npy"), "<f4", []int{4, 8}, nanQ)), 1,
			[]string{"qnan.npy: element (1, 1) is NaN", "-allow-nonfinite"}},
		{"Inf in k", with("-k", writeTestNpy(t, path("kinf.npy"), "<f8", []int{6, 8}, infK)), 1, []string{"kinf.npy: element (5, 7) is +Inf"}},
		{"float64 overflows float32", with("-q", writeTestNpy(t, path("qbig64.npy"), "<f8", []int{4, 8}, big)), 1,
			[]string{"qbig64.npy: element (0, 3) = 1e+39 is too large for float32", "becomes +Inf", "non-finite inputs are rejected"}},
		{"NaN in bias", base("-bias", writeTestNpy(t, path("biasnan.npy"), "<f4", []int{6}, []float64{0, 0, math.NaN(), 0, 0, 0})), 1,
			[]string{"biasnan.npy: element (2,) is NaN"}},
		{"+Inf in bias", base("-bias", writeTestNpy(t, path("biasinf.npy"), "<f4", []int{6}, []float64{0, 0, 0, math.Inf(1), 0, 0})), 1,
			[]string{"biasinf.npy: element (3,) is +Inf"}},
		{"bias int", base("-bias", writeTestNpy(t, path("biasi.npy"), "<i4", []int{6}, make([]float64, 6))), 1,
			[]string{"biasi.npy: dtype int32 (<i4); attn reads float16, float32 or float64"}},
		{"fused with weights", base("-strategy", "fused", "-weights", path("w.npy")), 2, []string{"-weights needs the staged strategy"}},
		{"unknown backend", append(base(), "-backend", "tpu"), 2, []string{`unknown backend "tpu"`, "cpu"}},
		{"unknown strategy", base("-strategy", "quick"), 2, []string{`unknown strategy "quick"`}},
		{"bad scale", base("-scale", "x"), 2, []string{"-scale"}},
		{"NaN scale", base("-scale", "NaN"), 2, []string{"scale must be finite"}},
		{"missing -o", []string{"run", "-q", q, "-k", k, "-v", v}, 2, []string{"missing required flag -o"}},
		{"missing all", []string{"run"}, 2, []string{"missing required flag -q, -k, -v, -o", `Run "attn run -h" for its usage.`}},
		{"output overwrites input", []string{"run", "-q", q, "-k", k, "-v", v, "-o", q}, 2, []string{"-o " + q + " would overwrite the input -q"}},
		{"two outputs one file", base("-lse", out), 2, []string{"-o and -lse both name"}},
		{"unknown flag", base("-frobnicate"), 2, []string{"flag provided but not defined: -frobnicate"}},
		{"positional argument", base("extra"), 2, []string{`unexpected argument "extra"`}},
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
			if _, err := os.Stat(out); err == nil {
				t.Errorf("a failed run wrote %s", out)
			}
		})
	}
	noTemps(t, dir)
}

func TestAllowNonFinite(t *testing.T) {
	dir := t.TempDir()
	qv := seq(8)
	qv[0] = math.NaN()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f8", []int{2, 4}, qv)
	k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", []int{3, 4}, seq(12))
	v := writeTestNpy(t, filepath.Join(dir, "v.npy"), "<f4", []int{3, 4}, seq(12))
	out := filepath.Join(dir, "o.npy")
	code, _, stderr := runCmd(t, "run", "-backend", "cpu", "-q", q, "-k", k, "-v", v, "-o", out, "-allow-nonfinite")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Past the check the NaN is the backend's to propagate; the other
	// query row must be untouched by it.
	p := refProblem{qs: []int{2, 4}, ks: []int{3, 4}, vs: []int{3, 4}, q: qv, k: seq(12), v: seq(12)}
	want, _, _ := reference(p)
	_, o := readOutput(t, out)
	checkClose(t, "O row 1", o[4:], want[4:])
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{nil, 2, "", "Commands:"},
		{[]string{"-h"}, 0, "run       attention", ""},
		{[]string{"-h"}, 0, "heatmap   draw", ""},
		{[]string{"help"}, 0, "explain", ""},
		{[]string{"help", "run"}, 0, "usage: attn run", ""},
		{[]string{"frob"}, 2, "", `attn: unknown command "frob"`},
		{[]string{"run", "-h"}, 0, "-allow-nonfinite", ""},
		{[]string{"explain", "-h"}, 0, "usage: attn explain", ""},
		{[]string{"heatmap", "-h"}, 0, "usage: attn heatmap", ""},
		{[]string{"help", "heatmap"}, 0, "-qlabels", ""},
		{[]string{"run", "-h"}, 0, "-heatmap-head", ""},
		{[]string{"run", "-h"}, 0, "-causal-offset N", ""},
		{[]string{"run", "-h"}, 0, "-window L,R", ""},
		{[]string{"run", "-h"}, 0, "-softcap C", ""},
		{[]string{"run", "-h"}, 0, "-alibi SLOPES.npy", ""},
		{[]string{"run", "-h"}, 0, "-sinks S.npy", ""},
		{[]string{"run", "-h"}, 0, "-kv-lens L.npy", ""},
		{[]string{"run", "-h"}, 0, "-scores S.npy", ""},
		{[]string{"run", "-h"}, 0, "-scores-stage stage", ""},
		{[]string{"bench", "-h"}, 0, "-window L,R", ""},
		{[]string{"bench", "-h"}, 0, "-softcap C", ""},
		{[]string{"bench", "-h"}, 0, "  -alibi\n", ""},
		{[]string{"bench", "-h"}, 0, "  -sinks\n", ""},
		{[]string{"devices", "-h"}, 0, "usage: attn devices", ""},
		{[]string{"devices", "-x"}, 2, "", "attn devices: flag provided but not defined: -x"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, stdout, stderr := runCmd(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if !strings.Contains(stdout, tc.stdout) || (tc.stdout == "" && stdout != "") {
				t.Errorf("stdout %q, want it to contain %q", stdout, tc.stdout)
			}
			if !strings.Contains(stderr, tc.stderr) || (tc.stderr == "" && stderr != "") {
				t.Errorf("stderr %q, want it to contain %q", stderr, tc.stderr)
			}
		})
	}
}

func TestSizeString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{{"0", "0 bytes"}, {"1", "1 byte"}, {"1023", "1023 bytes"}, {"1536", "1.5 KiB"}, {"4503599627370496", "4.0 PiB"}} {
		n, _ := new(big.Int).SetString(tc.in, 10)
		if got := sizeString(n); got != tc.want {
			t.Errorf("sizeString(%s) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestRunFallback checks that "auto" says on stderr why it skipped a
// backend, and that asking for the weights makes auto run staged.
func TestRunFallback(t *testing.T) {
	t.Setenv(backend.EnvBackend, "")
	dir := t.TempDir()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{3, 4}, seq(12))
	k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", []int{5, 4}, seq(20))
	out, w := filepath.Join(dir, "o.npy"), filepath.Join(dir, "w.npy")
	code, stdout, stderr := runCmd(t, "run", "-q", q, "-k", k, "-v", k, "-o", out, "-weights", w)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "staged)") {
		t.Errorf("stdout %q: -weights under auto should run staged", stdout)
	}
	var skipped []string
	be, tried, err := backend.Select("auto")
	if err != nil {
		t.Fatal(err)
	}
	be.Close()
	for _, a := range tried {
		skipped = append(skipped, a.Name)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(skipped) == 0 {
		if stderr != "" {
			t.Errorf("no backend was skipped, yet stderr says %q", stderr)
		}
		return
	}
	if len(lines) != len(skipped) {
		t.Fatalf("stderr %q: want one line per skipped backend %v", stderr, skipped)
	}
	for i, name := range skipped {
		if !strings.HasPrefix(lines[i], "attn run: using ") || !strings.Contains(lines[i], "("+name+" unavailable: ") {
			t.Errorf("fallback line %q, want \"attn run: using … (%s unavailable: …)\"", lines[i], name)
		}
	}
}
