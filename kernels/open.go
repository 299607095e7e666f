package kernels

import "github.com/attn-go/attn/backend"

// Backend computes attention on one device: the CPU ("cpu") or a GPU
// through WebGPU ("gpu"). A program imports the backends it may use for
// their side effect, which registers them, and opens one with Open:
//
//	import (
//		"github.com/attn-go/attn/kernels"
//		_ "github.com/attn-go/attn/cpu"
//		_ "github.com/attn-go/attn/gpu"
//	)
//
//	be, err := kernels.Open("auto")
//	...
//	defer be.Close()
//
// Its methods are the ops a backend implements (package backend is that
// contract, for backend authors); a program calls Attention, the caches
// and MultiHead here instead, and reads Caps (Caps().Half: whether it
// stores half dtypes) and Info (the device) from it.
type Backend = backend.Backend

// Caps says what a backend supports (Backend.Caps): bool fields that a
// program reads before asking for an option, the ones it may need being
//
//	Half           bool // Float16 and BFloat16 tensors and caches
//	Quant8, Quant4 bool // q8 and fp8 caches; q4 caches
//	Seqs           bool // packed sequences, paged caches (Options.CuSeqlensQ, BlockTable)
//	Indices        bool // index lists (Options.Indices)
//	Blocks         bool // block masks (Options.Blocks)
//	MaxBufferLen   int  // the largest tensor in elements; 0: no limit
//
// with the rest in backend.Caps. What a backend lacks is refused with
// ErrUnsupported, never computed another way without saying so.
type Caps = backend.Caps

// Info describes the device behind a backend (Backend.Info). Its
// fields:
//
//	Kind     backend.Kind         // backend.KindCPU or backend.KindGPU
//	Adapter  gputypes.AdapterInfo // Adapter.Name is the device's name: "NVIDIA H200", a CPU's model
//	Limits   gputypes.Limits      // a GPU device's granted limits; zero on a CPU
//	Features gputypes.Features    // a GPU device's features (shader-f16, subgroups, timestamps)
//	Threads  int                  // a CPU backend's worker goroutines; 0 on a GPU
//	Detail   string               // library versions, build tags, driver notes
//
// Backend.Name is the backend's registered name ("cpu", "gpu"), not the
// device's.
type Info = backend.Info

// Open opens the backend called name: "cpu", "gpu", or "auto" (also "")
// for the best one that opens here (a GPU, unless it is a software
// adapter, then the CPU). The environment variable ATTN_BACKEND, when
// set, replaces "auto". Only the backends a program imports are
// registered; when nothing opens, the error names every backend and why
// it failed. Close the backend when done.
func Open(name string) (Backend, error) { return backend.Open(name) }

// The errors every call returns wrap one of these, so a program tests
// them with errors.Is; they are package backend's, the same values.
var (
	// ErrShape: sizes, ranks, layouts or options that do not fit
	// together: a bug in the caller.
	ErrShape = backend.ErrShape
	// ErrNonFinite: a NaN or infinity in an input that may not hold one,
	// or a value a half dtype cannot hold.
	ErrNonFinite = backend.ErrNonFinite
	// ErrTooLarge: a problem bigger than the device (or an int) holds.
	ErrTooLarge = backend.ErrTooLarge
	// ErrUnsupported: an option the backend does not implement.
	ErrUnsupported = backend.ErrUnsupported
	// ErrUnavailable: the backend cannot run in this build or on this
	// host.
	ErrUnavailable = backend.ErrUnavailable
	// ErrDeviceLost: the device went away; open the backend again.
	ErrDeviceLost = backend.ErrDeviceLost
	// ErrReleased: a cache, sequence or backend used after its Release
	// or Close.
	ErrReleased = backend.ErrReleased
	// ErrUnknownBackend: Open was given a name no imported backend
	// registered.
	ErrUnknownBackend = backend.ErrUnknownBackend
	// ErrCacheFull: an append a KV cache has no room for (a sequence past
	// its capacity, a pool out of pages). The call was right and the
	// cache is unchanged: preempt or evict a sequence and try again.
	ErrCacheFull = backend.ErrCacheFull
)
