package main

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/big"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
)

// TestBinary builds the real command and runs bad inputs through it: the
// process must exit non-zero with a message, never a panic.
func TestBinary(t *testing.T) {
	bin := buildAttn(t)
	dir := t.TempDir()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{4, 8}, seq(32))
	k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", []int{6, 8}, seq(48))
	huge := writeFile(t, filepath.Join(dir, "huge.npy"),
		append(npyHeader(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }"), make([]byte, 12)...))
	hdr := writeFile(t, filepath.Join(dir, "hdr.npy"), []byte("\x93NUMPY\x03\x00\xff\xff\xff\xff{"))
	disorder := writeFile(t, filepath.Join(dir, "disorder.npy"), npyHeader(2, "{'shape': (2,), 'descr': '<f4', 'fortran_order': False}"))
	out := filepath.Join(dir, "o.npy")
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"run", "-q", huge, "-k", k, "-v", k, "-o", out}, 1, "more elements than fit in an int"},
		{[]string{"run", "-q", hdr, "-k", k, "-v", k, "-o", out}, 1, "header claims 4294967295 bytes"},
		{[]string{"run", "-q", disorder, "-k", k, "-v", k, "-o", out}, 1, "malformed .npy header"},
		{[]string{"run", "-q", q, "-k", filepath.Join(dir, "none.npy"), "-v", k, "-o", out}, 1, "no such file"},
		{[]string{"run", "-q", q, "-k", k}, 2, "missing required flag -v, -o"},
		{[]string{"nonsense"}, 2, "unknown command"},
	} {
		cmd := exec.Command(bin, tc.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			t.Errorf("attn %v: %v, want a non-zero exit", tc.args, err)
			continue
		}
		if ee.ExitCode() != tc.code {
			t.Errorf("attn %v: exit %d, want %d", tc.args, ee.ExitCode(), tc.code)
		}
		s := stderr.String()
		if strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") {
			t.Errorf("attn %v panicked:\n%s", tc.args, s)
		}
		if !strings.Contains(s, tc.want) {
			t.Errorf("attn %v: stderr %q lacks %q", tc.args, s, tc.want)
		}
	}
}

// runBinary runs the built command with extra environment variables and
// returns its exit status, stdout and stderr; it fails on a panic.
func runBinary(t *testing.T, env []string, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("attn %v: %v", args, err)
	}
	if s := stderr.String(); strings.Contains(s, "panic:") || strings.Contains(s, "goroutine ") {
		t.Fatalf("attn %v panicked:\n%s", args, s)
	}
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestRunOutputsCheckedFirst: every output attn run would write is
// checked, and its temporary file created, before any input data is read:
// q holds a NaN that reading it would report, so the error must be the
// output's, naming the path as given and never a temporary file.
func TestRunOutputsCheckedFirst(t *testing.T) {
	bin := buildAttn(t)
	dir := t.TempDir()
	nanQ := seq(32)
	nanQ[5] = math.NaN()
	q := writeTestNpy(t, filepath.Join(dir, "q.npy"), "<f4", []int{4, 8}, nanQ)
	k := writeTestNpy(t, filepath.Join(dir, "k.npy"), "<f4", []int{6, 8}, seq(48))
	out := filepath.Join(dir, "o.npy")
	old := []byte("the output of an earlier run\n")
	writeFile(t, out, old)
	lens := writeTestNpy(t, filepath.Join(dir, "lens.npy"), "<i8", []int{1}, []float64{7})
	sinks := writeTestNpy(t, filepath.Join(dir, "sinks.npy"), "<f4", []int{2}, []float64{0, 1})
	missing := filepath.Join(dir, "missing")
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		flags []string
		want  []string
	}{
		{"-o in a missing directory", []string{"-o", filepath.Join(missing, "o.npy")},
			[]string{"-o " + filepath.Join(missing, "o.npy"), "directory " + missing + " does not exist"}},
		{"-weights in a missing directory", []string{"-o", out, "-weights", filepath.Join(missing, "w.npy")},
			[]string{"-weights " + filepath.Join(missing, "w.npy"), "does not exist"}},
		{"-lse in a missing directory", []string{"-o", out, "-lse", filepath.Join(missing, "l.npy")},
			[]string{"-lse " + filepath.Join(missing, "l.npy"), "does not exist"}},
		{"-heatmap in a missing directory", []string{"-o", out, "-lse", filepath.Join(dir, "l.npy"), "-heatmap", filepath.Join(missing, "h.png")},
			[]string{"-heatmap " + filepath.Join(missing, "h.png"), "does not exist"}},
		{"-scores in a missing directory", []string{"-o", out, "-scores", filepath.Join(missing, "s.npy")},
			[]string{"-scores " + filepath.Join(missing, "s.npy"), "does not exist"}},
		// The per-head and per-batch vectors are read and checked before
		// Q, K and V: their errors come first too.
		{"-kv-lens past Nk", []string{"-o", out, "-kv-lens", lens},
			[]string{"-kv-lens " + lens + ": ", "key lengths: batch 0 has 7, want 0 … Nk=6"}},
		{"-sinks of two heads", []string{"-o", out, "-sinks", sinks},
			[]string{"-sinks " + sinks + ": ", "sinks: 2 values for H=1 query heads"}},
		{"-alibi of ints", []string{"-o", out, "-alibi", lens},
			[]string{"-alibi " + lens + ": dtype int64 (<i8)"}},
		{"-o names a directory", []string{"-o", sub}, []string{"-o " + sub + " is a directory"}},
		{"-o under a file", []string{"-o", filepath.Join(k, "o.npy")}, []string{k + " is not a directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"run", "-backend", "cpu", "-q", q, "-k", k, "-v", k}, tc.flags...)
			code, stdout, stderr := runBinary(t, nil, bin, args...)
			if code != 1 {
				t.Errorf("exit %d, want 1; stderr %q", code, stderr)
			}
			if !strings.HasPrefix(stderr, "attn run: ") || strings.Count(stderr, "\n") != 1 {
				t.Errorf("stderr %q, want one line \"attn run: ...\"", stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q lacks %q", stderr, w)
				}
			}
			if strings.Contains(stderr, "NaN") {
				t.Errorf("stderr %q: the inputs were read before the outputs were checked", stderr)
			}
			if strings.Contains(stderr, ".attn-") {
				t.Errorf("stderr %q names a temporary file", stderr)
			}
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if b, _ := os.ReadFile(out); !bytes.Equal(b, old) {
				t.Error("a failed run changed the existing output")
			}
			noTemps(t, dir)
			noTemps(t, sub)
		})
	}

	// attn heatmap -o names a directory: the message names it, not the
	// temporary file its rename would have failed on.
	img := filepath.Join(dir, "img.png")
	if err := os.Mkdir(img, 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runBinary(t, nil, bin, "heatmap", "-backend", "cpu", "-o", img)
	if code != 1 || !strings.Contains(stderr, img+" is a directory") || strings.Contains(stderr, ".attn-") {
		t.Errorf("attn heatmap -o DIR: exit %d, stderr %q; want 1 and %q without a temporary file's name", code, stderr, img+" is a directory")
	}
	noTemps(t, dir)
}

// writeSparseNpy writes a float32 .npy header for shape and extends the
// file to the size the shape needs without writing the data: a sparse
// file, all zeros, that costs no disk. It skips the test where the file
// system does not keep it sparse.
func writeSparseNpy(t *testing.T, path string, shape []int) string {
	t.Helper()
	hdr := npyHeader(1, fmt.Sprintf("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }", shapeTuple(shape)))
	writeFile(t, path, hdr)
	size := int64(len(hdr)) + 4*int64(prod(shape))
	if err := os.Truncate(path, size); err != nil {
		t.Skipf("cannot make a %d-byte sparse file: %v", size, err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); !ok || sys.Blocks*512 > 1<<20 {
		t.Skipf("%s is not sparse here", path)
	}
	return path
}

// vmRSS reads a process's resident memory from /proc; ok is false once
// it has exited.
func vmRSS(pid int) (bytes int64, ok bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, false
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

// TestRunMemoryRefused: three inputs each larger than all the memory
// available (sparse files, true to their headers) are refused from their
// headers, in moments, with both figures, before any data is read: the
// process never grows past 512 MiB. Reading them, as attn once did, takes
// minutes and ends in the OOM killer; the test kills a process that
// starts to (RSS past 512 MiB, or 20 s).
func TestRunMemoryRefused(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("watches the process through /proc")
	}
	avail, ok := cpu.AvailableMemory()
	if !ok {
		t.Skip("available memory cannot be read here")
	}
	bin := buildAttn(t)
	dir := t.TempDir()
	const d = 1 << 16
	n := int(avail/(4*d)) + 1 // n×d float32 take more than avail
	var in [3]string
	for i, name := range []string{"q.npy", "k.npy", "v.npy"} {
		in[i] = writeSparseNpy(t, filepath.Join(dir, name), []int{n, d})
	}
	out := filepath.Join(dir, "o.npy")
	cmd := exec.Command(bin, "run", "-backend", "cpu", "-q", in[0], "-k", in[1], "-v", in[2], "-o", out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	const limit, timeout = 512 << 20, 20 * time.Second
	done := make(chan struct{})
	killed := make(chan string, 1)
	go func() {
		for {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			if rss, ok := vmRSS(cmd.Process.Pid); ok && rss > limit {
				cmd.Process.Kill()
				killed <- fmt.Sprintf("its RSS reached %d MiB: it was reading the inputs", rss>>20)
				return
			}
			if time.Since(start) > timeout {
				cmd.Process.Kill()
				killed <- fmt.Sprintf("it ran for %v", timeout)
				return
			}
		}
	}()
	cmd.Wait()
	close(done)
	elapsed := time.Since(start)
	select {
	case why := <-killed:
		t.Fatalf("attn run on three %s inputs with %s available was killed: %s; stderr %q",
			sizeString(big.NewInt(4*int64(n)*d)), sizeString(new(big.Int).SetUint64(avail)), why, stderr.String())
	default:
	}
	if code := cmd.ProcessState.ExitCode(); code != 1 {
		t.Errorf("exit %d, want 1; stderr %q", code, stderr.String())
	}
	s := stderr.String()
	for _, want := range []string{"attn run: ", backend.ErrTooLarge.Error(), "inputs and outputs need ", " GiB, ", " GiB is available"} {
		if !strings.Contains(s, want) {
			t.Errorf("stderr %q lacks %q", s, want)
		}
	}
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss<<10 > limit {
		t.Errorf("peak RSS %d MiB: the inputs were read", ru.Maxrss>>10)
	}
	t.Logf("refused in %v: %s", elapsed.Round(time.Millisecond), strings.TrimSpace(s))
	if _, err := os.Stat(out); err == nil {
		t.Errorf("a refused run wrote %s", out)
	}
	noTemps(t, dir)
}

// TestRunInterrupted sends SIGINT, then SIGTERM, to attn run while it
// computes: it must exit 130 or 143 with "attn run: interrupted" (not a
// context error), leave the earlier output byte for byte, and leave no
// temporary file.
func TestRunInterrupted(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("watches the process through /proc")
	}
	bin := buildAttn(t)
	dir := t.TempDir()
	// 16 MiB of float32 and 275 GFLOP: seconds of work on one thread.
	const h, n, d = 4, 16384, 64
	vals := make([]float64, h*n*d)
	for i := range vals {
		vals[i] = math.Sin(float64(i) * 0.618)
	}
	qkv := writeTestNpy(t, filepath.Join(dir, "qkv.npy"), "<f4", []int{h, n, d}, vals)
	const data = 4 * h * n * d
	out, lse := filepath.Join(dir, "o.npy"), filepath.Join(dir, "l.npy")
	old := []byte("the output of an earlier run\n")
	writeFile(t, out, old)
	for _, tc := range []struct {
		sig  syscall.Signal
		code int
	}{{syscall.SIGINT, 130}, {syscall.SIGTERM, 143}} {
		t.Run(tc.sig.String(), func(t *testing.T) {
			if signal.Ignored(tc.sig) {
				t.Skipf("%v is ignored in this process, so in attn too (started in the background?)", tc.sig)
			}
			cmd := exec.Command(bin, "run", "-backend", "cpu", "-strategy", "fused", "-q", qkv, "-k", qkv, "-v", qkv, "-o", out, "-lse", lse)
			cmd.Env = append(os.Environ(), "GOMAXPROCS=1")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			// Computing starts once Q, K and V are read (3 × 16 MiB): the
			// CPU backend uses them in place, so nothing more is held
			// before it computes (O's 16 MiB comes as it starts).
			deadline := time.Now().Add(time.Minute)
			for {
				rss, ok := vmRSS(cmd.Process.Pid)
				if !ok {
					cmd.Wait()
					t.Fatalf("attn run ended before it computed: exit %d, stderr %q", cmd.ProcessState.ExitCode(), stderr.String())
				}
				if rss > 13*data/4 {
					break
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					cmd.Wait()
					t.Fatalf("attn run did not load its inputs within a minute (RSS %d MiB)", rss>>20)
				}
				time.Sleep(5 * time.Millisecond)
			}
			time.Sleep(200 * time.Millisecond)
			if err := cmd.Process.Signal(tc.sig); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			if code := cmd.ProcessState.ExitCode(); code != tc.code {
				t.Errorf("exit %d (%v), want %d; stdout %q, stderr %q", code, cmd.ProcessState, tc.code, stdout.String(), stderr.String())
			}
			if s := stderr.String(); s != "attn run: interrupted\n" {
				t.Errorf("stderr %q, want \"attn run: interrupted\\n\"", s)
			}
			if b, _ := os.ReadFile(out); !bytes.Equal(b, old) {
				t.Error("the interrupted run changed the earlier output")
			}
			if _, err := os.Stat(lse); err == nil {
				t.Errorf("the interrupted run wrote %s", lse)
			}
			noTemps(t, dir)
		})
	}
}

// TestDevicesLargestBuffer: attn devices gives the CPU backend's largest
// buffer as what the memory available now holds, not a 64 TiB guard.
func TestDevicesLargestBuffer(t *testing.T) {
	before, ok := cpu.AvailableMemory()
	if !ok {
		t.Skip("available memory cannot be read here")
	}
	bin := buildAttn(t)
	code, stdout, stderr := runBinary(t, []string{backend.EnvBackend + "="}, bin, "devices")
	after, _ := cpu.AvailableMemory()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	i := strings.Index(stdout, "cpu:\n")
	if i < 0 {
		t.Fatalf("no cpu entry:\n%s", stdout)
	}
	m := regexp.MustCompile(`\n  largest buffer: (\d+) float32 \(([^)]*)\)\n`).FindStringSubmatch(stdout[i:])
	if m == nil {
		t.Fatalf("the cpu entry gives no largest buffer:\n%s", stdout[i:])
	}
	n, err := strconv.ParseUint(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	// Other processes may allocate or free while it runs.
	const slack = 256 << 20
	if hi := max(before, after); 4*n > hi+slack {
		t.Errorf("largest buffer %d float32 (%s), more than the %s available", n, m[2], sizeString(new(big.Int).SetUint64(hi)))
	}
	if !strings.HasSuffix(m[2], " available now") {
		t.Errorf("largest buffer %q, want the size followed by \"available now\"", m[0])
	}
}

// TestExplainTooLarge: explain refuses, from the header and saying the
// limit, a matrix it would print megabytes of, and still prints one at
// the limit.
func TestExplainTooLarge(t *testing.T) {
	bin := buildAttn(t)
	dir := t.TempDir()
	mat := func(name string, r, c int) string {
		return writeTestNpy(t, filepath.Join(dir, name), "<f4", []int{r, c}, seq(r*c))
	}
	x64, w64 := mat("x64.npy", 64, 64), mat("w64.npy", 64, 64)
	x16, w16, w17 := mat("x16.npy", 16, 16), mat("w16.npy", 16, 16), mat("w17.npy", 16, 17)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-x", x64, "-wq", w64, "-wk", w64, "-wv", w64}, x64 + " is (64, 64)"},
		{[]string{"-x", x16, "-wq", w16, "-wk", w16, "-wv", w17}, w17 + " is (16, 17)"},
	} {
		code, stdout, stderr := runBinary(t, nil, bin, append([]string{"explain", "-backend", "cpu"}, tc.args...)...)
		if code != 1 || !strings.HasPrefix(stderr, "attn explain: ") || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "at most 16×16") {
			t.Errorf("explain %v: exit %d, stderr %q; want 1 and %q, \"at most 16×16\"", tc.args, code, stderr, tc.want)
		}
		if stdout != "" {
			t.Errorf("explain %v printed %d bytes, want nothing", tc.args, len(stdout))
		}
	}
	code, stdout, stderr := runBinary(t, nil, bin, "explain", "-backend", "cpu", "-x", x16, "-wq", w16, "-wk", w16, "-wv", w16)
	if code != 0 || len(stdout) > 128<<10 {
		t.Errorf("explain at 16×16: exit %d, %d bytes of output (want 0 and at most 128 KiB); stderr %q", code, len(stdout), stderr)
	}
	if _, stdout, _ := runBinary(t, nil, bin, "explain", "-h"); !strings.Contains(stdout, "at most 16×16") {
		t.Errorf("explain -h does not give the limit:\n%s", stdout)
	}
}
