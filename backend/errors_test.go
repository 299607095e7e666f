package backend_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/attn-go/attn/backend"
)

// TestWrapf holds every error to one scheme, "attn: <sentinel's words>:
// <context, outermost first>: <detail>", however the error was made and
// however many layers wrapped it, and checks that what was wrapped is
// still found.
func TestWrapf(t *testing.T) {
	shape := backend.Errorf(backend.ErrShape, "K is [2 3]")
	tests := []struct {
		name string
		err  error
		want string
		is   []error
	}{
		{"sized", backend.Wrapf(shape, "page pool"), "attn: bad shape: page pool: K is [2 3]", []error{backend.ErrShape, shape}},
		{"twice", backend.Wrapf(backend.Wrapf(shape, "keys"), "page pool"), "attn: bad shape: page pool: keys: K is [2 3]", []error{backend.ErrShape}},
		{"formatted context", backend.Wrapf(shape, "sequence %d", 3), "attn: bad shape: sequence 3: K is [2 3]", []error{backend.ErrShape}},
		{"sentinel at the end", backend.Wrapf(fmt.Errorf("cpu: alloc: %w", backend.ErrReleased), "keys"), "attn: released: keys: cpu: alloc", []error{backend.ErrReleased}},
		{"sentinel alone", backend.Wrapf(backend.ErrCacheFull, "append"), "attn: cache full: append", []error{backend.ErrCacheFull}},
		{"sentinel in the middle", backend.Wrapf(fmt.Errorf("gpu: %w: device 0", backend.ErrDeviceLost), "step"), "attn: device lost: step: gpu: device 0", []error{backend.ErrDeviceLost}},
		{"no sentinel", backend.Wrapf(io.ErrUnexpectedEOF, "reading %s", "q.npy"), "reading q.npy: unexpected EOF", []error{io.ErrUnexpectedEOF}},
		{"no sentinel, wrapped", backend.Wrapf(fmt.Errorf("wait: %w", context.Canceled), "gpu"), "gpu: wait: context canceled", []error{context.Canceled}},
		{"context already there", backend.Wrapf(backend.Errorf(backend.ErrUnavailable, "gpu: no adapter"), "gpu"), "attn: backend unavailable: gpu: no adapter", []error{backend.ErrUnavailable}},
		{"context already there, no sentinel", backend.Wrapf(errors.New("gpu: wait: lost"), "gpu"), "gpu: wait: lost", nil},
		{"context as a word of the detail", backend.Wrapf(backend.Errorf(backend.ErrUnavailable, "gpus: none"), "gpu"), "attn: backend unavailable: gpu: gpus: none", []error{backend.ErrUnavailable}},
		{"nil", backend.Wrapf(nil, "nothing"), "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.err == nil {
				if tt.want != "" {
					t.Fatalf("nil error, want %q", tt.want)
				}
				return
			}
			if got := tt.err.Error(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
			for _, target := range tt.is {
				if !errors.Is(tt.err, target) {
					t.Errorf("%q does not wrap %v", tt.err, target)
				}
			}
		})
	}
	if backend.Wrapf(nil, "x") != nil {
		t.Error("Wrapf(nil) is not nil")
	}
}
