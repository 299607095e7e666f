package backend

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/gogpu/gputypes"
)

// fakeBackend is a Backend whose only meaningful methods are Name and
// Close; every op fails.
type fakeBackend struct {
	name   string
	info   Info
	closed bool
}

var errFake = errors.New("fake backend: not implemented")

func (f *fakeBackend) Name() string                          { return f.name }
func (f *fakeBackend) Info() Info                            { return f.info }
func (f *fakeBackend) Caps() Caps                            { return Caps{} }
func (f *fakeBackend) Alloc(DType, int) (Buffer, error)      { return nil, errFake }
func (f *fakeBackend) Write(Buffer, int, []float32) error    { return errFake }
func (f *fakeBackend) Read([]float32, Buffer, int) error     { return errFake }
func (f *fakeBackend) WriteBits(Buffer, int, []uint16) error { return errFake }
func (f *fakeBackend) ReadBits([]uint16, Buffer, int) error  { return errFake }
func (f *fakeBackend) Scores(context.Context, ScoresParams, Buffer, Buffer, Buffer) error {
	return errFake
}
func (f *fakeBackend) Softmax(context.Context, SoftmaxParams, Buffer) error { return errFake }
func (f *fakeBackend) Context(context.Context, ContextParams, Buffer, Buffer, Buffer) error {
	return errFake
}
func (f *fakeBackend) Fused(context.Context, FusedParams, Buffer, Buffer, Buffer, Buffer, Buffer) error {
	return errFake
}
func (f *fakeBackend) Sync() error  { return errFake }
func (f *fakeBackend) Close() error { f.closed = true; return nil }

// fake describes one backend to register: its name, priority and the
// error its opener returns (nil: it opens).
type fake struct {
	name string
	prio int
	err  error
}

// withRegistry replaces the package registry with one holding fakes (in
// the given registration order) for the duration of the test, and clears
// ATTN_BACKEND.
func withRegistry(t *testing.T, fakes ...fake) {
	t.Helper()
	regMu.Lock()
	saved := regs
	regs = nil
	regMu.Unlock()
	t.Cleanup(func() {
		regMu.Lock()
		regs = saved
		regMu.Unlock()
	})
	t.Setenv(EnvBackend, "")
	for _, f := range fakes {
		Register(f.name, f.prio, opener(f))
	}
}

func opener(f fake) Opener {
	return func() (Backend, error) {
		if f.err != nil {
			return nil, f.err
		}
		return &fakeBackend{name: f.name}, nil
	}
}

func unavailable(why string) error { return Errorf(ErrUnavailable, "%s", why) }

func TestRegisteredOrder(t *testing.T) {
	tests := []struct {
		name  string
		fakes []fake
		want  []string
	}{
		{"empty", nil, []string{}},
		{"one", []fake{{"cpu", 0, nil}}, []string{"cpu"}},
		{"priority descending", []fake{{"cpu", 0, nil}, {"gpu", 10, nil}}, []string{"gpu", "cpu"}},
		{"already ordered", []fake{{"gpu", 10, nil}, {"cpu", 0, nil}}, []string{"gpu", "cpu"}},
		{"stable for equal priority", []fake{{"a", 5, nil}, {"b", 5, nil}, {"c", 5, nil}}, []string{"a", "b", "c"}},
		{"mixed", []fake{
			{"low1", -1, nil}, {"mid1", 3, nil}, {"high", 9, nil}, {"mid2", 3, nil}, {"low2", -1, nil}, {"zero", 0, nil},
		}, []string{"high", "mid1", "mid2", "zero", "low1", "low2"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withRegistry(t, tt.fakes...)
			got := Registered()
			if !slices.Equal(got, tt.want) {
				t.Fatalf("Registered() = %q, want %q", got, tt.want)
			}
			// Registered returns a copy.
			if len(got) > 0 {
				got[0] = "mutated"
				if Registered()[0] == "mutated" {
					t.Fatal("Registered returned the registry's own storage")
				}
			}
		})
	}
}

func TestSelectAuto(t *testing.T) {
	errGPU := unavailable("no adapter")
	errNPU := fmt.Errorf("npu: %w", ErrDeviceLost)
	tests := []struct {
		name     string
		fakes    []fake
		arg      string
		want     string   // backend name opened
		attempts []string // names of failed attempts, in order
		errs     []error  // sentinel each attempt's error wraps
	}{
		{"auto first opens", []fake{{"cpu", 0, nil}, {"gpu", 10, nil}}, "auto", "gpu", nil, nil},
		{"empty name is auto", []fake{{"cpu", 0, nil}, {"gpu", 10, nil}}, "", "gpu", nil, nil},
		{"AUTO upper with spaces", []fake{{"cpu", 0, nil}, {"gpu", 10, nil}}, "  AUTO ", "gpu", nil, nil},
		{"equal priority: first registered", []fake{{"x", 1, nil}, {"y", 1, nil}}, "auto", "x", nil, nil},
		{"fallback to cpu", []fake{{"cpu", 0, nil}, {"gpu", 10, errGPU}}, "auto", "cpu",
			[]string{"gpu"}, []error{ErrUnavailable}},
		{"two failures then cpu", []fake{{"cpu", 0, nil}, {"gpu", 10, errGPU}, {"npu", 20, errNPU}}, "", "cpu",
			[]string{"npu", "gpu"}, []error{ErrDeviceLost, ErrUnavailable}},
		{"higher priority opened, lower never tried", []fake{{"cpu", 0, errors.New("boom")}, {"gpu", 10, nil}}, "auto", "gpu", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withRegistry(t, tt.fakes...)
			b, tried, err := Select(tt.arg)
			if err != nil {
				t.Fatalf("Select(%q): %v", tt.arg, err)
			}
			if b == nil || b.Name() != tt.want {
				t.Fatalf("Select(%q) opened %v, want %q", tt.arg, b, tt.want)
			}
			if len(tried) != len(tt.attempts) {
				t.Fatalf("Select(%q) attempts = %v, want names %q", tt.arg, tried, tt.attempts)
			}
			for i, a := range tried {
				if a.Name != tt.attempts[i] {
					t.Errorf("attempt %d name = %q, want %q", i, a.Name, tt.attempts[i])
				}
				if !errors.Is(a.Err, tt.errs[i]) {
					t.Errorf("attempt %d err = %v, want it to wrap %v", i, a.Err, tt.errs[i])
				}
				if s := a.String(); !strings.HasPrefix(s, a.Name+": ") || !strings.Contains(s, a.Err.Error()) {
					t.Errorf("attempt %d String() = %q", i, s)
				}
			}
			// Open agrees with Select.
			ob, err := Open(tt.arg)
			if err != nil {
				t.Fatalf("Open(%q): %v", tt.arg, err)
			}
			if ob.Name() != tt.want {
				t.Fatalf("Open(%q) opened %q, want %q", tt.arg, ob.Name(), tt.want)
			}
			if err := ob.Close(); err != nil {
				t.Fatal(err)
			}
			if err := b.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestSelectAutoAllFail(t *testing.T) {
	errCPU := Errorf(ErrUnsupported, "cpu lacks AVX-9000")
	errGPU := unavailable("no vulkan adapter")
	errNPU := fmt.Errorf("npu driver: %w", ErrDeviceLost)
	withRegistry(t, fake{"cpu", 0, errCPU}, fake{"gpu", 10, errGPU}, fake{"npu", 5, errNPU})

	for _, arg := range []string{"auto", ""} {
		b, tried, err := Select(arg)
		if err == nil {
			t.Fatalf("Select(%q) = %v, want error", arg, b)
		}
		if b != nil {
			t.Errorf("Select(%q) returned backend %v with an error", arg, b)
		}
		wantNames := []string{"gpu", "npu", "cpu"}
		if len(tried) != len(wantNames) {
			t.Fatalf("attempts = %v, want %q", tried, wantNames)
		}
		for i, n := range wantNames {
			if tried[i].Name != n {
				t.Errorf("attempt %d = %q, want %q", i, tried[i].Name, n)
			}
		}
		msg := err.Error()
		for _, part := range []string{
			"gpu: " + errGPU.Error(),
			"npu: " + errNPU.Error(),
			"cpu: " + errCPU.Error(),
		} {
			if !strings.Contains(msg, part) {
				t.Errorf("error %q does not contain %q", msg, part)
			}
			if strings.Count(msg, part) != 1 || strings.Contains(msg, "\n") {
				t.Errorf("error %q repeats %q or spans lines", msg, part)
			}
		}
		for _, sentinel := range []error{ErrUnsupported, ErrUnavailable, ErrDeviceLost} {
			if !errors.Is(err, sentinel) {
				t.Errorf("errors.Is(err, %v) = false; err = %v", sentinel, err)
			}
		}
		for _, e := range []error{errCPU, errGPU, errNPU} {
			if !errors.Is(err, e) {
				t.Errorf("errors.Is(err, %v) = false", e)
			}
		}
		if errors.Is(err, ErrShape) {
			t.Errorf("error unexpectedly wraps ErrShape: %v", err)
		}

		// Open returns the same failure.
		if ob, oerr := Open(arg); oerr == nil || ob != nil {
			t.Errorf("Open(%q) = %v, %v; want nil, error", arg, ob, oerr)
		}
	}
}

func TestSelectNamed(t *testing.T) {
	errGPU := unavailable("no adapter")
	fakes := []fake{{"cpu", 0, nil}, {"gpu", 10, errGPU}, {"alt", 5, nil}}
	tests := []struct {
		arg     string
		want    string // opened backend, "" when an error is expected
		is      error  // sentinel the error wraps
		contain []string
	}{
		{arg: "cpu", want: "cpu"},
		{arg: "CPU ", want: "cpu"},
		{arg: "  Cpu\t", want: "cpu"},
		{arg: "alt", want: "alt"},
		{arg: "ALT", want: "alt"},
		{arg: "gpu", is: ErrUnavailable, contain: []string{"gpu", "no adapter"}},
		{arg: "tpu", is: ErrUnknownBackend, contain: []string{`"tpu"`, "gpu", "alt", "cpu", "auto"}},
		{arg: "TPU", is: ErrUnknownBackend, contain: []string{`"tpu"`}},
	}
	for _, tt := range tests {
		t.Run(tt.arg, func(t *testing.T) {
			withRegistry(t, fakes...)
			b, tried, err := Select(tt.arg)
			if tried != nil {
				t.Errorf("Select(%q) attempts = %v, want none for a named backend", tt.arg, tried)
			}
			if tt.want != "" {
				if err != nil {
					t.Fatalf("Select(%q): %v", tt.arg, err)
				}
				if b.Name() != tt.want {
					t.Fatalf("Select(%q) = %q, want %q", tt.arg, b.Name(), tt.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("Select(%q) = %v, want error", tt.arg, b.Name())
			}
			if b != nil {
				t.Errorf("Select(%q) returned a backend with an error", tt.arg)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("Select(%q) error %v does not wrap %v", tt.arg, err, tt.is)
			}
			for _, c := range tt.contain {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("Select(%q) error %q does not contain %q", tt.arg, err, c)
				}
			}
			if _, oerr := Open(tt.arg); !errors.Is(oerr, tt.is) {
				t.Errorf("Open(%q) error %v does not wrap %v", tt.arg, oerr, tt.is)
			}
		})
	}
}

func TestUnknownListsKnownNamesInOrder(t *testing.T) {
	withRegistry(t, fake{"cpu", 0, nil}, fake{"gpu", 10, nil})
	_, err := Open("nope")
	if !errors.Is(err, ErrUnknownBackend) {
		t.Fatalf("Open(nope) = %v, want ErrUnknownBackend", err)
	}
	if !strings.Contains(err.Error(), "gpu, cpu, auto") {
		t.Errorf("error %q does not list the known names as %q", err, "gpu, cpu, auto")
	}
}

func TestNothingRegistered(t *testing.T) {
	for _, arg := range []string{"auto", "", "cpu", "gpu"} {
		t.Run(fmt.Sprintf("%q", arg), func(t *testing.T) {
			withRegistry(t)
			b, tried, err := Select(arg)
			if err == nil || b != nil {
				t.Fatalf("Select(%q) = %v, %v; want nil, error", arg, b, err)
			}
			if len(tried) != 0 {
				t.Errorf("attempts = %v, want none", tried)
			}
			if !strings.Contains(err.Error(), "import github.com/attn-go/attn/cpu") {
				t.Errorf("error %q does not say to import the cpu package", err)
			}
			auto := arg == "" || arg == "auto"
			if auto && !errors.Is(err, ErrUnavailable) {
				t.Errorf("auto with nothing registered: %v does not wrap ErrUnavailable", err)
			}
			if !auto && !errors.Is(err, ErrUnknownBackend) {
				t.Errorf("named with nothing registered: %v does not wrap ErrUnknownBackend", err)
			}
		})
	}
}

func TestEnvBackend(t *testing.T) {
	errGPU := unavailable("no adapter")
	fakes := []fake{{"cpu", 0, nil}, {"gpu", 10, errGPU}, {"alt", 5, nil}}
	tests := []struct {
		name     string
		env      string
		arg      string
		want     string // opened; "" when an error is expected
		attempts []string
		is       error
		contain  []string
	}{
		{name: "env overrides auto", env: "cpu", arg: "auto", want: "cpu"},
		{name: "env overrides empty", env: "cpu", arg: "", want: "cpu"},
		{name: "env case and space insensitive", env: " CPU ", arg: "auto", want: "cpu"},
		{name: "env does not override explicit name", env: "cpu", arg: "alt", want: "alt"},
		{name: "env ignored for explicit name even if unknown", env: "bogus", arg: "cpu", want: "cpu"},
		{name: "env=auto behaves as auto", env: "auto", arg: "auto", want: "alt", attempts: []string{"gpu"}},
		{name: "env=AUTO behaves as auto", env: " AUTO", arg: "", want: "alt", attempts: []string{"gpu"}},
		{name: "env empty behaves as auto", env: "", arg: "", want: "alt", attempts: []string{"gpu"}},
		{name: "env blank behaves as auto", env: "   ", arg: "", want: "alt", attempts: []string{"gpu"}},
		{name: "env unknown", env: "tpu", arg: "auto", is: ErrUnknownBackend,
			contain: []string{EnvBackend, "tpu", "gpu, alt, cpu, auto"}},
		{name: "env unknown with empty name", env: "tpu", arg: "", is: ErrUnknownBackend,
			contain: []string{EnvBackend, "tpu"}},
		{name: "env names a failing backend: no fallback", env: "gpu", arg: "auto", is: ErrUnavailable,
			contain: []string{EnvBackend, "gpu", "no adapter"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withRegistry(t, fakes...)
			t.Setenv(EnvBackend, tt.env)
			b, tried, err := Select(tt.arg)
			var names []string
			for _, a := range tried {
				names = append(names, a.Name)
			}
			if !slices.Equal(names, tt.attempts) {
				t.Errorf("attempts = %q, want %q", names, tt.attempts)
			}
			if tt.want != "" {
				if err != nil {
					t.Fatalf("Select(%q) with %s=%q: %v", tt.arg, EnvBackend, tt.env, err)
				}
				if b.Name() != tt.want {
					t.Fatalf("Select(%q) with %s=%q = %q, want %q", tt.arg, EnvBackend, tt.env, b.Name(), tt.want)
				}
				return
			}
			if err == nil || b != nil {
				t.Fatalf("Select(%q) with %s=%q = %v, %v; want nil, error", tt.arg, EnvBackend, tt.env, b, err)
			}
			if !errors.Is(err, tt.is) {
				t.Errorf("error %v does not wrap %v", err, tt.is)
			}
			for _, c := range tt.contain {
				if !strings.Contains(err.Error(), c) {
					t.Errorf("error %q does not contain %q", err, c)
				}
			}
		})
	}
}

func TestRegisterPanics(t *testing.T) {
	tests := []struct {
		name    string
		fakes   []fake // registered first, must not panic
		reg     string // then registering this name must panic
		contain string
	}{
		{"duplicate", []fake{{"cpu", 0, nil}}, "cpu", `"cpu" registered twice`},
		{"duplicate different priority", []fake{{"cpu", 0, nil}, {"gpu", 10, nil}}, "gpu", `"gpu" registered twice`},
		{"auto", nil, "auto", `reserved name "auto"`},
		{"empty", nil, "", `reserved name ""`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withRegistry(t, tt.fakes...)
			before := Registered()
			msg := func() (msg string) {
				defer func() {
					r := recover()
					if r == nil {
						return
					}
					msg = fmt.Sprint(r)
					if msg == "" {
						msg = "<empty panic>"
					}
				}()
				Register(tt.reg, 99, opener(fake{tt.reg, 99, nil}))
				return ""
			}()
			if msg == "" {
				t.Fatalf("Register(%q) did not panic", tt.reg)
			}
			if !strings.Contains(msg, tt.contain) {
				t.Errorf("panic %q does not contain %q", msg, tt.contain)
			}
			if after := Registered(); !slices.Equal(before, after) {
				t.Errorf("registry changed by a panicking Register: %q → %q", before, after)
			}
		})
	}
}

func TestRegistryRestored(t *testing.T) {
	// withRegistry must put back what was there; check it round-trips.
	regMu.Lock()
	before := len(regs)
	regMu.Unlock()
	t.Run("inner", func(t *testing.T) {
		withRegistry(t, fake{"zzz", 1, nil})
		if got := Registered(); !slices.Equal(got, []string{"zzz"}) {
			t.Fatalf("Registered() = %q", got)
		}
	})
	regMu.Lock()
	after := len(regs)
	regMu.Unlock()
	if before != after {
		t.Fatalf("registry had %d entries before, %d after", before, after)
	}
}

// "auto" passes over a GPU backend on a software adapter while anything
// else opens, closing it and saying why, and takes it when nothing does;
// asked for by name, it opens as usual.
func TestAutoSoftwareAdapter(t *testing.T) {
	lavapipe := Info{Kind: KindGPU, Adapter: gputypes.AdapterInfo{Name: "llvmpipe (LLVM 15.0.6, 256 bits)", Driver: "Mesa 22.3.6", DeviceType: gputypes.DeviceTypeCPU}}
	hardware := Info{Kind: KindGPU, Adapter: gputypes.AdapterInfo{Name: "H200", DeviceType: gputypes.DeviceTypeDiscreteGPU}}
	tests := []struct {
		name     string
		gpu      Info
		cpuErr   error
		arg      string
		want     string
		attempts []string
	}{
		{"software gpu, cpu opens", lavapipe, nil, "auto", "cpu", []string{"gpu"}},
		{"software gpu, cpu fails", lavapipe, errors.New("boom"), "auto", "gpu", []string{"cpu"}},
		{"software gpu named", lavapipe, nil, "gpu", "gpu", nil},
		{"hardware gpu", hardware, nil, "auto", "gpu", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			withRegistry(t)
			var opened []*fakeBackend
			reg := func(name string, prio int, info Info, err error) {
				Register(name, prio, func() (Backend, error) {
					if err != nil {
						return nil, err
					}
					f := &fakeBackend{name: name, info: info}
					opened = append(opened, f)
					return f, nil
				})
			}
			reg("cpu", 0, Info{Kind: KindCPU}, tt.cpuErr)
			reg("gpu", 10, tt.gpu, nil)
			b, tried, err := Select(tt.arg)
			if err != nil {
				t.Fatalf("Select(%q): %v", tt.arg, err)
			}
			if b.Name() != tt.want {
				t.Fatalf("Select(%q) = %s, want %s", tt.arg, b.Name(), tt.want)
			}
			var names []string
			for _, a := range tried {
				names = append(names, a.Name)
				if a.Name == "gpu" && (!errors.Is(a.Err, ErrUnavailable) || !strings.Contains(a.Err.Error(), "software adapter") || !strings.Contains(a.Err.Error(), "llvmpipe")) {
					t.Errorf("passing over the software adapter: %v, want ErrUnavailable naming it", a.Err)
				}
			}
			if !slices.Equal(names, tt.attempts) {
				t.Errorf("attempts %v, want %v", names, tt.attempts)
			}
			for _, f := range opened {
				if f != b && !f.closed {
					t.Errorf("%s was opened, passed over and not closed", f.name)
				}
				if f == b && f.closed {
					t.Errorf("%s was returned closed", f.name)
				}
			}
		})
	}
}

// A backend whose errors name it already ("gpu: …", as the gpu package's
// do, since gpu.New is called directly too) is named once when Open adds
// the name: "gpu: gpu: …" was the error text of every gpu backend that
// did not open under Open("gpu") or ATTN_BACKEND=gpu.
func TestOpenNamesTheBackendOnce(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{Errorf(ErrUnavailable, "gpu: ATTN_GPU_PLAN=%q: want auto, cpu or hardware", "x"), `attn: backend unavailable: gpu: ATTN_GPU_PLAN="x": want auto, cpu or hardware`},
		{Errorf(ErrUnavailable, "no adapter"), "attn: backend unavailable: gpu: no adapter"},
	} {
		withRegistry(t, fake{"gpu", 10, c.err})
		_, err := Open("gpu")
		if err == nil || err.Error() != c.want || !errors.Is(err, ErrUnavailable) {
			t.Errorf("Open(gpu) = %v, want %q", err, c.want)
		}
		t.Setenv(EnvBackend, "gpu")
		_, err = Open("auto")
		if want := strings.Replace(c.want, "unavailable: ", "unavailable: "+EnvBackend+"=gpu: ", 1); err == nil || err.Error() != want {
			t.Errorf("Open(auto) with %s=gpu = %v, want %q", EnvBackend, err, want)
		}
	}
}
