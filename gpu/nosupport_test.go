//go:build (!cgo && !gogpu) || nogpu

package gpu_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	_ "github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/gpu"
)

func TestNewUnavailable(t *testing.T) {
	b, err := gpu.New()
	if err == nil {
		t.Fatalf("New() = %v, nil; want an error", b)
	}
	if b != nil {
		t.Errorf("New() returned a backend (%v) with its error", b)
	}
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf("New() error %v does not wrap backend.ErrUnavailable", err)
	}
	reason := strings.TrimPrefix(err.Error(), backend.ErrUnavailable.Error())
	reason = strings.TrimSpace(strings.TrimPrefix(reason, ":"))
	if reason == "" || reason == err.Error() {
		t.Errorf("New() error %q gives no reason beyond the sentinel", err)
	}
	for _, other := range []error{backend.ErrShape, backend.ErrUnknownBackend, backend.ErrDeviceLost} {
		if errors.Is(err, other) {
			t.Errorf("New() error %v also wraps %v", err, other)
		}
	}
}

func TestRegisteredBeforeCPU(t *testing.T) {
	names := backend.Registered()
	gi, ci := slices.Index(names, "gpu"), slices.Index(names, "cpu")
	if gi < 0 || ci < 0 {
		t.Fatalf("Registered() = %q, want both gpu and cpu", names)
	}
	if gi > ci {
		t.Errorf("Registered() = %q: gpu (priority %d) should come before cpu", names, gpu.Priority)
	}
	if gpu.Priority <= 0 {
		t.Errorf("Priority = %d, want above the CPU's 0", gpu.Priority)
	}
}

func TestOpenNamedGPU(t *testing.T) {
	t.Setenv(backend.EnvBackend, "")
	b, err := backend.Open("gpu")
	if err == nil {
		b.Close()
		t.Fatal(`Open("gpu") succeeded, want ErrUnavailable`)
	}
	if !errors.Is(err, backend.ErrUnavailable) {
		t.Errorf(`Open("gpu") = %v, want ErrUnavailable`, err)
	}
	// attn's errors read "attn: <sentinel>: <where>: <what>".
	if want := backend.ErrUnavailable.Error() + ": gpu: "; !strings.HasPrefix(err.Error(), want) {
		t.Errorf(`Open("gpu") error %q does not name the backend: want it to start %q`, err, want)
	}
}

func TestSelectAutoFallsBackToCPU(t *testing.T) {
	t.Setenv(backend.EnvBackend, "")
	for _, name := range []string{"auto", "", " Auto "} {
		b, tried, err := backend.Select(name)
		if err != nil {
			t.Fatalf("Select(%q): %v", name, err)
		}
		if got := b.Name(); got != "cpu" {
			t.Errorf("Select(%q) opened %q, want cpu", name, got)
		}
		if err := b.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		i := slices.IndexFunc(tried, func(a backend.Attempt) bool { return a.Name == "gpu" })
		if i < 0 {
			t.Fatalf("Select(%q) attempts = %v, want the gpu attempt", name, tried)
		}
		a := tried[i]
		if !errors.Is(a.Err, backend.ErrUnavailable) {
			t.Errorf("gpu attempt error %v does not wrap ErrUnavailable", a.Err)
		}
		if s := a.String(); !strings.HasPrefix(s, "gpu: ") || !strings.Contains(s, backend.ErrUnavailable.Error()) {
			t.Errorf("gpu attempt String() = %q", s)
		}
		for _, a := range tried {
			if a.Name == "cpu" {
				t.Errorf("cpu listed as a failed attempt: %v", a)
			}
		}
	}
}

func TestEnvForcesCPU(t *testing.T) {
	t.Setenv(backend.EnvBackend, "cpu")
	b, tried, err := backend.Select("auto")
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if b.Name() != "cpu" || len(tried) != 0 {
		t.Errorf("Select(auto) with %s=cpu = %q, attempts %v; want cpu and no attempts", backend.EnvBackend, b.Name(), tried)
	}
}

func TestEnvForcesGPUFails(t *testing.T) {
	t.Setenv(backend.EnvBackend, "gpu")
	b, _, err := backend.Select("auto")
	if err == nil {
		b.Close()
		t.Fatalf("Select(auto) with %s=gpu succeeded; want ErrUnavailable, no fallback", backend.EnvBackend)
	}
	if !errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), backend.EnvBackend) {
		t.Errorf("Select(auto) with %s=gpu = %v", backend.EnvBackend, err)
	}
}
