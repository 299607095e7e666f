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
