package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/attn-go/attn/cmd/attn/internal/bench"
	"github.com/sbinet/npyio"
	"github.com/x448/float16"
)

// runCmd runs the command line in-process and returns its exit status,
// stdout and stderr.
func runCmd(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, strings.NewReader(""), &stdout, &stderr)
	for _, s := range []string{stdout.String(), stderr.String()} {
		if strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") {
			t.Fatalf("attn %s printed a panic:\n%s", strings.Join(args, " "), s)
		}
	}
	return code, stdout.String(), stderr.String()
}

// npyHeader builds the magic, version, header length and header of a .npy
// file; the dictionary is padded to a 64-byte boundary.
func npyHeader(major byte, dict string) []byte {
	pre := 10
	if major > 1 {
		pre = 12
	}
	hlen := len(dict) + 1
	hlen += (64 - (pre+hlen)%64) % 64
	b := []byte("\x93NUMPY")
	b = append(b, major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(hlen))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(hlen))
	}
	b = append(b, dict...)
	for len(b) < pre+hlen-1 {
		b = append(b, ' ')
	}
	return append(b, '\n')
}

func shapeTuple(shape []int) string {
	if len(shape) == 1 {
		return fmt.Sprintf("(%d,)", shape[0])
	}
	s := make([]string, len(shape))
	for i, d := range shape {
		s[i] = fmt.Sprint(d)
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// encodeTest encodes vals, given in C order, as a .npy of the given NumPy
// dtype, in Fortran order when fortran is set. It is the tests' own
// writer, independent of the command's.
func encodeTest(descr string, fortran bool, shape []int, vals []float64) []byte {
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': %s, 'shape': %s, }", descr, map[bool]string{false: "False", true: "True"}[fortran], shapeTuple(shape))
	b := npyHeader(1, dict)
	var order binary.AppendByteOrder = binary.LittleEndian
	if descr[0] == '>' {
		order = binary.BigEndian
	}
	put := func(v float64) {
		switch descr[1:] {
		case "f2":
			b = order.AppendUint16(b, float16.Fromfloat32(float32(v)).Bits())
		case "f4":
			b = order.AppendUint32(b, math.Float32bits(float32(v)))
		case "f8":
			b = order.AppendUint64(b, math.Float64bits(v))
		case "i8":
			b = order.AppendUint64(b, uint64(int64(v)))
		case "i4":
			b = order.AppendUint32(b, uint32(int32(v)))
		case "b1", "u1":
			b = append(b, byte(v))
		default:
			panic("encodeTest: dtype " + descr)
		}
	}
	if !fortran {
		for _, v := range vals {
			put(v)
		}
		return b
	}
	// Fortran order: the first index varies fastest.
	n := len(vals)
	idx := make([]int, len(shape))
	for range n {
		c := 0
		for d := range shape {
			c = c*shape[d] + idx[d]
		}
		put(vals[c])
		for d := range shape {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return b
}

func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// writeTestNpy writes vals (C order) as path in the given dtype.
func writeTestNpy(t *testing.T, path, descr string, shape []int, vals []float64) string {
	t.Helper()
	return writeFile(t, path, encodeTest(descr, false, shape, vals))
}

// seq returns n values 0.1, 0.2, …, small enough to keep softmax tame.
func seq(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = float64(i%7)/10 - 0.3
	}
	return v
}

func prod(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// openOutput opens a .npy written by the command with npyio, an
// independent reader, and checks that it holds descr in C order; the
// file is closed when the test ends.
func openOutput(t *testing.T, path, descr string) *npyio.Reader {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	r, err := npyio.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if r.Header.Descr.Type != descr || r.Header.Descr.Fortran {
		t.Fatalf("%s: header %v, want %s in C order", path, r.Header, descr)
	}
	return r
}

// readOutput reads a float32 .npy written by the command with npyio and
// returns its shape and data.
func readOutput(t *testing.T, path string) ([]int, []float32) {
	t.Helper()
	r := openOutput(t, path, "<f4")
	var data []float32
	if err := r.Read(&data); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(data) != prod(r.Header.Descr.Shape) {
		t.Fatalf("%s: %d elements for shape %v", path, len(data), r.Header.Descr.Shape)
	}
	return r.Header.Descr.Shape, data
}

// noTemps fails if a temporary output file is left in dir.
func noTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".attn-") {
			t.Errorf("temporary file %s left behind", filepath.Join(dir, e.Name()))
		}
	}
}

// attnBin is the command built once for the tests that run it as a
// process (buildAttn); TestMain removes it.
var attnBin struct {
	once      sync.Once
	dir, path string
	err       error
}

// buildAttn builds the command, once per test binary, and returns its
// path. It skips in -short.
func buildAttn(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short")
	}
	attnBin.once.Do(func() {
		attnBin.dir, attnBin.err = os.MkdirTemp("", "attn-test-")
		if attnBin.err != nil {
			return
		}
		attnBin.path = filepath.Join(attnBin.dir, "attn")
		if out, err := exec.Command("go", "build", "-o", attnBin.path, ".").CombinedOutput(); err != nil {
			attnBin.err = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if attnBin.err != nil {
		t.Fatal(attnBin.err)
	}
	return attnBin.path
}

// TestMain lets the test binary stand in for attn when attn bench, run
// in-process by a test, starts a process of its own per point (-isolate
// execs os.Executable with "bench -point SPEC").
func TestMain(m *testing.M) {
	if len(os.Args) > 2 && os.Args[1] == "bench" && os.Args[2] == "-point" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	code := m.Run()
	if attnBin.dir != "" {
		os.RemoveAll(attnBin.dir)
	}
	os.Exit(code)
}

// fixedCeilings makes attn bench's probes of the host's ceilings, and
// of a GPU backend's device's, return at once, for the rest of test t,
// ceilings no point reaches: for the
// tests of what a sweep does, not of its roof (the real probes take some
// 3 s each, at least three a sweep; TestBenchCommand runs them). With
// bandwidth set the read bandwidth is measured as attn bench does, the
// compute ceilings alone fixed.
func fixedCeilings(t *testing.T, bandwidth bool) {
	was := newCeilingProbe
	t.Cleanup(func() { newCeilingProbe = was })
	newCeilingProbe = func(w io.Writer, memory, _ bool, dev wgslDevice) func() bench.Ceilings {
		real := was(w, bandwidth && memory, false, nil)
		return func() bench.Ceilings {
			c := bench.Ceilings{ReadGBPS: 1e6, SgemmGFLOPS: 1e9, FMAGFLOPS: 1e9, FMAKernel: "fixed by the test"}
			if dev != nil {
				c.GPUReadGBPS, c.GPUFMAGFLOPS, c.GPUF16GFLOPS = 1e9, 1e12, 1e12
			}
			if bandwidth && memory {
				c.ReadGBPS = real().ReadGBPS
			}
			return c
		}
	}
}
