package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadNpy feeds arbitrary bytes to the .npy reader: it may reject
// them but must not panic or allocate beyond what the file holds.
func FuzzReadNpy(f *testing.F) {
	f.Add(encodeTest("<f4", false, []int{2, 3}, seq(6)))
	f.Add(encodeTest(">f8", true, []int{2, 3, 2}, seq(12)))
	f.Add(encodeTest("|b1", false, []int{4}, []float64{1, 0, 1, 1}))
	f.Add(npyHeader(2, "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }"))
	f.Add(npyHeader(3, "{'shape': (2,), 'descr': '<f4', 'fortran_order': False}"))
	f.Add([]byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<f4'}"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "fuzz.npy")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		nf, err := openNpy(path)
		if err != nil {
			return
		}
		defer nf.f.Close()
		if int64(nf.n*nf.dtype.size) > int64(len(b)) {
			t.Fatalf("accepted shape %v of %s for a %d-byte file", nf.shape, nf.dtype.descr, len(b))
		}
		if a, err := nf.readFloats(context.Background()); err == nil {
			a.checkFinite(true)
		}
		nf.readKeep(context.Background())
	})
}
