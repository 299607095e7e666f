//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/wg"
)

// Step records ops to run on the device without a host wait each: a
// model's layers, say, as one submission with one wait, or none when the
// caller's own next submission on the same queue is all that follows.
//
//	st := b.Record()
//	for l := range layers {
//		if err := st.Fused(ctx, p, q[l], k[l], v[l], o[l], nil); err != nil { … }
//	}
//	err := st.Submit() // or st.Wait()
//
// Each op validates its arguments and records its kernels as it is
// called, returning any error at once, exactly as the Backend's own
// method does; nothing it recorded is on the queue until Submit or Wait
// (or until the recorded work reaches one submission's budget, when it
// is submitted without a wait). A Step is reusable after Submit and Wait.
// Only the Step's methods record: the Backend's own, whatever their ctx
// carries, wait for their work. Code that holds a backend.Backend starts
// a step with Begin (backend.Recorder), and package kernels' KV caches
// record their AppendBuffers and AttendBuffers into the step passed to
// them:
//
//	cache.AppendBuffers(ctx, st, seq, 1, k, v) // the caller's K and V projections
//	cache.AttendBuffers(ctx, st, q, o, nil, heads, 1, nil)
//
// Recording. An op plans its dispatches, places their Params (and its
// variant data, up to 16 KiB) in an arena buffer shared by everything
// recorded for one submission, and finds or creates their bind groups
// (groups.go). Submission writes the arena once and encodes every
// recorded dispatch into one compute pass of one command buffer: a step
// of L layers is one submission, not L command buffers (BenchmarkRecord
// times an op's share of the host's work).
//
// Ordering. Work reaches the queue in the order the calls were made:
// recorded work is submitted before any later op that waits (the
// Backend's own methods), and before Write, WriteBits, Read, ReadBits
// and Sync, which therefore see it — Read and ReadBits wait for it, as
// they always wait for what they read. The caller's own submissions on
// the same queue run after a step's work only once Submit has returned.
//
// Errors. An op's bad input is refused by the op, before it records
// anything. WebGPU's validation errors of its bindings (a destroyed
// buffer, say) come back from the op too: the binding wraps each call in
// an error scope of the device, wgpu-native reports into it at once,
// and the op finds or creates its bind groups as it records (one that
// binds a caller's buffer is always made anew: groups.go). Should the
// encoding of the recorded pass fail at submission, nothing of it is
// submitted, and the error comes back from what submitted it (Submit,
// Wait, Sync, a host copy, or an op outside the step) and from the next
// Submit or Wait of every step with ops in it; a submission it finds
// invalid wgpu-native aborts instead of reporting, so the ops validate
// everything first. Submit and Wait return, besides, the errors the
// step's ops returned since the last Submit or Wait, each naming the op
// (see Errors and bookkeeping), and Wait an error naming the step's ops
// when the device reports the work failed (backend.ErrDeviceLost).
//
// Buffers. The buffers a recorded op uses must stay alive and unchanged
// by the caller until Submit returns: attn keeps its own scratch (and any
// attn buffer released meanwhile) until the work is submitted, and
// WebGPU then keeps it until the work has run; but the caller must not
// destroy a buffer of its own that a step uses before Submit (WebGPU
// aborts a submission that uses a destroyed buffer), nor write it from
// the host with the queue (that write would land before the step's
// work).
//
// Errors and bookkeeping. A Step counts the ops recorded since the last
// Submit or Wait, by kind, and keeps the first maxStepErrs errors among
// them, each with the op's index and kind; its memory does not grow
// with the ops recorded, so one Step may serve every token of a
// decoding loop that only submits. Submit returns the errors noted since
// the last Submit or Wait (the ops returned each of them already; a
// failed encoding of the recorded pass is among them) and starts the
// count afresh, as Wait does: an error is reported by the Submit or Wait
// that follows it, never dropped.
//
// A Step is safe for concurrent use: each op takes the Backend's lock.
// Ops of several steps recorded at once share one list of recorded work
// on the Backend, submitted in the order they were recorded.
type Step struct {
	b  *Backend
	mu sync.Mutex
	// n counts the ops recorded since the last Submit or Wait, kinds
	// them by kind (at most one entry per op of the Backend), failed
	// those that returned an error, and errs holds the first maxStepErrs
	// of those errors.
	n, failed int
	kinds     map[string]int
	errs      []error
}

// maxStepErrs is how many errors a Step keeps between two Submits or
// Waits: the first ones name what went wrong, and the count of the rest
// says how often.
const maxStepErrs = 8

// Record starts a step on b (see Step). Ops outside it still wait for
// their own work, as before.
func (b *Backend) Record() *Step { return &Step{b: b} }

// note records that op ran with result err; nil s is a no-op.
func (s *Step) note(op string, err error) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	if s.kinds == nil {
		s.kinds = map[string]int{}
	}
	s.kinds[op]++
	var sub *submitError
	if err != nil && !errors.As(err, &sub) {
		// A failed submission is noted once, by flush, in every step
		// whose work it held; the op that met it returns it too.
		s.noteErr(backend.Wrapf(err, "op %d (%s)", s.n, op))
	}
}

// submitError is flush's failure to submit recorded work, which flush
// has noted in each step whose ops the work held.
type submitError struct{ err error }

func (e *submitError) Error() string { return e.err.Error() }
func (e *submitError) Unwrap() error { return e.err }

// noteErr keeps err among the first maxStepErrs, or counts it. The
// caller holds s.mu.
func (s *Step) noteErr(err error) {
	s.failed++
	if len(s.errs) < maxStepErrs {
		s.errs = append(s.errs, err)
	}
}

// take returns what the step noted since the last Submit or Wait: its
// errors (past maxStepErrs, an error counting the rest) and a summary of
// its ops, and starts afresh.
func (s *Step) take() (errs []error, ops string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	errs, ops = s.errs, summarize(s.n, s.kinds)
	if more := s.failed - len(s.errs); more > 0 {
		errs = append(errs, fmt.Errorf("and %d more errors", more))
	}
	s.n, s.failed, s.errs = 0, 0, nil
	clear(s.kinds) // at most one key per kind of op: kept
	return errs, ops
}

// bookkeeping is the ops, errors and kinds the step holds (tests).
func (s *Step) bookkeeping() (ops, errs, kinds int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n, len(s.errs), len(s.kinds)
}

// Fused records b.Fused (see Backend.Fused).
func (s *Step) Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	if p.NeedsLowering(k, v) {
		return s.b.fusedLowered(ctx, s, p, q, k, v, o, lse)
	}
	return s.b.fused(ctx, s, p, q, k, v, o, lse)
}

// Scores records b.Scores (see Backend.Scores).
func (s *Step) Scores(ctx context.Context, p backend.ScoresParams, q, k, sc backend.Buffer) error {
	return s.b.scores(ctx, s, p, q, k, sc)
}

// Softmax records b.Softmax (see Backend.Softmax).
func (s *Step) Softmax(ctx context.Context, p backend.SoftmaxParams, sc backend.Buffer) error {
	return s.b.softmax(ctx, s, p, sc)
}

// Context records b.Context (see Backend.Context).
func (s *Step) Context(ctx context.Context, p backend.ContextParams, pm, v, o backend.Buffer) error {
	return s.b.context(ctx, s, p, pm, v, o)
}

// Copy records b.Copy (see Backend.Copy).
func (s *Step) Copy(ctx context.Context, dst, src backend.Buffer, ranges ...backend.CopyRange) error {
	return s.b.copy(ctx, s, dst, src, ranges...)
}

// Submit puts the recorded work on the queue without waiting for it. The
// caller's submissions on the same queue made after Submit returns run
// after it. It returns the errors of the step's ops since the last
// Submit or Wait (each op returned its own already) and a failure to
// submit the recorded work, and starts the step afresh; it fails on a
// closed Backend.
func (s *Step) Submit() error {
	b := s.b
	if err := b.lock(nil, "step: submit"); err != nil {
		return err
	}
	b.flush() // a failure is among the step's errors
	errs, _ := s.take()
	b.mu.Unlock()
	if len(errs) == 0 {
		return nil
	}
	return backend.Wrapf(errors.Join(errs...), "gpu: step")
}

// Wait submits the recorded work and waits for the queue to drain (on a
// shared device, the caller's earlier work included), without holding
// the device while it waits: other goroutines record and submit
// meanwhile. It returns the errors of the step's ops since the last
// Submit or Wait and, when the device reports the work failed, an error
// wrapping backend.ErrDeviceLost that names those ops. The step starts
// afresh.
func (s *Step) Wait() error {
	b := s.b
	if err := b.lock(nil, "step: wait"); err != nil {
		return err
	}
	b.flush() // a failure is among the step's errors
	// What the step noted up to its submission, taken under b.mu: ops
	// that other goroutines record into s during the wait (which lets go
	// of b.mu) belong to the next Submit or Wait.
	errs, ops := s.take()
	err := b.waitIdle()
	b.mu.Unlock()
	if err != nil {
		errs = append(errs, backend.Wrapf(err, "step of %s", ops))
	}
	if len(errs) == 0 {
		return nil
	}
	return backend.Wrapf(errors.Join(errs...), "gpu: step")
}

// summarize names n ops by kind and count: "3 ops (fused ×2, scores ×1)".
func summarize(n int, kinds map[string]int) string {
	var parts []string
	for op, c := range kinds {
		parts = append(parts, fmt.Sprintf("%s ×%d", op, c))
	}
	sort.Strings(parts)
	return fmt.Sprintf("%d ops (%s)", n, strings.Join(parts, ", "))
}

// recorded is work recorded and not yet submitted: its dispatches in
// order, the arena their Params are placed in, the steps that recorded
// them, what to release once they are submitted, and their size against
// one submission's budget.
type recorded struct {
	ds    []recordedDispatch
	arena *arena
	steps map[*Step]struct{}
	after []func()
	cost  float64
}

// flush submits the recorded work, without waiting: it writes the
// arena, encodes every dispatch into one compute pass and submits it,
// then releases what the work held (WebGPU keeps what submitted work uses
// alive until it has run). When encoding fails nothing is submitted: the
// error is returned, and the steps whose ops were in the work report it
// at their next Submit or Wait. The caller holds b.mu.
func (b *Backend) flush() error {
	p := &b.pending
	var err error
	if len(p.ds) > 0 {
		if err = b.submitRecorded(); err != nil {
			err = &submitError{backend.Wrapf(err, "submitting %d recorded dispatches", len(p.ds))}
			for s := range p.steps {
				s.mu.Lock()
				s.noteErr(err)
				s.mu.Unlock()
			}
		}
	}
	b.runAfter()
	return err
}

// submitRecorded encodes and submits b.pending's dispatches. The caller
// holds b.mu.
func (b *Backend) submitRecorded() error {
	p := &b.pending
	if b.target != nil {
		// ATTN_GPU_TARGET: the pipelines are compiled, and nothing
		// planned for another device runs on this one.
		return nil
	}
	if err := b.dev.WriteBuffer(p.arena.buf, 0, p.arena.data); err != nil {
		return err
	}
	enc, err := b.dev.CreateEncoder()
	if err != nil {
		return err
	}
	defer enc.Release()
	if err := b.stampBefore(enc); err != nil { // timing.go
		return err
	}
	ds := make([]wg.Dispatch, len(p.ds))
	var names []string // the kernels', where they are timed apart
	if t := b.timing; t != nil && t.kq != nil {
		names = make([]string, len(p.ds))
	}
	for i, d := range p.ds {
		ds[i] = wg.Dispatch{Pipeline: d.p.p, Group: d.g, Grid: [3]uint32{uint32(d.grid[0]), uint32(d.grid[1]), uint32(d.grid[2])}}
		if names != nil {
			names[i] = d.p.kernel.Name
		}
	}
	if err := b.computePass(enc, ds, names); err != nil { // timing.go
		return err
	}
	cmd, err := b.finish(enc) // enc.Finish, with the closing timestamp (timing.go)
	if err != nil {
		return err
	}
	err = b.dev.Submit(cmd)
	cmd.Release()
	return err
}

// runAfter releases the recorded work's bind groups and arena, runs what
// waited for its submission and empties the record. The caller holds
// b.mu.
func (b *Backend) runAfter() {
	p := b.pending
	b.pending = recorded{steps: p.steps}
	clear(b.pending.steps)
	for _, d := range p.ds {
		d.release()
	}
	if a := p.arena; a != nil && a.size == arenaBytes && b.spare == nil && !b.closed {
		a.data = a.data[:0]
		b.spare = a
	} else if a != nil {
		b.destroy(a.buf)
	}
	for _, f := range p.after {
		f()
	}
}

// afterSubmit runs f (the destruction of a buffer) now, or, while
// recorded work waits to be submitted, right after it is: that work may
// use the buffer. The caller holds b.mu.
func (b *Backend) afterSubmit(f func()) {
	if len(b.pending.ds) > 0 {
		b.pending.after = append(b.pending.after, f)
		return
	}
	f()
}

// Begin starts a step (backend.Recorder), for code that holds only a
// backend.Backend: Record, as a backend.Recording.
func (b *Backend) Begin() backend.Recording { return b.Record() }

var (
	_ backend.Recorder  = (*Backend)(nil)
	_ backend.Recording = (*Step)(nil)
)
