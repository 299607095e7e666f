package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
)

// TestExplainGolden checks the tutorial's numbers in the walk-through:
// every step's matrix and the section on its rounding.
func TestExplainGolden(t *testing.T) {
	code, stdout, stderr := runCmd(t, "explain", "-backend", "cpu")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"  x = [[1, 0, 1, 0], [0, 2, 0, 2], [1, 1, 1, 1]]\n",
		"  W_k = [[0, 0, 1], [1, 1, 0], [0, 1, 0], [1, 1, 0]]\n",
		"  W_q = [[1, 0, 1], [1, 0, 0], [0, 0, 1], [0, 1, 1]]\n",
		"  W_v = [[0, 2, 0], [0, 3, 0], [1, 0, 3], [1, 1, 0]]\n",
		"Step 2: ",
		"  keys = [[0, 1, 1], [4, 4, 0], [2, 3, 1]]\n",
		"  queries = [[1, 0, 2], [2, 2, 2], [2, 1, 3]]\n",
		"  values = [[1, 2, 3], [2, 8, 0], [2, 6, 3]]\n",
		"  scores = [[2, 4, 4], [4, 16, 12], [4, 12, 10]]\n",
		"[[0.063379, 0.468311, 0.468311],",
		"  input 1 = [[0.0634, 0.1268, 0.1901], [0.9366, 3.7465, 0.0000], [0.9366, 2.8099, 1.4049]]\n",
		"Step 8: ",
		"  outputs = [[1.9366, 6.6831, 1.5951], [2.0000, 7.9640, 0.0540], [1.9997, 7.7599, 0.3584]]\n",
		"  softmax rounded = [[0.0, 0.5, 0.5], [0.0, 1.0, 0.0], [0.0, 0.9, 0.1]]\n",
		"  outputs with rounded softmax = [[2, 7, 1.5], [2, 8, 0], [2, 7.8, 0.3]]\n",
		"  exact outputs = [[1.9366, 6.6831, 1.5951], [2.0000, 7.9640, 0.0540], [1.9997, 7.7599, 0.3584]]\n",
		"rounds the softmax to one decimal",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("explain output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("output:\n%s", stdout)
	}
}

// TestExplainScaleZero: -scale 0 is 1/√Dk, as a zero scale is in every
// layer of attn, not an error and not a zero scale.
func TestExplainScaleZero(t *testing.T) {
	dir := t.TempDir()
	x := writeTestNpy(t, filepath.Join(dir, "x.npy"), "<f8", []int{2, 4}, []float64{1, 0, 0, 0, 0, 1, 0, 0})
	w := writeTestNpy(t, filepath.Join(dir, "w.npy"), "<f4", []int{4, 4}, []float64{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1})
	code, stdout, stderr := runCmd(t, "explain", "-backend", "cpu", "-x", x, "-wq", w, "-wk", w, "-wv", w, "-scale", "0")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Dk = 4: scale 1/2, so the scores are the identity halved.
	for _, want := range []string{"scale 0.5)", "  scores = [[0.5, 0], [0, 0.5]]\n"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestExplainPrint checks the printing on its own, writing to a buffer.
func TestExplainPrint(t *testing.T) {
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
	var buf bytes.Buffer
	if err := ex.print(&buf); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 8; i++ {
		if !strings.Contains(buf.String(), "Step "+string(rune('0'+i))+":") {
			t.Errorf("no step %d in\n%s", i, buf.String())
		}
	}
}

func TestRoundTenths(t *testing.T) {
	for _, tc := range []struct {
		in, want []float32
	}{
		{[]float32{0.063379, 0.468311, 0.468311}, []float32{0, 0.5, 0.5}},
		{[]float32{0.000006, 0.982008, 0.017986}, []float32{0, 1, 0}},
		{[]float32{0.000295, 0.880537, 0.119168}, []float32{0, 0.9, 0.1}},
		{[]float32{0.25, 0.25, 0.25, 0.25}, []float32{0.3, 0.3, 0.2, 0.2}},
		{[]float32{0, 0, 0}, []float32{0, 0, 0}}, // a row that sees no key
	} {
		got := make([]float32, len(tc.in))
		roundTenths(got, tc.in)
		for j := range got {
			if got[j] != tc.want[j] {
				t.Errorf("roundTenths(%v) = %v, want %v", tc.in, got, tc.want)
				break
			}
		}
	}
}

func TestExplainCustomInputs(t *testing.T) {
	dir := t.TempDir()
	// Two inputs of two features, identity weights: keys = queries =
	// values = x.
	x := writeTestNpy(t, filepath.Join(dir, "x.npy"), "<f8", []int{2, 2}, []float64{1, 0, 0, 1})
	id := writeTestNpy(t, filepath.Join(dir, "id.npy"), "<f4", []int{2, 2}, []float64{1, 0, 0, 1})
	wrong := writeTestNpy(t, filepath.Join(dir, "w32.npy"), "<f4", []int{3, 2}, make([]float64, 6))
	code, stdout, stderr := runCmd(t, "explain", "-backend", "cpu", "-x", x, "-wq", id, "-wk", id, "-wv", id, "-scale", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"  keys = [[1, 0], [0, 1]]\n",
		"  scores = [[2, 0], [0, 2]]\n",
		"  softmax = [[0.880797, 0.119203], [0.119203, 0.880797]]\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{"weights do not fit x", []string{"explain", "-wk", wrong}, 1, "w32.npy is (3, 2) but x has 4 features per input"},
		{"q and k widths differ", []string{"explain", "-x", x, "-wq", id, "-wk", writeTestNpy(t, filepath.Join(dir, "w23.npy"), "<f4", []int{2, 3}, make([]float64, 6)), "-wv", id},
			1, "queries and keys need the same width"},
		{"rank 3", []string{"explain", "-x", writeTestNpy(t, filepath.Join(dir, "x3.npy"), "<f4", []int{1, 2, 2}, make([]float64, 4))}, 1, "x3.npy has rank 3"},
		{"missing file", []string{"explain", "-x", filepath.Join(dir, "nope.npy")}, 1, "no such file"},
		{"unknown backend", []string{"explain", "-backend", "abacus"}, 2, `unknown backend "abacus"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCmd(t, tc.args...)
			if code != tc.code || !strings.HasPrefix(stderr, "attn explain: ") || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit %d and %q", code, stderr, tc.code, tc.want)
			}
		})
	}
}

func TestDevices(t *testing.T) {
	t.Setenv(backend.EnvBackend, "")
	code, stdout, stderr := runCmd(t, "devices")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"cpu:\n", "  kind: cpu\n", "  threads: ", "\nauto: "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("devices output lacks %q:\n%s", want, stdout)
		}
	}
	for _, name := range backend.Registered() {
		if !strings.Contains(stdout, name+":") {
			t.Errorf("devices output does not list %s:\n%s", name, stdout)
		}
	}

	t.Setenv(backend.EnvBackend, "cpu")
	_, stdout, _ = runCmd(t, "devices")
	if !strings.Contains(stdout, "auto (ATTN_BACKEND=cpu): cpu\n") {
		t.Errorf("with ATTN_BACKEND=cpu the auto line is missing:\n%s", stdout)
	}
}
