package plan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/gogpu/gputypes"

	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file is the plan's side of attn tune: the knobs as a sweep walks
// them, the shape classes a tuning file's settings apply to, and the file
// itself, read and checked before any of it is used. Package gpu sweeps,
// times and writes (gpu/tune.go) and reads the file at New (gpu/tuned.go).

// KnobInfo is one knob of ATTN_GPU_TUNE as a sweep sees it: its name,
// its range (powers of two from Lo to Hi) and its default.
type KnobInfo struct {
	Name    string
	Lo, Hi  int
	Default int
}

// Tuned kernels: the hardware plan's fused kernels whose sizes the knobs
// set, by their names (KernelName).
const (
	KernelDecode     = "fuseddecode"
	KernelLaneDecode = "lanedecode"
	KernelTile       = "fusedtile"
	KernelLoop       = "fusedloop"
)

// KnobsFor is the knobs that size kernel, in the table's order: its own
// (decode.*, tile.*, loop.*), split.target for the kernels that split
// by it, and merge.wgsl's, which folds every split kernel's parts.
// step.flush sizes a Step, not a kernel, and is no kernel's.
func KnobsFor(kernel string) []KnobInfo {
	var ks []KnobInfo
	for _, k := range knobs {
		if knobSizes(k.name, kernel) {
			ks = append(ks, KnobInfo{Name: k.name, Lo: k.lo, Hi: k.hi, Default: *k.field(&defaultTuning)})
		}
	}
	return ks
}

// knobSizes says whether the knob called name sizes kernel.
func knobSizes(name, kernel string) bool {
	family, _, _ := strings.Cut(name, ".")
	switch family {
	case "decode":
		// lanedecode.wgsl's own (decode.lanes=1 hands its class to
		// fuseddecode.wgsl), and those of fuseddecode.wgsl's that size
		// both; fuseddecode.wgsl runs where there are no lanes to size.
		switch name {
		case "decode.lanes", "decode.batch":
			return kernel == KernelLaneDecode
		case "decode.wg", "decode.rows", "decode.wide", "decode.target", "decode.split":
			return kernel == KernelDecode || kernel == KernelLaneDecode
		}
		return kernel == KernelDecode
	case "tile":
		return kernel == KernelTile
	case "loop":
		return kernel == KernelLoop
	case "merge":
		return kernel == KernelDecode || kernel == KernelLaneDecode || kernel == KernelTile || kernel == KernelLoop
	case "split":
		return kernel == KernelTile || kernel == KernelLoop
	}
	return false
}

// DefaultTuning is the hardware plan's sizes without ATTN_GPU_TUNE.
func DefaultTuning() Tuning { return defaultTuning }

// Value is the knob called name's value in t; ok is false for no knob.
func (t Tuning) Value(name string) (v int, ok bool) {
	for _, k := range knobs {
		if k.name == name {
			return *k.field(&t), true
		}
	}
	return 0, false
}

// With is t with the knob called name set to v; an error where there is
// no such knob or v is not a power of two in its range.
func (t Tuning) With(name string, v int) (Tuning, error) {
	for _, k := range knobs {
		if k.name == name {
			if v < k.lo || v > k.hi || v&(v-1) != 0 {
				return t, fmt.Errorf("%s=%d: want a power of two from %d to %d (%s)", name, v, k.lo, k.hi, k.what)
			}
			*k.field(&t) = v
			return t, nil
		}
	}
	return t, fmt.Errorf("no knob %q (the knobs: %s)", name, knobNames())
}

// Neighbours is the values a sweep tries for k from v: the powers of two
// within a factor of four of v and within k's range, v left out, in
// ascending order. A factor of four each way keeps a knob's candidates
// to four while reaching the next sizes that change a kernel's occupancy
// or unrolling noticeably; a sweep that moves a knob can move it again
// from there on its next pass.
func Neighbours(k KnobInfo, v int) []int {
	var out []int
	for x := max(k.Lo, v/4); x <= min(k.Hi, 4*v) && x > 0; x *= 2 {
		if x != v && x&(x-1) == 0 {
			out = append(out, x)
		}
	}
	return out
}

// Class is the shape class a tuning file's entry applies to: the fused
// kernel the defaults run (KernelName), the query rows of a sequence and
// the keys, each rounded up to a power of two, the query heads of a KV
// head and the head dims, exact. The kernels' sizes follow the head dims
// and the group closely, and the rows and keys by their magnitude.
type Class struct {
	Kernel string `json:"kernel"`
	NQ     int    `json:"nq"`
	G      int    `json:"g"`
	D      int    `json:"d"`
	DV     int    `json:"dv"`
	NK     int    `json:"nk"`
}

// KernelName is k's kernel's name: the first word of its String
// (lanedecode, fuseddecode, fusedtile, fusedloop, fused); "" for none.
func KernelName(k FusedKernel) string {
	if k == nil {
		return ""
	}
	name, _, _ := strings.Cut(k.String(), " ")
	return name
}

// ClassOf is the class of a problem of shape s that the defaults run
// with kernel k.
func ClassOf(k FusedKernel, s FusedShape) Class {
	return Class{Kernel: KernelName(k), NQ: ceilPow2(s.nq), G: s.g, D: s.d, DV: s.dv, NK: ceilPow2(s.nk)}
}

// ceilPow2 is the least power of two at least n (1 for n ≤ 1).
func ceilPow2(n int) int {
	if n <= 1 {
		return 1
	}
	if n > 1<<62 {
		return 1 << 62
	}
	return 1 << bits.Len(uint(n-1))
}

func (c Class) String() string {
	return fmt.Sprintf("%s nq≤%d g=%d d=%d dv=%d nk≤%d", c.Kernel, c.NQ, c.G, c.D, c.DV, c.NK)
}

// Tuned is a tuning file's settings, by class, as New read them.
type Tuned struct {
	// Path is the file they were read from.
	Path    string
	classes map[Class]Tuning
	order   []Class // as the file lists them
}

// Len is the classes t tunes.
func (t *Tuned) Len() int {
	if t == nil {
		return 0
	}
	return len(t.order)
}

// For is the sizes t sets for class c; ok is false where it sets none
// (the plan's own sizes apply).
func (t *Tuned) For(c Class) (Tuning, bool) {
	if t == nil {
		return Tuning{}, false
	}
	tn, ok := t.classes[c]
	return tn, ok
}

// String lists each class with its settings, as Info().Detail says them.
func (t *Tuned) String() string {
	if t.Len() == 0 {
		return "no shape class tuned"
	}
	s := make([]string, len(t.order))
	for i, c := range t.order {
		tn := t.classes[c].String()
		if tn == "" {
			tn = "the defaults (swept, none faster)"
		}
		s[i] = c.String() + ": " + tn
	}
	return strings.Join(s, "; ")
}

// ForShape is plan a for a problem of shape s that a runs with kernel k:
// a with the sizes the tuning file (a.File) sets for s's class, a itself
// where it sets none. Only the hardware plan runs the tuned kernels.
func (a AdapterPlan) ForShape(k FusedKernel, s FusedShape) AdapterPlan {
	if !a.Hardware || a.File == nil {
		return a
	}
	if t, ok := a.File.For(ClassOf(k, s)); ok {
		a.Tune = t
	}
	return a
}

// WithTune is a with sizes t and no tuning file: a sweep's candidate.
func (a AdapterPlan) WithTune(t Tuning) AdapterPlan {
	a.Tune, a.File = t, nil
	return a
}

// Fingerprint is what a candidate's sizes decide for a problem of shape
// s on mem bytes of workgroup memory: the kernel and its sizes, its
// splitting and merge.wgsl's shape. Two tunings with the same
// fingerprint run the same dispatches (the planners lower a size a
// problem does not need), so a sweep times only one of them.
func (a AdapterPlan) Fingerprint(mem int, s FusedShape) (kernel, fp string) {
	k := a.FusedFor(mem, s)
	if k == nil {
		return "", ""
	}
	target, minSplit, parts := k.Splitting(a)
	return KernelName(k), fmt.Sprintf("%#v split %d,%d,%d merge %d,%d", k, target, minSplit, parts, a.MergeRowLanes(), a.MergeUnroll())
}

// TuneFormat names the tuning file's format, its first field. Format 1
// keyed a file by attn's module version too, which a program requiring
// attn ("v0.0.0 => …", a tag) does not share with the clone's attn tune
// ("(devel)"); format 2 keys it by what decides the sizes alone.
const TuneFormat = "attn gpu tuning 2"

// maxTuneFile bounds the bytes of a tuning file read: a sweep writes a
// few kilobytes, and a file far larger is not one.
const maxTuneFile = 1 << 20

// maxTunedClasses bounds the classes one file may tune.
const maxTunedClasses = 4096

// TuneKey is what decides how fast a tuning file's sizes run and what
// they make of the kernels: the adapter (its name, vendor and device
// ids), its driver, the WebGPU binding the build tag picks and the
// wgpu-native it links (wg.Versions), and the kernels (KernelsID: their
// WGSL, the knobs and PlanVersion). attn's module version is not part of
// it: a clone's attn tune is "(devel)" and a program requiring attn
// "v0.0.0 => …" or a tag, over the same kernels. A file whose key
// differs from the running one's was measured elsewhere and is not used.
type TuneKey struct {
	Adapter    string `json:"adapter"`
	VendorID   uint32 `json:"vendor_id"`
	DeviceID   uint32 `json:"device_id"`
	Driver     string `json:"driver"`
	DriverInfo string `json:"driver_info"`
	Binding    string `json:"binding"`
	Kernels    string `json:"kernels"`
}

// KeyOf is the key of sizes measured on adapter a through binding (the
// binding's versions, wg.Versions) with this build's kernels.
func KeyOf(a gputypes.AdapterInfo, binding string) TuneKey {
	return TuneKey{
		Adapter: a.Name, VendorID: a.VendorID, DeviceID: a.DeviceID, Driver: a.Driver, DriverInfo: a.DriverInfo,
		Binding: binding, Kernels: KernelsID(),
	}
}

// FileName is the name of k's tuning file in the cache directory: the
// adapter's name, made safe for a path, and a digest of the whole key, so
// that each device, driver, binding and set of kernels has a file of its
// own, which every build of attn with those kernels finds.
func (k TuneKey) FileName() string {
	b, _ := json.Marshal(k)
	sum := sha256.Sum256(b)
	var slug strings.Builder
	for _, r := range strings.ToLower(k.Adapter) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			slug.WriteRune(r)
		case slug.Len() > 0 && !strings.HasSuffix(slug.String(), "-"):
			slug.WriteByte('-')
		}
		if slug.Len() >= 40 {
			break
		}
	}
	name := strings.Trim(slug.String(), "-")
	if name == "" {
		name = "adapter"
	}
	return name + "-" + hex.EncodeToString(sum[:6]) + ".json"
}

// diff names the first field where k and want differ, with both values;
// "" when they are the same.
func (k TuneKey) diff(want TuneKey) string {
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"adapter", k.Adapter, want.Adapter}, {"vendor id", k.VendorID, want.VendorID}, {"device id", k.DeviceID, want.DeviceID},
		{"driver", k.Driver, want.Driver}, {"driver info", k.DriverInfo, want.DriverInfo}, {"binding", k.Binding, want.Binding},
		{"kernels", k.Kernels, want.Kernels},
	} {
		if f.got != f.want {
			return fmt.Sprintf("%s %q, this is %q", f.name, fmt.Sprint(f.got), fmt.Sprint(f.want))
		}
	}
	return ""
}

// TuneFile is a tuning file: its format, its key, the attn that wrote
// it (ModuleVersion, for people: no reader compares it), and the sizes
// that won for each class a sweep tuned, with what the sweep measured.
type TuneFile struct {
	Format  string       `json:"format"`
	Key     TuneKey      `json:"key"`
	Writer  string       `json:"writer,omitempty"`
	Classes []TunedClass `json:"classes"`
}

// TunedClass is one class's winning sizes: Tune, as ATTN_GPU_TUNE writes
// them over the defaults ("" where a sweep over every knob kept the
// defaults). Shapes, the timer and the times are the sweep's record (the
// median a shape, summed over its shapes), read by people, not by New.
type TunedClass struct {
	Class
	Tune     string   `json:"tune"`
	Shapes   []string `json:"shapes,omitempty"`
	Timer    string   `json:"timer,omitempty"`
	DefaultS float64  `json:"default_s,omitempty"`
	TunedS   float64  `json:"tuned_s,omitempty"`
}

// ErrTuneFile is what every reason ReadTuned refuses a file wraps.
var ErrTuneFile = errors.New("not a usable tuning file")

// ReadTuned reads a tuning file's bytes, from path, for the running key
// want. It refuses, with an error wrapping ErrTuneFile that says why,
// anything it cannot use whole: more than maxTuneFile bytes, another
// format (an earlier attn's, say), anything but the JSON of a TuneFile
// (an unknown field included), another key (another device, driver,
// binding or kernels), a
// class that is not one (an unknown kernel, sizes that are not positive
// or rows and keys that are not powers of two), a class listed twice, or
// settings ATTN_GPU_TUNE would refuse or that set a knob which does not
// size the class's kernel. A file that is partly right is refused whole:
// its writer was not this sweep.
func ReadTuned(r io.Reader, path string, want TuneKey) (*Tuned, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxTuneFile+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTuneFile, err)
	}
	if len(data) > maxTuneFile {
		return nil, fmt.Errorf("%w: more than %d bytes", ErrTuneFile, maxTuneFile)
	}
	// The format first, where the data is JSON at all: a file of
	// another format is refused for that, not for the fields it has.
	var head struct {
		Format string `json:"format"`
	}
	if json.Unmarshal(data, &head) == nil && head.Format != TuneFormat {
		if head.Format == "attn gpu tuning 1" {
			return nil, fmt.Errorf("%w: format %q, an earlier attn's, keyed by attn's module version, which a program requiring attn does not share; this attn reads %q, keyed by the adapter, driver, binding and kernels: run attn tune again", ErrTuneFile, head.Format, TuneFormat)
		}
		return nil, fmt.Errorf("%w: format %q, want %q", ErrTuneFile, head.Format, TuneFormat)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f TuneFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrTuneFile, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: data after the file's object", ErrTuneFile)
	}
	if f.Format != TuneFormat {
		return nil, fmt.Errorf("%w: format %q, want %q", ErrTuneFile, f.Format, TuneFormat)
	}
	if d := f.Key.diff(want); d != "" {
		return nil, fmt.Errorf("%w: measured on another device or build: %s", ErrTuneFile, d)
	}
	if len(f.Classes) > maxTunedClasses {
		return nil, fmt.Errorf("%w: %d classes, more than %d", ErrTuneFile, len(f.Classes), maxTunedClasses)
	}
	t := &Tuned{Path: path, classes: make(map[Class]Tuning, len(f.Classes))}
	for i, e := range f.Classes {
		if err := e.Class.check(); err != nil {
			return nil, fmt.Errorf("%w: class %d: %v", ErrTuneFile, i+1, err)
		}
		if _, dup := t.classes[e.Class]; dup {
			return nil, fmt.Errorf("%w: class %d: %v is listed twice", ErrTuneFile, i+1, e.Class)
		}
		tn, err := parseTuningIn("class "+e.Class.String(), e.Tune)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrTuneFile, err)
		}
		for _, k := range knobs {
			if *k.field(&tn) != *k.field(&defaultTuning) && !knobSizes(k.name, e.Kernel) {
				return nil, fmt.Errorf("%w: class %v sets %s, which does not size %s", ErrTuneFile, e.Class, k.name, e.Kernel)
			}
		}
		t.classes[e.Class] = tn
		t.order = append(t.order, e.Class)
	}
	return t, nil
}

// maxClassDim bounds a class's head dims and group: far past any model's,
// and small enough that no product of them overflows.
const maxClassDim = 1 << 16

// check says why c is not a class a sweep writes.
func (c Class) check() error {
	if !slices.Contains([]string{KernelDecode, KernelLaneDecode, KernelTile, KernelLoop}, c.Kernel) {
		return fmt.Errorf("kernel %q: want %s, %s, %s or %s", c.Kernel, KernelDecode, KernelLaneDecode, KernelTile, KernelLoop)
	}
	for _, f := range []struct {
		name string
		v    int
		pow2 bool
	}{{"nq", c.NQ, true}, {"g", c.G, false}, {"d", c.D, false}, {"dv", c.DV, false}, {"nk", c.NK, true}} {
		if f.v < 1 || f.v > maxClassDim && !f.pow2 || f.v > 1<<40 {
			return fmt.Errorf("%s=%d: out of range", f.name, f.v)
		}
		if f.pow2 && f.v&(f.v-1) != 0 {
			return fmt.Errorf("%s=%d: want a power of two", f.name, f.v)
		}
	}
	return nil
}

// EncodeTuned is f as its file holds it: indented JSON, a newline last.
func EncodeTuned(f TuneFile) ([]byte, error) {
	b, err := json.MarshalIndent(f, "", "\t")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// PlanVersion is the version of what the planners make of the knobs'
// values (the kernel_*.go files): raise it where a change there gives a
// value another meaning while the kernels' WGSL and the knobs' names,
// ranges and defaults stay, so that a tuning file measured before is
// not used (KernelsID digests it).
const PlanVersion = 1

// KernelsID is a digest of what the tuned sizes mean: every kernel's
// source (shaders.SourceHash), the knobs' names, ranges and defaults,
// and PlanVersion. A build that changes any of them measures afresh.
var KernelsID = sync.OnceValue(func() string {
	h := sha256.New()
	io.WriteString(h, shaders.SourceHash())
	for _, k := range knobs {
		fmt.Fprintf(h, "\n%s %d %d %d", k.name, k.lo, k.hi, *k.field(&defaultTuning))
	}
	fmt.Fprintf(h, "\nplan %d", PlanVersion)
	return hex.EncodeToString(h.Sum(nil)[:16])
})

// ModuleVersion is attn's version as this binary's build information
// records it, which a tuning file names as its writer (TuneFile.Writer)
// and no key holds: the module's version where attn is a dependency
// ("v0.0.0 => ../attn" under a replace), its own ("(devel)") with the
// VCS revision, where the build stamped one, in a build of attn's own
// commands and tests. A variable so that a test can stand in another
// version.
var ModuleVersion = attnVersion

func attnVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	const path = "github.com/attn-go/attn"
	for _, m := range bi.Deps {
		if m.Path == path {
			if m.Replace != nil {
				return strings.TrimSpace(m.Version + " => " + m.Replace.Path + " " + m.Replace.Version)
			}
			return m.Version
		}
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		switch {
		case s.Key == "vcs.revision":
			v += " " + s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			v += " modified"
		}
	}
	return v
}
