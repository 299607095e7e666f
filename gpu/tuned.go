//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/wg"
)

// envTuneFile says where the tuning file is (attn tune writes it, New
// reads it): unset or empty, the user's cache directory, in a file named
// for the adapter, driver, binding and build (tuneFilePath); "off", no
// file is read; anything else, the path of the file.
const envTuneFile = "ATTN_GPU_TUNE_FILE"

// tuneKey is what this backend's sizes are measured on (plan.TuneKey).
func (b *Backend) tuneKey() plan.TuneKey {
	a := b.info.Adapter
	return plan.TuneKey{
		Adapter: a.Name, VendorID: a.VendorID, DeviceID: a.DeviceID, Driver: a.Driver, DriverInfo: a.DriverInfo,
		Binding: wg.Versions(), Attn: plan.AttnVersion(), Kernels: plan.KernelsID(),
	}
}

// tuneFilePath is the tuning file of key under ATTN_GPU_TUNE_FILE: ""
// when it is off; explicit when the variable names the path, so that a
// missing file is worth a warning. The error is os.UserCacheDir's, when
// the path is the cache directory's and there is none.
func tuneFilePath(key plan.TuneKey) (path string, explicit bool, err error) {
	switch v := strings.TrimSpace(os.Getenv(envTuneFile)); {
	case strings.EqualFold(v, "off"):
		return "", false, nil
	case v != "":
		return v, true, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", false, backend.Errorf(backend.ErrUnavailable, "gpu: no cache directory for the tuning file (%s names a path): %v", envTuneFile, err)
	}
	return filepath.Join(dir, "attn", "gpu-tune", key.FileName()), false, nil
}

// readTuned applies the tuning file, where there is one, to b's plan and
// says so in Info().Detail: which classes it tunes and how, or why it was
// not read. Only the hardware plan runs the kernels it sizes, and
// ATTN_GPU_TUNE, a measurement's settings, overrides it. A file that
// cannot be used whole is ignored, with one warning on stderr a process
// (warnTuned): its sizes never reach a kernel, so it can cost speed,
// never an answer.
func (b *Backend) readTuned() {
	if !b.aplan.Hardware {
		return
	}
	if b.aplan.Tune != plan.DefaultTuning() {
		b.info.Detail += "; tuning file not read: ATTN_GPU_TUNE sets the sizes"
		return
	}
	key := b.tuneKey()
	path, explicit, err := tuneFilePath(key)
	switch {
	case err != nil:
		// No cache directory ($HOME unset, say): no file to read, as
		// none has been written.
		return
	case path == "":
		b.info.Detail += "; tuning file off (" + envTuneFile + "=off)"
		return
	}
	t, err := readTunedFile(path, key)
	switch {
	case errors.Is(err, fs.ErrNotExist) && !explicit:
		return
	case err != nil:
		msg := fmt.Sprintf("tuning file %s ignored, the default sizes used: %v", path, err)
		warnTuned(msg)
		b.info.Detail += "; " + msg
		return
	}
	b.aplan.File = t
	b.info.Detail += fmt.Sprintf("; tuned by %s: %s", path, t)
}

// readTunedFile opens and reads the tuning file at path for key.
func readTunedFile(path string, key plan.TuneKey) (*plan.Tuned, error) {
	// A FIFO or a device would block the open or the read, or never end.
	if st, err := os.Stat(path); err != nil {
		return nil, err
	} else if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: not a regular file (%v)", plan.ErrTuneFile, st.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return plan.ReadTuned(f, path, key)
}

// tuneWarnings is where warnTuned writes (stderr; tests look at it) and
// the warnings it has written.
var tuneWarnings = struct {
	sync.Mutex
	w    io.Writer
	seen map[string]bool
}{w: os.Stderr}

// warnTuned writes msg to stderr once a process: every backend opened
// says it in its Info().Detail, and a program that opens many would
// otherwise repeat it for each.
func warnTuned(msg string) {
	tuneWarnings.Lock()
	defer tuneWarnings.Unlock()
	if tuneWarnings.seen[msg] {
		return
	}
	if tuneWarnings.seen == nil {
		tuneWarnings.seen = map[string]bool{}
	}
	tuneWarnings.seen[msg] = true
	fmt.Fprintf(tuneWarnings.w, "attn: gpu: %s\n", msg)
}

// planFor is the plan Fused runs p with: b's, with the tuning file's
// sizes for p's class where it has some. The class is of the kernel the
// plan's own sizes choose, so that a file's entry, written for the
// kernel a sweep found, applies to the problems that kernel runs.
func (b *Backend) planFor(p backend.Problem) plan.AdapterPlan {
	a := b.aplan
	if a.File == nil {
		return a
	}
	s := plan.ShapeOf(p)
	base := b.choices.get(choiceKey{a, int(b.lim.MaxComputeWorkgroupStorageSize), s})
	if base == nil {
		return a
	}
	return a.ForShape(base, s)
}
