package plan

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestNoCgo checks that this package, with its tests, imports no cgo
// package, directly or not: no dependency has cgo files (as a cgo build
// lists them, whatever this run's CGO_ENABLED), none is runtime/cgo, and
// none is package wg, the WebGPU binding. The planner is read and tested
// apart from the device so that it builds, and its tests run, everywhere
// (CGO_ENABLED=0, -tags nogpu, any GOOS); package gpu runs what it plans.
func TestNoCgo(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command to list the imports with: %v", err)
	}
	cmd := exec.Command(goCmd, "list", "-deps", "-test", "-json=ImportPath,CgoFiles", ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps -test: %v\n%s", err, stderr.String())
	}
	n := 0
	for dec := json.NewDecoder(strings.NewReader(string(out))); ; n++ {
		var p struct {
			ImportPath string
			CgoFiles   []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list's output: %v", err)
		}
		path, _, _ := strings.Cut(p.ImportPath, " ") // a test variant's "p [p.test]"
		switch {
		case len(p.CgoFiles) > 0:
			t.Errorf("%s has cgo files %v", p.ImportPath, p.CgoFiles)
		case path == "runtime/cgo":
			t.Errorf("runtime/cgo is among the dependencies")
		case path == "github.com/attn-go/attn/gpu/internal/wg":
			t.Errorf("%s, the cgo WebGPU binding, is among the dependencies", path)
		}
	}
	if n < 2 {
		t.Fatalf("go list listed %d packages: %s", n, out)
	}
}
