package backend

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"

	"github.com/gogpu/gputypes"
)

// Opener opens a new instance of a registered backend.
type Opener func() (Backend, error)

type registration struct {
	name     string
	priority int
	open     Opener
}

var (
	regMu sync.Mutex
	regs  []registration
)

// Register makes a backend available to Open under name. Backends register
// from an init function of their package, so a program chooses which it
// links by importing them (a CPU-only program imports only cpu and links no
// cgo). "auto" tries backends by descending priority. Registering a name
// twice panics: it is a programming error, not a runtime condition.
func Register(name string, priority int, open Opener) {
	regMu.Lock()
	defer regMu.Unlock()
	if name == "" || name == "auto" {
		panic(fmt.Sprintf("backend: cannot register reserved name %q", name))
	}
	for _, r := range regs {
		if r.name == name {
			panic(fmt.Sprintf("backend: %q registered twice", name))
		}
	}
	regs = append(regs, registration{name, priority, open})
	sort.SliceStable(regs, func(i, j int) bool { return regs[i].priority > regs[j].priority })
}

// Registered lists the registered backend names, in the order "auto"
// tries them.
func Registered() []string {
	regMu.Lock()
	defer regMu.Unlock()
	names := make([]string, len(regs))
	for i, r := range regs {
		names[i] = r.name
	}
	return names
}

// EnvBackend is the environment variable that overrides "auto".
const EnvBackend = "ATTN_BACKEND"

// Attempt records one backend that Select tried and could not open.
type Attempt struct {
	Name string
	Err  error
}

func (a Attempt) String() string { return a.Name + ": " + a.Err.Error() }

// Open opens the backend called name: "cpu", "gpu", or "auto" (also "")
// for the best one that opens here: backends in descending priority,
// except that a GPU backend on a software adapter (lavapipe) is kept only
// when nothing else opens, since the CPU backend is faster on the same
// cores. ATTN_BACKEND, when set, replaces
// "auto". When nothing opens, the error names every backend and why it
// failed.
func Open(name string) (Backend, error) {
	b, _, err := Select(name)
	return b, err
}

// Select is Open that also reports the backends it tried and skipped
// before the one it returns, so a caller can say why it fell back.
func Select(name string) (Backend, []Attempt, error) {
	name = strings.TrimSpace(strings.ToLower(name))
	if name == "" || name == "auto" {
		if env := strings.TrimSpace(strings.ToLower(os.Getenv(EnvBackend))); env != "" && env != "auto" {
			b, err := openNamed(env)
			if err != nil {
				return nil, nil, Wrapf(err, "%s=%s", EnvBackend, env)
			}
			return b, nil, nil
		}
		return openAuto()
	}
	b, err := openNamed(name)
	return b, nil, err
}

func lookup(name string) (registration, bool) {
	regMu.Lock()
	defer regMu.Unlock()
	for _, r := range regs {
		if r.name == name {
			return r, true
		}
	}
	return registration{}, false
}

func openNamed(name string) (Backend, error) {
	r, ok := lookup(name)
	if !ok {
		known := Registered()
		if len(known) == 0 {
			return nil, fmt.Errorf("%w %q: no backend is linked in (import github.com/attn-go/attn/cpu)", ErrUnknownBackend, name)
		}
		return nil, fmt.Errorf("%w %q (have %s, auto)", ErrUnknownBackend, name, strings.Join(known, ", "))
	}
	b, err := r.open()
	if err != nil {
		return nil, Wrapf(err, "%s", name)
	}
	return b, nil
}

func openAuto() (Backend, []Attempt, error) {
	regMu.Lock()
	order := append([]registration(nil), regs...)
	regMu.Unlock()
	var (
		tried    []Attempt
		fallback Backend // a GPU backend on a software adapter
		fbName   string
	)
	for _, r := range order {
		b, err := r.open()
		if err != nil {
			tried = append(tried, Attempt{r.name, err})
			continue
		}
		if fallback == nil && isSoftware(b) {
			fallback, fbName = b, r.name
			continue
		}
		if fallback != nil {
			info := fallback.Info().Adapter
			fallback.Close()
			tried = append(tried, Attempt{fbName, fmt.Errorf("%w: %s is a software adapter, slower than %s; ask for %q by name to use it",
				ErrUnavailable, info.Name, r.name, fbName)})
		}
		return b, tried, nil
	}
	if fallback != nil {
		return fallback, tried, nil
	}
	if len(tried) == 0 {
		return nil, nil, fmt.Errorf("%w: no backend is linked in (import github.com/attn-go/attn/cpu)", ErrUnavailable)
	}
	return nil, tried, &noBackendError{tried}
}

// isSoftware reports whether b is a GPU backend running on a CPU-type
// adapter, such as Mesa's lavapipe: a real WebGPU device, but one that
// emulates the GPU on the same cores the CPU backend uses directly.
func isSoftware(b Backend) bool {
	info := b.Info()
	return info.Kind == KindGPU && info.Adapter.DeviceType == gputypes.DeviceTypeCPU
}

// noBackendError names every backend "auto" tried and why it failed, and
// unwraps to each of their errors for errors.Is.
type noBackendError struct{ tried []Attempt }

func (e *noBackendError) Error() string {
	msgs := make([]string, len(e.tried))
	for i, a := range e.tried {
		msgs[i] = a.String()
	}
	return "no backend could be opened: " + strings.Join(msgs, "; ")
}

func (e *noBackendError) Unwrap() []error {
	errs := make([]error, len(e.tried))
	for i, a := range e.tried {
		errs[i] = a.Err
	}
	return errs
}
