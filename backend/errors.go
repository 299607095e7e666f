package backend

import (
	"errors"
	"fmt"
	"strings"
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

// sentinels are the errors above, in the order Wrapf looks for them.
var sentinels = []error{ErrShape, ErrNonFinite, ErrTooLarge, ErrUnsupported, ErrUnavailable,
	ErrDeviceLost, ErrForeignBuffer, ErrReleased, ErrUnknownBackend, ErrCacheFull}

// Every error attn returns reads "attn: <the sentinel's words>: <where>:
// <what>": the kind of failure first, so that a log line says at once
// whether the call was wrong (bad shape), the input (non-finite) or the
// device (device lost), then the call's context from the outside in,
// then the sizes or cause. Errorf makes such an error and Wrapf adds
// context to one without moving its sentinel's words.

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

// Wrapf returns err with the formatted context added after its sentinel's
// words: Wrapf(Errorf(ErrShape, "K is [2 3]"), "page pool") reads "attn:
// bad shape: page pool: K is [2 3]", and so does an err that fmt.Errorf
// wrapped with the sentinel at its end ("cpu: alloc: attn: released"
// becomes "attn: released: <context>: cpu: alloc"). The result wraps err,
// so errors.Is and errors.As see what it did. An err that wraps no
// sentinel gets the context in front, as fmt.Errorf("%s: %w") would
// give it; a nil err is nil.
func Wrapf(err error, format string, args ...any) error {
	if err == nil {
		return nil
	}
	ctx := fmt.Sprintf(format, args...)
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return &wrapped{head: s.Error() + ": ", msg: join(ctx, detail(err.Error(), s.Error())), err: err}
		}
	}
	return &wrapped{msg: join(ctx, err.Error()), err: err}
}

// detail is msg less the sentinel's words p, wherever they stand.
func detail(msg, p string) string {
	switch {
	case msg == p:
		return ""
	case strings.HasPrefix(msg, p+": "):
		return msg[len(p)+2:]
	}
	if i := strings.Index(msg, ": "+p); i >= 0 {
		return msg[:i] + msg[i+2+len(p):]
	}
	return msg
}

// join is ctx, then msg: msg alone where it begins with ctx already, as
// the gpu backend's "gpu: …" does when Open adds the backend's name, which
// would read "gpu: gpu: …".
func join(ctx, msg string) string {
	switch {
	case msg == "":
		return ctx
	case msg == ctx || strings.HasPrefix(msg, ctx+": "):
		return msg
	}
	return ctx + ": " + msg
}

type wrapped struct {
	head, msg string
	err       error
}

func (e *wrapped) Error() string { return e.head + e.msg }
func (e *wrapped) Unwrap() error { return e.err }
