package main

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/x448/float16"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
)

// readHalfOutput reads a float16 .npy the command wrote: its header by
// npyio (an independent reader), its data as little-endian binary16
// decoded by x448/float16.
func readHalfOutput(t *testing.T, path string) ([]int, []float32) {
	t.Helper()
	shape := openOutput(t, path, "<f2").Header.Descr.Shape
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := prod(shape)
	data := b[len(b)-2*n:]
	out := make([]float32, n)
	for i := range out {
		out[i] = float16.Frombits(binary.LittleEndian.Uint16(data[2*i:])).Float32()
	}
	return shape, out
}

// halfVals are n values that float16 holds exactly (multiples of 2⁻⁸ in
// [−2, 2)), so that float16 files and their float32 twins agree.
func halfVals(r *rand.Rand, n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(r.IntN(1024)-512) / 256
	}
	return v
}

// attn run reads float16 .npy files of either byte order and keeps them
// float16: the output is a float16 .npy, the float32 answer for the same
// values rounded to float16 (within one unit in its last place: the
// float32 arithmetic may land on the other side of a rounding boundary).
// -dtype f32 computes and writes float32 from the same files; -dtype bf16
// stores float32 files as bfloat16 and writes the bfloat16 output as the
// float32 values it holds.
func TestRunHalf(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(5, 8))
	path := func(name string) string { return filepath.Join(dir, name) }
	qv, kv, vv := halfVals(r, 2*5*16), halfVals(r, 1*7*16), halfVals(r, 1*7*12)
	q := writeTestNpy(t, path("q.npy"), "<f2", []int{2, 5, 16}, qv)
	k := writeTestNpy(t, path("k.npy"), ">f2", []int{1, 7, 16}, kv)
	v := writeTestNpy(t, path("v.npy"), "<f2", []int{1, 7, 12}, vv)
	q32 := writeTestNpy(t, path("q32.npy"), "<f4", []int{2, 5, 16}, qv)
	k32 := writeTestNpy(t, path("k32.npy"), "<f4", []int{1, 7, 16}, kv)
	v32 := writeTestNpy(t, path("v32.npy"), "<f4", []int{1, 7, 12}, vv)
	for _, strategy := range []string{"staged", "fused"} {
		base := []string{"run", "-backend", "cpu", "-causal", "-strategy", strategy}
		code, stdout, stderr := runCmd(t, append(base, "-q", q, "-k", k, "-v", v, "-o", path("o16.npy"))...)
		if code != 0 {
			t.Fatalf("float16 run: exit %d: %s", code, stderr)
		}
		if !strings.Contains(stdout, "float16 (2, 5, 12)") {
			t.Errorf("stdout %q does not name a float16 output", stdout)
		}
		code, _, stderr = runCmd(t, append(base, "-q", q, "-k", k, "-v", v, "-dtype", "f32", "-o", path("o32.npy"))...)
		if code != 0 {
			t.Fatalf("-dtype f32: exit %d: %s", code, stderr)
		}
		code, _, stderr = runCmd(t, append(base, "-q", q32, "-k", k32, "-v", v32, "-o", path("o32b.npy"))...)
		if code != 0 {
			t.Fatalf("float32 files: exit %d: %s", code, stderr)
		}
		_, o16 := readHalfOutput(t, path("o16.npy"))
		shape, o32 := readOutput(t, path("o32.npy"))
		_, o32b := readOutput(t, path("o32b.npy"))
		if len(shape) != 3 || shape[2] != 12 {
			t.Fatalf("output shape %v", shape)
		}
		for i := range o32 {
			if o32[i] != o32b[i] {
				t.Fatalf("%s: -dtype f32 of float16 files and float32 files differ at %d: %g, %g", strategy, i, o32[i], o32b[i])
			}
			want := float16.Fromfloat32(o32[i]).Float32()
			ulp := math.Exp2(math.Floor(math.Log2(math.Max(math.Abs(float64(want)), 0x1p-14))) - 10)
			if d := math.Abs(float64(o16[i]) - float64(want)); backendtest.Exceeds(d, ulp) {
				t.Fatalf("%s: O[%d] = %g in float16, want %g (float32 %g) within %g", strategy, i, o16[i], want, o32[i], ulp)
			}
		}
		code, _, stderr = runCmd(t, append(base, "-q", q32, "-k", k32, "-v", v32, "-dtype", "bf16", "-o", path("obf.npy"))...)
		if code != 0 {
			t.Fatalf("-dtype bf16: exit %d: %s", code, stderr)
		}
		_, obf := readOutput(t, path("obf.npy"))
		for i, x := range obf {
			if math.Float32bits(x)&0xffff != 0 {
				t.Fatalf("%s: bfloat16 O[%d] = %g is not a bfloat16 value", strategy, i, x)
			}
			if d := math.Abs(float64(x - o32[i])); backendtest.Exceeds(d, math.Abs(float64(o32[i]))*0x1p-7+0x1p-7) {
				t.Fatalf("%s: bfloat16 O[%d] = %g, float32 %g", strategy, i, x, o32[i])
			}
		}
	}
}

// A value a dtype cannot hold, an unknown -dtype and NaN in a float16
// file are refused, naming what and where, and nothing is written.
func TestRunHalfBadInputs(t *testing.T) {
	dir := t.TempDir()
	path := func(name string) string { return filepath.Join(dir, name) }
	big := seq(32)
	big[9] = 1e5
	nan := seq(32)
	nan[3] = math.NaN()
	q := writeTestNpy(t, path("q.npy"), "<f4", []int{4, 8}, seq(32))
	k := writeTestNpy(t, path("k.npy"), "<f4", []int{6, 8}, seq(48))
	v := writeTestNpy(t, path("v.npy"), "<f4", []int{6, 8}, seq(48))
	out := path("out.npy")
	for _, c := range []struct {
		name string
		args []string
		code int
		want []string
	}{
		{"f16 overflow", []string{"-q", writeTestNpy(t, path("qbig.npy"), "<f4", []int{4, 8}, big), "-k", k, "-v", v, "-dtype", "f16"}, 1,
			[]string{"qbig.npy: element (1, 1) = 100000 does not fit f16 (largest finite 65504)"}},
		{"unknown dtype", []string{"-q", q, "-k", k, "-v", v, "-dtype", "f64"}, 2, []string{"-dtype", `unknown dtype "f64"`}},
		{"NaN in float16", []string{"-q", writeTestNpy(t, path("qnan.npy"), "<f2", []int{4, 8}, nan), "-k", k, "-v", v}, 1,
			[]string{"qnan.npy: element (0, 3) is NaN"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, stdout, stderr := runCmd(t, append(append([]string{"run", "-backend", "cpu"}, c.args...), "-o", out)...)
			if code != c.code {
				t.Fatalf("exit %d, want %d: %s", code, c.code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not contain %q", stderr, w)
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
}

// -weights and -scores take the query's dtype, as ONNX's
// qk_matmul_output does: float16 files give float16 .npy files holding
// the float32 matrices (those of -dtype f32 on the same files, the same
// arithmetic) rounded to float16, -dtype bf16 gives the bfloat16 values
// written as float32, and -dtype f32 keeps them float32; the LSE is
// float32 every time, and -heatmap draws from the rounded weights.
func TestRunHalfMatrices(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(171, 172))
	path := func(name string) string { return filepath.Join(dir, name) }
	q := writeTestNpy(t, path("q.npy"), "<f2", []int{2, 5, 16}, halfVals(r, 2*5*16))
	k := writeTestNpy(t, path("k.npy"), "<f2", []int{2, 7, 16}, halfVals(r, 2*7*16))
	v := writeTestNpy(t, path("v.npy"), "<f2", []int{2, 7, 12}, halfVals(r, 2*7*12))
	run := func(name string, dtype ...string) string {
		t.Helper()
		args := append([]string{"run", "-backend", "cpu", "-causal", "-q", q, "-k", k, "-v", v, "-o", path(name + "-o.npy"),
			"-weights", path(name + "-w.npy"), "-scores", path(name + "-s.npy"), "-lse", path(name + "-l.npy"), "-heatmap", path(name + ".png")}, dtype...)
		code, stdout, stderr := runCmd(t, args...)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, stderr)
		}
		return stdout
	}
	run("f32", "-dtype", "f32")
	_, w32 := readOutput(t, path("f32-w.npy"))
	_, s32 := readOutput(t, path("f32-s.npy"))
	for _, c := range []struct {
		name  string
		dtype []string
		descr string // of the weights and scores
		round func(float32) float32
	}{
		{"f16", nil, "<f2", func(x float32) float32 { return float16.Fromfloat32(x).Float32() }},
		{"bf16", []string{"-dtype", "bf16"}, "<f4", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout := run(c.name, c.dtype...)
			for _, m := range []struct {
				file string
				f32  []float32
			}{{"-w.npy", w32}, {"-s.npy", s32}} {
				var got []float32
				if c.descr == "<f2" {
					_, got = readHalfOutput(t, path(c.name+m.file))
					if !strings.Contains(stdout, "wrote "+path(c.name+m.file)+": float16") {
						t.Errorf("stdout %q does not name %s float16", stdout, c.name+m.file)
					}
				} else {
					_, got = readOutput(t, path(c.name+m.file))
				}
				for i, x := range got {
					switch {
					case c.round != nil && math.Float32bits(x) != math.Float32bits(c.round(m.f32[i])):
						t.Fatalf("%s[%d] = %g, want %g rounded, %g", m.file, i, x, m.f32[i], c.round(m.f32[i]))
					case c.round == nil && math.Float32bits(x)&0xffff != 0:
						t.Fatalf("%s[%d] = %g is not a bfloat16 value", m.file, i, x)
					}
				}
			}
			if shape, _ := readOutput(t, path(c.name+"-l.npy")); len(shape) != 2 {
				t.Errorf("LSE of shape %v", shape)
			}
		})
	}
}

// attn run -dtype q8 and fp8 round K and V as an 8-bit cache stores them
// and compute in float32 with a float32 output: the same output, bit for
// bit, as -dtype f32 on files that hold the rounded K and V already,
// also at a head dim that is not whole q8 blocks (rows padded).
func TestRunQuant(t *testing.T) {
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(3, 46))
	path := func(name string) string { return filepath.Join(dir, name) }
	vals := func(n int, scale float64) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = (r.Float64()*2 - 1) * scale
		}
		return v
	}
	qv, kv, vv := vals(2*5*32, 1), vals(1*9*32, 3), vals(1*9*64, 600) // V beyond fp8's ±448 too
	q := writeTestNpy(t, path("q.npy"), "<f4", []int{2, 5, 32}, qv)
	k := writeTestNpy(t, path("k.npy"), "<f4", []int{1, 9, 32}, kv)
	v := writeTestNpy(t, path("v.npy"), "<f4", []int{1, 9, 64}, vv)
	for _, dt := range []backend.DType{backend.Q8, backend.FP8} {
		round := func(x []float64) []float64 {
			f := make([]float32, len(x))
			for i := range x {
				f[i] = float32(x[i])
			}
			if err := dt.RoundSlice(f, f); err != nil {
				t.Fatal(err)
			}
			out := make([]float64, len(f))
			for i := range f {
				out[i] = float64(f[i])
			}
			return out
		}
		kr := writeTestNpy(t, path("kr.npy"), "<f4", []int{1, 9, 32}, round(kv))
		vr := writeTestNpy(t, path("vr.npy"), "<f4", []int{1, 9, 64}, round(vv))
		base := []string{"run", "-backend", "cpu", "-causal", "-strategy", "fused"}
		if code, _, stderr := runCmd(t, append(base, "-q", q, "-k", k, "-v", v, "-dtype", dt.String(), "-o", path("oq.npy"))...); code != 0 {
			t.Fatalf("-dtype %v: exit %d: %s", dt, code, stderr)
		}
		if code, _, stderr := runCmd(t, append(base, "-q", q, "-k", kr, "-v", vr, "-dtype", "f32", "-o", path("or.npy"))...); code != 0 {
			t.Fatalf("rounded files: exit %d: %s", code, stderr)
		}
		shape, oq := readOutput(t, path("oq.npy"))
		_, or := readOutput(t, path("or.npy"))
		if len(shape) != 3 || shape[2] != 64 {
			t.Fatalf("-dtype %v: output shape %v", dt, shape)
		}
		for i := range oq {
			if oq[i] != or[i] {
				t.Fatalf("-dtype %v: O[%d] = %g, but %g from K and V rounded beforehand", dt, i, oq[i], or[i])
			}
		}
	}
	// A head dim that is not whole q8 blocks: each row's last block
	// padded with zeros (backend.DType.RoundRows).
	kv16 := vals(9*16, 1)
	k16 := writeTestNpy(t, path("k16.npy"), "<f4", []int{1, 9, 16}, kv16)
	q16 := writeTestNpy(t, path("q16.npy"), "<f4", []int{2, 5, 16}, vals(2*5*16, 1))
	// x, rows of dim, rounded as a q8 buffer stores them.
	roundRows := func(x []float64, dim int) []float64 {
		f := make([]float32, len(x))
		for i, v := range x {
			f[i] = float32(v)
		}
		if err := backend.Q8.RoundRows(f, f, dim); err != nil {
			t.Fatal(err)
		}
		out := make([]float64, len(f))
		for i, v := range f {
			out[i] = float64(v)
		}
		return out
	}
	kr := writeTestNpy(t, path("kr16.npy"), "<f4", []int{1, 9, 16}, roundRows(kv16, 16))
	vr := writeTestNpy(t, path("vr16.npy"), "<f4", []int{1, 9, 64}, roundRows(vv, 64))
	if code, _, stderr := runCmd(t, "run", "-backend", "cpu", "-q", q16, "-k", k16, "-v", v, "-dtype", "q8", "-o", path("o16.npy")); code != 0 {
		t.Fatalf("-dtype q8 with D=16: exit %d: %s", code, stderr)
	}
	if code, _, stderr := runCmd(t, "run", "-backend", "cpu", "-q", q16, "-k", kr, "-v", vr, "-dtype", "f32", "-o", path("or16.npy")); code != 0 {
		t.Fatalf("rounded files, D=16: exit %d: %s", code, stderr)
	}
	_, o16 := readOutput(t, path("o16.npy"))
	_, or16 := readOutput(t, path("or16.npy"))
	for i := range o16 {
		if o16[i] != or16[i] {
			t.Fatalf("-dtype q8, D=16: O[%d] = %g, but %g from K rounded by padded rows beforehand", i, o16[i], or16[i])
		}
	}
}
