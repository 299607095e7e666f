//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"errors"
	"testing"
)

// A submission that fails is noted once in a step: flush notes it in
// every step whose work it held, and the op that met it (its record
// flushed the work before it) returns it without noting it again. An
// op's own error is noted.
func TestStepNotesSubmitOnce(t *testing.T) {
	s := &Step{}
	sub := &submitError{errors.New("submitting 3 recorded dispatches: lost")}
	s.noteErr(sub) // as flush does
	s.note("fused", sub)
	s.note("fused", errors.New("bad shape"))
	errs, ops := s.take()
	if len(errs) != 2 || ops != "2 ops (fused ×2)" {
		t.Errorf("noted %d errors (%v) over %s; want 2 over 2 ops (fused ×2)", len(errs), errs, ops)
	}
}
