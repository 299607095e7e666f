package cpu

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// forEach runs items 0 … n−1 on up to b.threads goroutines and waits for
// them. Each goroutine calls mk once for its own worker function, so that
// scratch memory is per worker and never shared. Workers take items in
// order from a shared counter (dynamic scheduling balances causal
// problems, whose items differ in cost) and check ctx before each one.
// The first error — a cancelled context, or a recovered panic, which
// would otherwise take down the caller's process — stops the others.
func (b *Backend) forEach(ctx context.Context, op string, n int, mk func() func(item int)) error {
	if n <= 0 {
		return nil
	}
	var (
		next    atomic.Int64
		stop    atomic.Bool
		errOnce sync.Once
		first   error
	)
	fail := func(err error) {
		errOnce.Do(func() { first = err })
		stop.Store(true)
	}
	work := func() {
		defer func() {
			if r := recover(); r != nil {
				fail(fmt.Errorf("cpu: %s: internal error: %v", op, r))
			}
		}()
		f := mk()
		for !stop.Load() {
			if err := ctx.Err(); err != nil {
				fail(fmt.Errorf("cpu: %s: %w", op, err))
				return
			}
			i := next.Add(1) - 1
			if i >= int64(n) {
				return
			}
			f(int(i))
		}
	}
	workers := min(b.threads, n)
	if workers <= 1 {
		work()
		return first
	}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(work)
	}
	wg.Wait()
	return first
}

// fusedRun is one pass of a Fused call over its n items (the items'
// splits, or the merges), shared by the calling goroutine and the
// backend's workers: each takes items in order from next until none is
// left, the first error (a cancelled context, a recovered panic) stopping
// the others. It lives in the pooled fused, so a pass allocates nothing.
type fusedRun struct {
	ctx   context.Context
	op    string
	f     *fused
	n     int
	merge bool
	next  atomic.Int64
	stop  atomic.Bool
	mu    sync.Mutex
	err   error
	wg    sync.WaitGroup
}

func (r *fusedRun) fail(err error) {
	r.mu.Lock()
	if r.err == nil {
		r.err = err
	}
	r.mu.Unlock()
	r.stop.Store(true)
}

// work takes items until none is left, on a worker's scratch from the
// backend's pool.
func (r *fusedRun) work() {
	b := r.f.b
	sc := b.scratchPool.Get().(*fusedScratch)
	defer b.scratchPool.Put(sc)
	defer func() {
		if e := recover(); e != nil {
			r.fail(fmt.Errorf("cpu: %s: internal error: %v", r.op, e))
		}
	}()
	sc.fit(r.f)
	for !r.stop.Load() {
		if err := r.ctx.Err(); err != nil {
			r.fail(fmt.Errorf("cpu: %s: %w", r.op, err))
			return
		}
		i := r.next.Add(1) - 1
		if i >= int64(r.n) {
			return
		}
		r.f.do(sc, int(i), r.merge)
	}
}

// workers are a backend's long-lived goroutines for Fused, started on
// first use (threads − 1 of them: the calling goroutine is the last) and
// ended by Close. Starting goroutines per call would allocate on every
// decoding step.
type workers struct {
	mu     sync.RWMutex
	once   sync.Once
	jobs   chan *fusedRun
	closed bool
}

// run runs pass r of f over n items on the calling goroutine and up to
// threads − 1 workers, and returns its first error.
func (b *Backend) run(ctx context.Context, op string, r *fusedRun, f *fused, n int, merge bool) error {
	if n <= 0 {
		return nil
	}
	r.ctx, r.op, r.f, r.n, r.merge, r.err = ctx, op, f, n, merge, nil
	r.next.Store(0)
	r.stop.Store(false)
	w := &b.workers
	w.mu.RLock()
	defer w.mu.RUnlock()
	if helpers := min(b.threads, n) - 1; helpers > 0 && !w.closed {
		w.once.Do(func() {
			w.jobs = make(chan *fusedRun, 64)
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
