package cpu

import (
	"context"
	"fmt"
	"github.com/attn-go/attn/backend"
	"sync"
	"sync/atomic"
)

// forEach runs items 0 … n−1 of a staged op on the calling goroutine and
// the backend's workers (run) and waits for them. Each goroutine calls mk
// once for its own worker function, so that scratch memory is per worker
// and never shared.
func (b *Backend) forEach(ctx context.Context, op string, n int, mk func() func(item int)) error {
	var r pass
	return b.run(ctx, op, &r, n, workerFuncs(mk))
}

// workerFuncs is forEach's body: each worker's state is the function mk
// made for it.
type workerFuncs func() func(item int)

func (mk workerFuncs) begin() any            { return mk() }
func (workerFuncs) item(state any, item int) { state.(func(int))(item) }
func (workerFuncs) end(any)                  {}

// pass is one parallel pass over n items (a staged op's, a Fused call's
// items' splits or its merges), shared by the calling goroutine and the
// backend's workers: each takes items in order from next until none is
// left (dynamic scheduling balances causal problems, whose items differ
// in cost) and checks ctx before each one. The first error — a cancelled
// context, or a recovered panic, which would otherwise take down the
// caller's process — stops the others. A Fused call's passes live in the
// pooled fused, so a pass allocates nothing.
type pass struct {
	ctx  context.Context
	op   string
	n    int
	body passBody
	next atomic.Int64
	stop atomic.Bool
	mu   sync.Mutex
	err  error
	wg   sync.WaitGroup
}

// passBody is what a pass runs: begin gives a worker its state (its
// scratch) once, item runs one item with it, and end hands it back.
type passBody interface {
	begin() any
	item(state any, item int)
	end(state any)
}

func (r *pass) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	r.stop.Store(true)
}

// work takes items until none is left.
func (r *pass) work() {
	defer func() {
		if e := recover(); e != nil {
			r.fail(fmt.Errorf("cpu: %s: internal error: %v", r.op, e))
		}
	}()
	state := r.body.begin()
	defer r.body.end(state)
	for !r.stop.Load() {
		if err := r.ctx.Err(); err != nil {
			r.fail(backend.Wrapf(err, "cpu: %s", r.op))
			return
		}
		i := r.next.Add(1) - 1
		if i >= int64(r.n) {
			return
		}
		r.body.item(state, int(i))
	}
}

// workers are a backend's long-lived goroutines for every op's passes,
// started on first use (threads − 1 of them: the calling goroutine is
// the last) and ended by Close. Starting goroutines per call would
// allocate on every decoding step.
type workers struct {
	mu     sync.RWMutex
	once   sync.Once
	jobs   chan *pass
	closed bool
}

// run runs pass r of body over n items on the calling goroutine and up
// to threads − 1 workers, and returns its first error.
func (b *Backend) run(ctx context.Context, op string, r *pass, n int, body passBody) error {
	if n <= 0 {
		return nil
	}
	r.ctx, r.op, r.n, r.body, r.err = ctx, op, n, body, nil
	r.next.Store(0)
	r.stop.Store(false)
	w := &b.workers
	w.mu.RLock()
	defer w.mu.RUnlock()
	if helpers := min(b.threads, n) - 1; helpers > 0 && !w.closed {
		w.once.Do(func() {
			w.jobs = make(chan *pass, 64)
			for range b.threads - 1 {
				go func() {
					for r := range w.jobs {
						r.work()
						r.wg.Done()
					}
				}()
			}
		})
		r.wg.Add(helpers)
		for range helpers {
			w.jobs <- r
		}
	}
	r.work()
	r.wg.Wait()
	return r.err
}

// closeWorkers ends the workers once the passes running now are done.
func (b *Backend) closeWorkers() {
	w := &b.workers
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.closed && w.jobs != nil {
		close(w.jobs)
	}
	w.closed = true
}
