package cpu

import (
	"errors"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
)

// passChecks passes only kernels whose checks pass: a wrong answer
// injected into one check (tileFault), an error or a panic fails the
// whole format, naming the kernel; the checks before it passed.
func TestPassChecks(t *testing.T) {
	answer := func(kernel string) func() error {
		return func() error {
			out := checkOut(kernel, []float32{1, 2, 3})
			if !slices.Equal(out, []float32{1, 2, 3}) {
				return errors.New("row 0 key 0 is 2, want 1")
			}
			return nil
		}
	}
	checks := []tileCheck{{"a scores (X)", answer("a scores (X)")}, {"a P·V (Y)", answer("a P·V (Y)")}}
	if passed, err := passChecks(checks); err != nil || !slices.Equal(passed, []string{"a scores (X)", "a P·V (Y)"}) {
		t.Fatalf("passChecks = %v, %v; want both passed", passed, err)
	}
	for _, c := range []struct {
		fault string
		check tileCheck
		want  string
	}{
		{"a P·V (Y)", tileCheck{}, "a P·V (Y) failed its known-answer check: row 0 key 0 is 2, want 1"},
		{"a scores (X)", tileCheck{}, "a scores (X) failed its known-answer check"},
		{"", tileCheck{"b (Z)", func() error { panic("bad tile") }}, "b (Z) failed its known-answer check: panicked: bad tile"},
		{"", tileCheck{"b (Z)", func() error { return errors.New("took 0 of 32 keys") }}, "b (Z) failed its known-answer check: took 0 of 32 keys"},
	} {
		tileFault = c.fault
		cs := checks
		if c.check.run != nil {
			cs = append(slices.Clone(checks), c.check)
		}
		passed, err := passChecks(cs)
		tileFault = ""
		if err == nil || !strings.Contains(err.Error(), c.want) || passed != nil {
			t.Errorf("fault %q: passChecks = %v, %v; want an error saying %q", c.fault, passed, err, c.want)
		}
	}
}

// Info's Detail follows the tiles' decisions: each kernel that runs,
// past its check; a format whose check failed on the vector kernels
// with the failure; nothing where the CPU has no tiles; the vector
// setting named.
func TestDecode8Detail(t *testing.T) {
	on := tilesState{true, "q8 scores (TDPBSSD), q8 P·V (TDPBUSD)"}
	failed := tilesState{false, "fp8 P·V (TDPBF16PS) failed its known-answer check: row 0 column 0 is 2, want 1"}
	ints := q8IntState{ok: true, note: "q8 P·V (VPMADDWD)", timing: "a 512-key tile's P·V in 20.0 µs against 30.0 µs widening"}
	dots := q8IntState{ok: true, note: "q8 scores (VPDPBUSD)", timing: "a 512-key tile's scores in 3.0 µs against 7.0 µs widening"}
	for _, c := range []struct {
		setting string
		q8, fp8 tilesState
		in, dot q8IntState
		want    string
	}{
		{"auto", tilesState{}, tilesState{}, q8IntState{}, q8IntState{}, ""},
		{"vector", tilesState{}, tilesState{}, q8IntState{}, q8IntState{}, ""},
		{"auto", on, failed, q8IntState{}, q8IntState{}, ", 8-bit decoding on AMX's tiles: q8 scores (TDPBSSD), q8 P·V (TDPBUSD), each past its known-answer check; fp8 on the vector kernels: fp8 P·V (TDPBF16PS) failed its known-answer check: row 0 column 0 is 2, want 1"},
		{"auto", tilesState{false, "Linux refused AMX's tiles"}, tilesState{false, "Linux refused AMX's tiles"}, q8IntState{}, q8IntState{}, "; q8 on the vector kernels: Linux refused AMX's tiles; fp8 on the vector kernels: Linux refused AMX's tiles"},
		{"vector", on, failed, q8IntState{}, q8IntState{}, "; 8-bit decoding on the widening vector kernels (ATTN_CPU_DECODE8 or WithDecode8: vector)"},
		{"auto", tilesState{}, tilesState{}, ints, q8IntState{}, ", q8 P·V on the integer kernel: q8 P·V (VPMADDWD), past its known-answer check (a 512-key tile's P·V in 20.0 µs against 30.0 µs widening)"},
		{"integer", tilesState{}, tilesState{}, ints, q8IntState{}, ", q8 P·V on the integer kernel: q8 P·V (VPMADDWD), past its known-answer check (a 512-key tile's P·V in 20.0 µs against 30.0 µs widening)"},
		{"vector", tilesState{}, tilesState{}, ints, q8IntState{}, "; 8-bit decoding on the widening vector kernels (ATTN_CPU_DECODE8 or WithDecode8: vector)"},
		{"auto", tilesState{}, tilesState{}, q8IntState{note: "q8 P·V (VPMADDWD) failed its known-answer check: took 0 of 64 keys"}, q8IntState{}, "; q8 P·V on the widening vector kernel: q8 P·V (VPMADDWD) failed its known-answer check: took 0 of 64 keys"},
		{"auto", tilesState{}, tilesState{}, ints, dots, ", q8 P·V on the integer kernel: q8 P·V (VPMADDWD), past its known-answer check (a 512-key tile's P·V in 20.0 µs against 30.0 µs widening), q8 scores on the integer kernel: q8 scores (VPDPBUSD), past its known-answer check (a 512-key tile's scores in 3.0 µs against 7.0 µs widening)"},
		{"auto", on, tilesState{}, ints, q8IntState{note: "q8 scores (VPDPBUSD) failed its known-answer check: row 0 key 0 is 2, want 1"}, ", 8-bit decoding on AMX's tiles: q8 scores (TDPBSSD), q8 P·V (TDPBUSD), each past its known-answer check, q8 P·V on the integer kernel: q8 P·V (VPMADDWD), past its known-answer check (a 512-key tile's P·V in 20.0 µs against 30.0 µs widening); q8 scores on the widening vector kernel: q8 scores (VPDPBUSD) failed its known-answer check: row 0 key 0 is 2, want 1"},
		{"vector", tilesState{}, tilesState{}, q8IntState{}, dots, "; 8-bit decoding on the widening vector kernels (ATTN_CPU_DECODE8 or WithDecode8: vector)"},
		{"integer", on, tilesState{true, "fp8 scores (TDPBF16PS), fp8 P·V (TDPBF16PS)"}, ints, dots, ", 8-bit decoding on AMX's tiles: fp8 scores (TDPBF16PS), fp8 P·V (TDPBF16PS), each past its known-answer check; q8 off AMX's tiles (ATTN_CPU_DECODE8 or WithDecode8: integer), q8 P·V on the integer kernel: q8 P·V (VPMADDWD), past its known-answer check (a 512-key tile's P·V in 20.0 µs against 30.0 µs widening), q8 scores on the integer kernel: q8 scores (VPDPBUSD), past its known-answer check (a 512-key tile's scores in 3.0 µs against 7.0 µs widening)"},
	} {
		if got := decode8Detail(c.setting, c.q8, c.fp8, c.in, c.dot); got != c.want {
			t.Errorf("decode8Detail(%q, %+v, %+v, %+v, %+v) =\n%q\nwant\n%q", c.setting, c.q8, c.fp8, c.in, c.dot, got, c.want)
		}
	}
}

// WithDecode8 takes auto and vector, refuses anything else with
// ErrShape naming it, and $ATTN_CPU_DECODE8 overrides it; a backend
// opened with vector keeps every item off the tiles.
func TestWithDecode8(t *testing.T) {
	if _, ok := os.LookupEnv(EnvDecode8); ok {
		t.Setenv(EnvDecode8, "")
	}
	if _, err := New(WithDecode8("tiles")); !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), `"tiles"`) {
		t.Errorf("WithDecode8(tiles): %v; want ErrShape naming it", err)
	}
	b, err := New(WithDecode8("Vector"))
	if err != nil {
		t.Fatal(err)
	}
	if sc := b.scratchPool.Get().(*fusedScratch); !sc.t8.vector {
		t.Error("WithDecode8(vector): the decoding scratch would run the tiles")
	}
	b.Close()
	t.Setenv(EnvDecode8, "vector")
	if b, err = New(WithDecode8("auto")); err != nil {
		t.Fatal(err)
	}
	if sc := b.scratchPool.Get().(*fusedScratch); !sc.t8.vector {
		t.Errorf("%s=vector did not override WithDecode8(auto)", EnvDecode8)
	}
	b.Close()
	// integer: the q8 integer kernels where the CPU runs them, else
	// ErrUnavailable.
	t.Setenv(EnvDecode8, "integer")
	b, err = New()
	switch {
	case q8IntNow().ok && err != nil:
		t.Errorf("%s=integer: %v", EnvDecode8, err)
	case q8IntNow().ok:
		if sc := b.scratchPool.Get().(*fusedScratch); !sc.t8.intOn() || sc.t8.vector || !sc.t8.intQ8 || b.tiled(backend.Q8) {
			t.Errorf("%s=integer: the decoding scratch is %+v", EnvDecode8, sc.t8)
		}
		b.Close()
	case !errors.Is(err, backend.ErrUnavailable):
		t.Errorf("%s=integer on a CPU without the integer kernels: %v; want ErrUnavailable", EnvDecode8, err)
	}
	t.Setenv(EnvDecode8, "fast")
	if _, err := New(); !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), "$"+EnvDecode8) {
		t.Errorf("%s=fast: %v; want ErrShape naming the variable", EnvDecode8, err)
	}
}

// Info's Detail names the decoding kernels (decodeDetail): their width,
// and where the eight-lane ones run, that an index list's keys are read
// in place.
func TestDecodeDetail(t *testing.T) {
	b, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	d := decodeDetail()
	if !strings.Contains(b.Info().Detail, d) {
		t.Errorf("Info().Detail %q does not name the decoding kernels %q", b.Info().Detail, d)
	}
	if hasDecodeIdx(backend.Float16) != strings.Contains(d, "indirect kernels") {
		t.Errorf("decodeDetail %q, but the indirect kernels run: %t", d, hasDecodeIdx(backend.Float16))
	}
}

// $ATTN_CPU_PREFETCH: auto or empty leaves the CPU's choice, l1 and l2
// (any case, spaces around) choose, anything else is ErrShape at New.
func TestPrefetchEnv(t *testing.T) {
	for _, c := range []struct {
		env     string
		l2, set bool
		bad     bool
	}{
		{"", false, false, false}, {"auto", false, false, false}, {"l1", false, true, false},
		{" L2 ", true, true, false}, {"l3", false, false, true}, {"t0", false, false, true},
	} {
		t.Run(c.env, func(t *testing.T) {
			t.Setenv(EnvPrefetch, c.env)
			l2, set, err := prefetchEnv()
			if (err != nil) != c.bad || l2 != c.l2 || set != c.set {
				t.Fatalf("prefetchEnv() = %v, %v, %v; want %v, %v, error %v", l2, set, err, c.l2, c.set, c.bad)
			}
			be, err := New()
			if c.bad {
				if !errors.Is(err, backend.ErrShape) {
					t.Fatalf("New() error = %v; want ErrShape", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			be.Close()
		})
	}
}
