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
	foreign, ranged := good, good
	// Another adapter than this one, its name this one's with a suffix:
	// a fixed name would be this very adapter on the machine it was
	// taken from, where the file would apply.
	foreign.Key.Adapter = key.Adapter + " (another)"
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
		// An earlier attn's file, keyed by its module version too.
		{"earlier format", []byte(strings.NewReplacer(plan.TuneFormat, "attn gpu tuning 1", `"kernels"`, `"attn": "v0.0.1", "kernels"`).Replace(string(encode(good)))),
			`format "attn gpu tuning 1", an earlier attn's`},
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

// TestTunedFileModuleVersion: a tuning file that one build of attn wrote
// is read by another whose module version differs, as a program that
// requires attn ("v0.0.0 => …", a tag) reads what attn tune in a clone
// ("(devel)") wrote: the key, and the file's name in the cache
// directory, hold no module version.
func TestTunedFileModuleVersion(t *testing.T) {
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	t.Setenv("ATTN_GPU_TUNE", "")
	t.Setenv(envTuneFile, "") // the cache directory's file, named for the key
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	saved := plan.ModuleVersion
	t.Cleanup(func() { plan.ModuleVersion = saved })

	plan.ModuleVersion = func() string { return "(devel)" }
	b := openTuneBackend(t, "")
	if b.aplan.File != nil {
		t.Fatalf("a tuning file in an empty cache directory: %s", b.Info().Detail)
	}
	path, explicit, err := tuneFilePath(b.tuneKey())
	if err != nil || explicit {
		t.Fatalf("tuneFilePath: %q, %v, %v", path, explicit, err)
	}
	set, err := plan.DefaultTuning().With("decode.batch", 4)
	if err != nil {
		t.Fatal(err)
	}
	class := plan.Class{Kernel: plan.KernelLaneDecode, NQ: 1, G: 4, D: 32, DV: 32, NK: 512}
	res := tuneResult{classes: []*tuneClass{{class: class, best: set, tuned: true}}}
	if err := writeTuned(path, b.tuneKey(), res, false); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), `"writer": "attn (devel)"`) {
		t.Errorf("the file does not name its writer, attn (devel) (%v):\n%s", err, data)
	}

	for _, v := range []string{"v0.0.0 => /home/u/attn", "v1.4.0"} {
		plan.ModuleVersion = func() string { return v }
		b := openTuneBackend(t, "")
		want := "tuned by " + path + ": " + class.String() + ": decode.batch=4"
		if d := b.Info().Detail; b.aplan.File.Len() != 1 || !strings.Contains(d, want) {
			t.Errorf("attn %s did not read the file attn (devel) wrote; Info().Detail does not say %q: %s", v, want, d)
		}
	}

	// Where the cache directory holds only another key's file of this
	// adapter (other kernels), the backend says why that one does not
	// apply.
	other := b.tuneKey()
	other.Kernels = "0123"
	otherPath := filepath.Join(filepath.Dir(path), other.FileName())
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := writeTuned(otherPath, other, res, false); err != nil {
		t.Fatal(err)
	}
	b = openTuneBackend(t, "")
	want := "no tuning file for this adapter, driver, binding and kernels (" + path + "): " + otherPath + ` is not for this build: not a usable tuning file: measured on another device or build: kernels "0123"`
	if d := b.Info().Detail; b.aplan.File != nil || !strings.Contains(d, want) {
		t.Errorf("Info().Detail does not say %q: %s", want, d)
	}
}

// TestTuneRefusedKnobs: a knob's setting that the device cannot run as
// set (lanes past its least subgroup size, tiles past its workgroup
// memory at every head dim) is refused, in ATTN_GPU_TUNE or in a tuning
// file: the default runs instead, Info().Detail says why and does not
// name the setting as applied, and stderr says so once. The table's
// bounds are lavapipe's (CI's adapter): subgroups of 8 and 32 KiB of
// workgroup memory, 16 KiB under ATTN_GPU_LIMITS=default; on another
// adapter the rows whose bounds differ skip.
func TestTuneRefusedKnobs(t *testing.T) {
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	t.Setenv("ATTN_GPU_TUNE", "")
	t.Setenv(envTuneFile, "off")
	probe := openTuneBackend(t, "")
	sg, mem := int(probe.WebGPU().SubgroupMinSize), int(probe.lim.MaxComputeWorkgroupStorageSize)
	class := plan.Class{Kernel: plan.KernelLaneDecode, NQ: 1, G: 4, D: 32, DV: 32, NK: 512}
	for _, c := range []struct {
		name    string
		tune    string // ATTN_GPU_TUNE
		file    string // a tuning file's setting for class, where tune is ""
		env     map[string]string
		sg, mem int    // the adapter's bounds the row is for
		applied string // the sizes that run: the plan's, or the file's for class
		refused string // what Info().Detail says is refused ("": nothing)
	}{
		{name: "lanes past the subgroup", tune: "decode.lanes=64", sg: 8, mem: 32 << 10, applied: "",
			refused: "ATTN_GPU_TUNE's decode.lanes=64 refused (more than the device's least subgroup size, 8, which a team of lanes must lie within), its default 16 used"},
		{name: "lanes past the subgroup, the rest kept", tune: "decode.lanes=32,decode.batch=4", sg: 8, mem: 32 << 10, applied: "decode.batch=4",
			refused: "ATTN_GPU_TUNE's decode.lanes=32 refused (more than the device's least subgroup size, 8"},
		{name: "lanes within the subgroup", tune: "decode.lanes=8", sg: 8, mem: 32 << 10, applied: "decode.lanes=8"},
		{name: "lanes without subgroups", tune: "decode.lanes=4", env: map[string]string{"ATTN_GPU_FEATURES": "subgroups=off"}, sg: 8, mem: 32 << 10, applied: "",
			refused: "ATTN_GPU_TUNE's decode.lanes=4 refused (lanedecode.wgsl's lanes share a key by subgroup shuffles, and the plan has no subgroups"},
		{name: "tile keys past the memory", tune: "tile.keys=128,tile.reg=64", sg: 8, mem: 32 << 10, applied: "tile.reg=64",
			refused: "ATTN_GPU_TUNE's tile.keys=128 refused (fusedtile.wgsl's tiles under it take more than the device's 32768 bytes of workgroup memory at every head dim: the planner runs 64 at most), its default 32 used"},
		{name: "tile keys within the memory", tune: "tile.keys=128,tile.rows=8,tile.reg=64", sg: 8, mem: 32 << 10, applied: "tile.rows=8,tile.keys=128,tile.reg=64"},
		{name: "tile keys past the default limits", tune: "tile.keys=256,tile.rows=8,tile.reg=64", env: map[string]string{envLimits: "default"}, sg: 8, mem: 32 << 10, applied: "tile.rows=8,tile.reg=64",
			refused: "ATTN_GPU_TUNE's tile.keys=256 refused (fusedtile.wgsl's tiles under it take more than the device's 16384 bytes"},
		{name: "a file's lanes past the subgroup", file: "decode.lanes=32,decode.batch=4", sg: 8, mem: 32 << 10, applied: "decode.batch=4",
			refused: ": " + class.String() + ": decode.lanes=32 refused (more than the device's least subgroup size, 8"},
		{name: "a file's lanes within the subgroup", file: "decode.lanes=8,decode.batch=4", sg: 8, mem: 32 << 10, applied: "decode.lanes=8,decode.batch=4"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if sg != c.sg || mem != c.mem {
				t.Skipf("the row is for subgroups of %d and %d bytes of workgroup memory; this adapter's are %d and %d", c.sg, c.mem, sg, mem)
			}
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			t.Setenv("ATTN_GPU_TUNE", c.tune)
			path := "off"
			if c.file != "" {
				path = filepath.Join(t.TempDir(), "tuned.json")
				f := plan.TuneFile{Format: plan.TuneFormat, Key: probe.tuneKey(), Classes: []plan.TunedClass{{Class: class, Tune: c.file}}}
				data, err := plan.EncodeTuned(f)
				if err == nil {
					err = os.WriteFile(path, data, 0o644)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			var warned bytes.Buffer
			tuneWarnings.Lock()
			saved := tuneWarnings.w
			tuneWarnings.w, tuneWarnings.seen = &warned, nil // a warning written before is written again
			tuneWarnings.Unlock()
			defer func() {
				tuneWarnings.Lock()
				tuneWarnings.w = saved
				tuneWarnings.Unlock()
			}()
			b := openTuneBackend(t, path)
			d := b.Info().Detail
			got := b.aplan.Tune.String()
			if c.file != "" {
				tn, ok := b.aplan.File.For(class)
				if !ok {
					t.Fatalf("the file was not read: %s", d)
				}
				got = tn.String()
				if want := "tuned by " + path + ": " + class.String() + ": " + c.applied; !strings.Contains(d, want) {
					t.Errorf("Info().Detail does not say %q: %s", want, d)
				}
			} else if c.applied != "" && !strings.Contains(d, "tuned "+c.applied+";") {
				t.Errorf("Info().Detail does not say %q: %s", "tuned "+c.applied, d)
			}
			if got != c.applied {
				t.Errorf("the sizes %q run; want %q", got, c.applied)
			}
			switch {
			case c.refused == "" && strings.Contains(d, "refused"):
				t.Errorf("Info().Detail says something was refused: %s", d)
			case c.refused != "" && !strings.Contains(d, c.refused):
				t.Errorf("Info().Detail does not say %q: %s", c.refused, d)
			case c.refused != "" && (strings.Count(warned.String(), "\n") != 1 || !strings.Contains(warned.String(), c.refused)):
				t.Errorf("stderr %q; want one line saying %q", warned.String(), c.refused)
			}
			if c.tune != "" && c.refused != "" && strings.Contains(d, "tuned "+c.tune) {
				t.Errorf("Info().Detail names the refused setting as applied: %s", d)
			}
		})
	}
}

// TestTunePartBlocks: a sweep takes q8 and q4 at head dims that are not
// whole blocks, as a cache does: K and V are stored a row in whole
// blocks, zeros past the head dim, the shape's class is that of the
// problem the kernels run (its head dims the pitches), and the defaults
// answer as the CPU backend does (a sweep's check).
func TestTunePartBlocks(t *testing.T) {
	t.Setenv("ATTN_GPU_PLAN", "hardware")
	t.Setenv("ATTN_GPU_TUNE", "")
	b := openTuneBackend(t, "off")
	for _, spec := range []string{"heads=4,kvheads=1,d=40,n=200,nq=1,dtype=q8", "heads=4,kvheads=1,d=40,n=200,nq=1,dtype=q4"} {
		t.Run(spec, func(t *testing.T) {
			tc := tuneCaseOn(t, b, spec)
			const pitch = 64 // 40 in whole blocks of 32
			if n := tc.k.Len(); n != tc.p.KVHeads*tc.p.Nk*pitch {
				t.Errorf("K holds %d values; want rows of %d", n, pitch)
			}
			cls := plan.ClassOf(b.choices.get(choiceKey{b.aplan, int(b.lim.MaxComputeWorkgroupStorageSize), tc.fs}), tc.fs)
			if cls.D != pitch || cls.DV != pitch || cls.Kernel == "" {
				t.Errorf("class %v; want head dims of %d", cls, pitch)
			}
			fusedRight(t, b, tc)
		})
	}
}
