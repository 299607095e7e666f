package shaders

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"sync"
)

// SourceHash is a digest of every kernel's WGSL source as this binary
// embeds it. A tuning file records it (package plan's TuneKey), so that a
// build whose kernels differ, even one that reports the same version
// (a development build), reads no sizes measured on other kernels.
var SourceHash = sync.OnceValue(func() string {
	h := sha256.New()
	// WalkDir visits in lexical order, so the digest is the same for
	// the same files.
	err := fs.WalkDir(files, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := files.ReadFile(path)
		if err != nil {
			return err
		}
		h.Write([]byte(path))
		h.Write([]byte{0})
		h.Write(b)
		h.Write([]byte{0})
		return nil
	})
	if err != nil {
		// The files are embedded: reading them cannot fail, and a
		// digest of nothing would match another build's.
		panic("shaders: reading the embedded sources: " + err.Error())
	}
	return hex.EncodeToString(h.Sum(nil))
})
