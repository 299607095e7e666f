package backend

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error a backend or the kernels package returns
// wraps one of them, so callers test with errors.Is.
var (
	// ErrShape: sizes, ranks, layouts or buffers that do not fit together.
	ErrShape = errors.New("attn: bad shape")
	// ErrNonFinite: a NaN or infinity in an input that may not hold one.
	ErrNonFinite = errors.New("attn: non-finite input")
	// ErrTooLarge: a problem bigger than the device (or an int) can hold.
	ErrTooLarge = errors.New("attn: problem too large")
	// ErrUnsupported: an option the backend does not implement.
	ErrUnsupported = errors.New("attn: unsupported")
	// ErrUnavailable: the backend cannot run in this build or on this host.
	ErrUnavailable = errors.New("attn: backend unavailable")
	// ErrDeviceLost: the device went away; reopen the backend.
	ErrDeviceLost = errors.New("attn: device lost")
	// ErrForeignBuffer: a Buffer used with a backend that did not allocate it.
	ErrForeignBuffer = errors.New("attn: buffer from another backend")
	// ErrReleased: a Buffer or a cache's sequence used after Release, or
	// a backend after Close.
	ErrReleased = errors.New("attn: released")
	// ErrUnknownBackend: Open was asked for a name nobody registered.
	ErrUnknownBackend = errors.New("attn: unknown backend")
	// ErrCacheFull: an append that a KV cache has no room for (a
	// sequence past its capacity, a page pool out of free pages). The
	// call was right and the cache unchanged: a server preempts or
	// evicts a sequence and tries again.
	ErrCacheFull = errors.New("attn: cache full")
)

// Errorf returns an error wrapping sentinel whose message is the
// formatted text.
func Errorf(sentinel error, format string, args ...any) error {
	return &sizedError{sentinel: sentinel, msg: fmt.Sprintf(format, args...)}
}

type sizedError struct {
	sentinel error
	msg      string
}

func (e *sizedError) Error() string { return e.sentinel.Error() + ": " + e.msg }
func (e *sizedError) Unwrap() error { return e.sentinel }
