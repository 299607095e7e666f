package main

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunPendingNamesTarget drives an output's temporary file through
// each way it can fail after it was reserved: a failed write (the file
// closed under it) and a failed rename (the target replaced by a
// directory). Each message names the target and never the temporary
// file, and the temporary file is gone.
func TestRunPendingNamesTarget(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "o.npy")
	check := func(what string, err error, tmp string) {
		t.Helper()
		if err == nil {
			t.Fatalf("%s: no error", what)
		}
		if !strings.Contains(err.Error(), target) || strings.Contains(err.Error(), filepath.Base(tmp)) {
			t.Errorf("%s: %q, want it to name %s and not the temporary %s", what, err, target, tmp)
		}
		if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s: the temporary file %s is still there (%v)", what, tmp, err)
		}
	}

	p, err := reserve("-o", target)
	if err != nil {
		t.Fatal(err)
	}
	tmp := p.tmp
	p.f.Close() // the write fails on a closed file
	err = p.write(func(w io.Writer) error {
		_, err := w.Write(make([]byte, 1<<17)) // past bufio's buffer: reaches the file
		return err
	})
	check("write", err, tmp)

	p, err = reserve("-o", target)
	if err != nil {
		t.Fatal(err)
	}
	tmp = p.tmp
	if err := p.write(writeBytes([]byte("data"))); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(target, "x"), 0o755); err != nil { // a non-empty directory: rename cannot replace it
		t.Fatal(err)
	}
	check("commit", p.commit(), tmp)
	p.discard() // a no-op after a failed commit
	noTemps(t, dir)
}
