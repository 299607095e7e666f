package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestBinary builds the real command and runs bad inputs through it: the
// process must exit non-zero with a message, never a panic.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped in -short")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "attn")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
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
