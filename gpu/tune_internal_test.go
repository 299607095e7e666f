//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	_ "github.com/attn-go/attn/cpu" // the reference a sweep checks against
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/internal/gputest"
)

// The sweep's tests run on lavapipe (CI's adapter) under the hardware
// plan, whose kernels the knobs size; without an adapter they skip,
// unless ATTN_REQUIRE_GPU=1.

// tuneShape is the small decoding shape the sweep's tests time: one
// class of lanedecode.wgsl (lavapipe has subgroups), cheap on lavapipe. otherShape is of
// another class (its head dims differ).
const (
	tuneShape  = "heads=4,kvheads=1,d=32,n=512,nq=1,dtype=f16"
	otherShape = "heads=4,kvheads=1,d=64,n=512,nq=1,dtype=f16"
)

// openTuneBackend opens a backend as a program would after a sweep: New,
// reading the tuning file at path ("" leaves ATTN_GPU_TUNE_FILE as it
// is).
func openTuneBackend(t *testing.T, path string) *Backend {
	t.Helper()
	if path != "" {
		t.Setenv(envTuneFile, path)
	}
	return gputest.Open(t, New)
}

// tuneCaseOn sets shape spec up on b with the CPU backend's answer.
func tuneCaseOn(t *testing.T, b *Backend, spec string) *tuneCase {
	t.Helper()
	shapes, err := plan.ParseTuneShapes([]string{spec})
	if err != nil {
		t.Fatal(err)
	}
	ref, err := backend.Open("cpu")
	if err != nil {
		t.Fatal(err)
	}
	defer ref.Close()
	c, err := newTuneCase(context.Background(), b, ref, shapes[0], 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.release)
	return c
}

// fusedRight runs case c on b as a caller would, under b's own plan
// (the tuning file's sizes where it has some), and checks the answer.
func fusedRight(t *testing.T, b *Backend, c *tuneCase) {
	t.Helper()
	if err := b.Fused(context.Background(), c.p, c.q, c.k, c.v, c.o, nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Read(c.got, c.o, 0); err != nil {
		t.Fatal(err)
	}
	if err := compareRows(c.got, c.ref, c.p.Dv, c.slack); err != nil {
		t.Errorf("%v under the tuning file: %v", c.shape, err)
	}
}

// TestTuneSweep runs a sweep over one knob at two shapes of two classes,
// with a fake that, at the first, makes one candidate answer wrongly and
// run fastest of all and another run in half its time, and at the second
// makes every candidate slower than the defaults. At the first the wrong
// one must be dropped and reported, never chosen, and the half-time one
// must win and be written; at the second the file must say the defaults
// stay. The next backend reads the file back, says so in Info().Detail,
// runs the first class's problems with the winner (right answers) and
// the second's, and a class the file does not name, with the defaults.
func TestTuneSweep(t *testing.T) {
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	t.Setenv("ATTN_GPU_TUNE", "")
	path := filepath.Join(t.TempDir(), "tuned.json")
	var out bytes.Buffer
	wrong, fast := "decode.batch=1", "decode.batch=4"
	fake := func(s plan.TuneShape, tn plan.Tuning) (bool, float64) {
		if s.D != 32 {
			if tn != plan.DefaultTuning() {
				return false, 2
			}
			return false, 1
		}
		switch tn.String() {
		case wrong:
			return true, 0.01
		case fast:
			return false, 0.5
		}
		return false, 1
	}
	// The races run a fixed count of rounds, so the budget only bounds
	// a host whose compiles are slow (the gogpu binding's naga).
	res, err := tune(context.Background(), tuneConfig{budget: 10 * time.Minute, out: &out, shapes: []string{tuneShape, otherShape},
		file: path, knobs: []string{"decode.batch"}, fake: fake, rounds: 5})
	t.Logf("the sweep's report:\n%s", out.String())
	if err != nil {
		if errors.Is(err, backend.ErrUnavailable) {
			gputest.Unavailable(t, err)
		}
		t.Fatal(err)
	}
	if len(res.classes) != 2 || res.classes[0].class.Kernel != plan.KernelLaneDecode || res.classes[1].class.Kernel != plan.KernelLaneDecode {
		t.Fatalf("classes %v; want two of %s", res.classes, plan.KernelLaneDecode)
	}
	cl, kept := res.classes[0], res.classes[1]
	if kept.tuned || !kept.kept || kept.best != plan.DefaultTuning() {
		t.Errorf("%v: winner %q (tuned %v, kept %v: %s); want the defaults kept", kept.class, kept.best, kept.tuned, kept.kept, kept.note)
	}
	if !cl.tuned || cl.best.String() != fast {
		t.Errorf("winner %q (tuned %v: %s); want %s", cl.best, cl.tuned, cl.note, fast)
	}
	if len(cl.dropped) != 1 || !strings.HasPrefix(cl.dropped[0], wrong+": wrong answer") {
		t.Errorf("dropped %q; want %s, for a wrong answer", cl.dropped, wrong)
	}
	if !strings.Contains(out.String(), "dropped "+wrong) {
		t.Errorf("the report does not name the dropped %s", wrong)
	}

	b := openTuneBackend(t, path)
	want := "tuned by " + path + ": " + cl.class.String() + ": " + fast + "; " + kept.class.String() + ": the defaults (swept, none faster)"
	if d := b.Info().Detail; !strings.Contains(d, want) {
		t.Errorf("Info().Detail does not say %q: %s", want, d)
	}
	c := tuneCaseOn(t, b, tuneShape)
	if got := b.planFor(c.p.Problem).Tune.String(); got != fast {
		t.Errorf("%s runs with %q; want the file's %s", tuneShape, got, fast)
	}
	fusedRight(t, b, c)
	for _, spec := range []string{otherShape, "heads=4,kvheads=2,d=32,n=512,nq=1,dtype=f16"} {
		o := tuneCaseOn(t, b, spec)
		if got := b.planFor(o.p.Problem).Tune; got != plan.DefaultTuning() {
			t.Errorf("%s runs with %q; want the defaults", spec, got)
		}
		fusedRight(t, b, o)
	}
}

// TestTuneRefuses: a sweep needs the hardware plan, the defaults to start
// from and somewhere to write; bad shapes and budgets are errors
// naming them.
func TestTuneRefuses(t *testing.T) {
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	openTuneBackend(t, "off") // skips where no adapter opens
	t.Setenv(envTuneFile, filepath.Join(t.TempDir(), "never.json"))
	for _, c := range []struct {
		name, plan, tune, file string
		budget                 time.Duration
		shapes                 []string
		want                   error
		text                   string
	}{
		{name: "budget", plan: "hardware", budget: 0, want: backend.ErrShape, text: "budget 0s"},
		{name: "shape", plan: "hardware", budget: time.Second, shapes: []string{"heads=6,kvheads=4"}, want: backend.ErrShape, text: "heads=6 is not a multiple of kvheads=4"},
		{name: "cpu plan", plan: "cpu", budget: time.Second, shapes: []string{tuneShape}, want: backend.ErrUnavailable, text: "runs the cpu plan"},
		{name: "tune set", plan: "hardware", tune: "decode.wg=64", budget: time.Second, shapes: []string{tuneShape}, want: backend.ErrUnavailable, text: "ATTN_GPU_TUNE sets decode.wg=64"},
		{name: "file off", plan: "hardware", file: "off", budget: time.Second, shapes: []string{tuneShape}, want: backend.ErrUnavailable, text: "ATTN_GPU_TUNE_FILE=off"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("ATTN_GPU_PLAN", c.plan)
			t.Setenv("ATTN_GPU_TUNE", c.tune)
			if c.file != "" {
				t.Setenv(envTuneFile, c.file)
			}
			_, err := Tune(context.Background(), c.budget, nil, c.shapes...)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.text) {
				t.Errorf("Tune: %v; want an error wrapping %v that says %q", err, c.want, c.text)
			}
		})
	}
	if _, err := os.Stat(os.Getenv(envTuneFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused sweep wrote its file: %v", err)
	}
}

// TestTunedFileFallback: a tuning file that cannot be used whole (not
// JSON, of another device, out of the knobs' ranges, unreadable) is
// ignored with one warning however many backends open, the backend opens
// with the defaults and says why in Info().Detail; "off" reads none.
// ReadTuned's own test (package plan) covers every reason; these are one
// of each kind, through New.
func TestTunedFileFallback(t *testing.T) {
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	t.Setenv("ATTN_GPU_TUNE", "")
	t.Setenv(envTuneFile, "off")
	key := openTuneBackend(t, "").tuneKey()
	good := plan.TuneFile{Format: plan.TuneFormat, Key: key, Classes: []plan.TunedClass{{
		Class: plan.Class{Kernel: plan.KernelDecode, NQ: 1, G: 4, D: 32, DV: 32, NK: 512}, Tune: "decode.keys=128"}}}
	encode := func(f plan.TuneFile) []byte {
		b, err := plan.EncodeTuned(f)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	foreign, versioned, ranged := good, good, good
	// Another adapter than this one: a fixed name was this one on the
	// H200 it named (2026-11-28).
	foreign.Key.Adapter = key.Adapter + " (another)"
	versioned.Key.Attn = "v0.0.1"
	ranged.Classes = []plan.TunedClass{good.Classes[0]}
	ranged.Classes[0].Tune = "decode.keys=512"
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		data []byte // nil: path is a directory
		why  string
	}{
		{"corrupt", encode(good)[:40], "unexpected EOF"},
		{"foreign device", encode(foreign), fmt.Sprintf("adapter %q", foreign.Key.Adapter)},
		{"foreign version", encode(versioned), `attn version "v0.0.1"`},
		{"out of range", encode(ranged), "decode.keys=512: want a power of two from"},
		{"unreadable", nil, "not a regular file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".json")
			var err error
			if c.data == nil {
				err = os.Mkdir(path, 0o755)
			} else {
				err = os.WriteFile(path, c.data, 0o644)
			}
			if err != nil {
				t.Fatal(err)
			}
			var warned bytes.Buffer
			tuneWarnings.Lock()
			saved := tuneWarnings.w
			tuneWarnings.w = &warned
			tuneWarnings.Unlock()
			defer func() {
				tuneWarnings.Lock()
				tuneWarnings.w = saved
				tuneWarnings.Unlock()
			}()
			for range 2 {
				b := openTuneBackend(t, path)
				if b.aplan.File != nil || b.aplan.Tune != plan.DefaultTuning() {
					t.Errorf("the plan took sizes from a file it ignores: %+v", b.aplan)
				}
				d := b.Info().Detail
				if !strings.Contains(d, "tuning file "+path+" ignored, the default sizes used") || !strings.Contains(d, c.why) {
					t.Errorf("Info().Detail does not say the file was ignored because %q: %s", c.why, d)
				}
			}
			if w := warned.String(); strings.Count(w, "\n") != 1 || !strings.Contains(w, path) || !strings.Contains(w, c.why) {
				t.Errorf("warnings %q; want one line naming %s and %q", w, path, c.why)
			}
		})
	}
	t.Run("good", func(t *testing.T) {
		path := filepath.Join(dir, "good.json")
		if err := os.WriteFile(path, encode(good), 0o644); err != nil {
			t.Fatal(err)
		}
		b := openTuneBackend(t, path)
		if b.aplan.File.Len() != 1 || !strings.Contains(b.Info().Detail, "tuned by "+path) {
			t.Errorf("the file was not read: %s", b.Info().Detail)
		}
		t.Setenv("ATTN_GPU_TUNE", "decode.wg=128")
		b = openTuneBackend(t, path)
		if b.aplan.File != nil || !strings.Contains(b.Info().Detail, "tuning file not read: ATTN_GPU_TUNE sets the sizes") {
			t.Errorf("under ATTN_GPU_TUNE the file was read: %s", b.Info().Detail)
		}
		t.Setenv("ATTN_GPU_TUNE", "")
		b = openTuneBackend(t, "off")
		if b.aplan.File != nil || !strings.Contains(b.Info().Detail, "tuning file off") {
			t.Errorf("ATTN_GPU_TUNE_FILE=off: %s", b.Info().Detail)
		}
	})
}
