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
// for its key, the adapter, driver, binding and kernels (tuneFilePath);
// "off", no file is read; anything else, the path of the file.
const envTuneFile = "ATTN_GPU_TUNE_FILE"

// tuneKey is what this backend's sizes are measured on (plan.TuneKey):
// no module version of attn's, so that a program requiring attn reads
// the file that attn tune, built in a clone, wrote.
func (b *Backend) tuneKey() plan.TuneKey {
	return plan.KeyOf(b.info.Adapter, wg.Versions())
}

// bounds is what of b's device bounds the knobs (plan.Fit).
func (b *Backend) bounds() plan.DeviceBounds {
	return plan.DeviceBounds{
		Invocations: int(b.lim.MaxComputeInvocationsPerWorkgroup),
		SizeX:       int(b.lim.MaxComputeWorkgroupSizeX),
		Memory:      int(b.lim.MaxComputeWorkgroupStorageSize),
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

// applyTuning settles b's sizes once init knows the device's least
// subgroup size: ATTN_GPU_TUNE's, less what the device cannot run
// (plan.Fit), then, where readFile says, the tuning file's (readTuned).
// Info().Detail names the plan with the sizes applied, and each setting
// refused with why; a refusal is also written to stderr once a process
// (warnTuned), as a file ignored is.
func (b *Backend) applyTuning(readFile bool) {
	b.envTune = b.aplan.Tune
	var refused []plan.Refusal
	b.aplan.Tune, refused = b.aplan.Fit(b.aplan.Tune, b.bounds())
	b.info.Detail += "; plan " + b.aplan.String()
	if len(refused) > 0 {
		msg := "ATTN_GPU_TUNE's " + plan.JoinRefusals(refused)
		warnTuned(msg)
		b.info.Detail += "; " + msg
	}
	if readFile {
		b.readTuned()
	}
}

// readTuned applies the tuning file, where there is one, to b's plan and
// says so in Info().Detail: which classes it tunes and how, each setting
// the device cannot run refused (plan.Fit), or why the file was not
// read. Only the hardware plan runs the kernels it sizes, and
// ATTN_GPU_TUNE, a measurement's settings, overrides it. A file that
// cannot be used whole is ignored, with one warning on stderr a process
// (warnTuned): its sizes never reach a kernel, so it can cost speed,
// never an answer. Where the cache directory has no file for b's key,
// Info().Detail says so only where it has files of the same adapter for
// other keys (an earlier attn's, another binding's), with why the
// newest of them does not apply.
func (b *Backend) readTuned() {
	if !b.aplan.Hardware {
		return
	}
	if b.target != nil {
		b.info.Detail += "; tuning file not read: the plan is " + b.target.Name + "'s"
		return
	}
	if b.envTune != plan.DefaultTuning() {
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
		if why := otherTuned(path, key); why != "" {
			b.info.Detail += "; no tuning file for this adapter, driver, binding and kernels (" + path + "): " + why
		}
		return
	case err != nil:
		msg := fmt.Sprintf("tuning file %s ignored, the default sizes used: %v", path, err)
		warnTuned(msg)
		b.info.Detail += "; " + msg
		return
	}
	bounds := b.bounds()
	t, refused := t.Fit(func(tn plan.Tuning) (plan.Tuning, []plan.Refusal) { return b.aplan.Fit(tn, bounds) })
	b.aplan.File = t
	b.info.Detail += fmt.Sprintf("; tuned by %s: %s", path, t)
	if len(refused) > 0 {
		msg := fmt.Sprintf("tuning file %s: %s", path, strings.Join(refused, "; "))
		warnTuned(msg)
		b.info.Detail += "; " + msg
	}
}

// otherTuned says why the newest tuning file beside path (the cache
// directory's file of key, which is not there) of the same adapter (its
// name's prefix) does not apply: "" where there is none. It looks at the
// directory's first maxOtherTuned entries, and reads only the newest.
func otherTuned(path string, key plan.TuneKey) string {
	const maxOtherTuned = 64
	dir, name := filepath.Split(path)
	slug := name[:strings.LastIndexByte(name, '-')+1]
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var newest fs.FileInfo
	for i, e := range entries {
		if i == maxOtherTuned {
			break
		}
		if !strings.HasPrefix(e.Name(), slug) || !strings.HasSuffix(e.Name(), ".json") || !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil && (newest == nil || info.ModTime().After(newest.ModTime())) {
			newest = info
		}
	}
	if newest == nil {
		return ""
	}
	other := filepath.Join(dir, newest.Name())
	if _, err := readTunedFile(other, key); err != nil {
		return fmt.Sprintf("%s is not for this build: %v", other, err)
	}
	return other + " is of this key under another name"
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
