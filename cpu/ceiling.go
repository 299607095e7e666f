package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"gonum.org/v1/gonum/blas"
)

// CeilingSizes are the orders of the square products SgemmRate times,
// and the fastest is the ceiling: 512 is large enough that the Sgemm's
// packing and edges are a small part of each call and small enough
// (3 MiB a thread) that the operands stay in the caches; the larger
// orders amortise the packing as a staged attention's long products do,
// which have run above the 512 rate at long sequences, so that no point
// of a sweep should stand above the roof.
var CeilingSizes = []int{512, 1024, 2048}

// SgemmRate is the rate, in GFLOP/s, at which threads goroutines each
// multiply square float32 matrices with the BLAS the backend multiplies
// with (attn's micro-kernel, gonum's pure Go or OpenBLAS, as Info's
// Driver names it), all at once: the fastest over CeilingSizes, the
// compute ceiling of a roofline for this backend on this machine, which
// a tiled attention, made of such products and its softmax, approaches
// but does not pass. Each goroutine has operands of its own; a pass is
// timed from their common release to the last one's end, runs products
// until about budget/(passes·sizes) has gone, and the fastest pass of
// any size is reported (2·n³ flops a product).
func SgemmRate(threads, passes int, budget time.Duration) (float64, error) {
	if threads < 1 || passes < 1 || budget <= 0 {
		return 0, fmt.Errorf("cpu: Sgemm rate on %d threads, %d passes in %v: want a thread, a pass and a budget", threads, passes, budget)
	}
	var best float64
	for _, n := range CeilingSizes {
		best = max(best, sgemmRateAt(n, threads, passes, budget/time.Duration(len(CeilingSizes))))
	}
	return best, nil
}

// sgemmRateAt is SgemmRate at order n alone.
func sgemmRateAt(n, threads, passes int, budget time.Duration) float64 {
	type operands struct{ a, b, c []float32 }
	ops := make([]operands, threads)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range ops {
		ops[i] = operands{make([]float32, n*n), make([]float32, n*n), make([]float32, n*n)}
		for j := range ops[i].a {
			ops[i].a[j] = rng.Float32() - 0.5
			ops[i].b[j] = rng.Float32() - 0.5
		}
	}
	mul := func(o operands) {
		blasImpl.Sgemm(blas.NoTrans, blas.NoTrans, n, n, n, 1, o.a, n, o.b, n, 0, o.c, n)
	}
	// One product a thread, alone, sizes the passes.
	t0 := time.Now()
	mul(ops[0])
	one := max(time.Since(t0), time.Microsecond)
	reps := max(1, int(budget/time.Duration(passes)/one))
	best := time.Duration(math.MaxInt64)
	for range passes {
		var ready, done sync.WaitGroup
		start := make(chan struct{})
		ready.Add(threads)
		done.Add(threads)
		for i := range ops {
			go func() {
				defer done.Done()
				ready.Done()
				<-start
				for range reps {
					mul(ops[i])
				}
			}()
		}
		ready.Wait()
		t := time.Now()
		close(start)
		done.Wait()
		best = min(best, time.Since(t))
	}
	flops := 2 * float64(n) * float64(n) * float64(n) * float64(reps) * float64(threads)
	return flops / best.Seconds() / 1e9
}
