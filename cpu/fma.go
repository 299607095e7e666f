package cpu

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/attn-go/attn/cpu/internal/sgemm"
)

// An fmaKernel runs chains independent chains of fused multiply-adds,
// each lanes float32 lanes wide, n steps each:
//
//	acc[c][l] += x[l] · y[l]   for c < chains, l < lanes, n times
//
// acc holds chains·lanes values (chain c's lanes at c·lanes), x and y
// lanes each; they are loaded into registers before the first step and
// acc stored after the last, so the loop is the FMAs and nothing else.
// Its chains are enough to cover the FMA's latency on every port that
// executes it (latency 4 × 2 ports on Intel's and AMD's AVX-512 cores;
// 4 × up to 4 pipes on arm64), so the loop runs at the FMA's throughput.
type fmaKernel struct {
	name          string // the instruction and register width, and the chains
	lanes, chains int
	fn            func(n int, x, y, acc *float32)
}

// fmaOperands are one thread's x, y and acc for an fmaKernel.
type fmaOperands struct{ x, y, acc []float32 }

// operands makes a thread's operands, with values that keep the sums
// finite and normal however long the run: x·y is 2⁻³⁰, so 2³⁰ steps add
// 1.
func (k *fmaKernel) operands() fmaOperands {
	o := fmaOperands{make([]float32, k.lanes), make([]float32, k.lanes), make([]float32, k.lanes*k.chains)}
	for j := range o.x {
		o.x[j], o.y[j] = 0x1p-15, 0x1p-15
	}
	return o
}

// run runs steps steps of the kernel on o.
func (k *fmaKernel) run(o fmaOperands, steps int) { k.fn(steps, &o.x[0], &o.y[0], &o.acc[0]) }

// flops is the float32 operations one step of k does: a multiply and an
// add per lane per chain.
func (k *fmaKernel) flops() float64 { return 2 * float64(k.lanes) * float64(k.chains) }

// ErrNoFMA is what FMARate returns, wrapped with the reason, where there
// is no FMA kernel: a -tags purego build, whose arithmetic is Go's, or a
// CPU without vector FMA (amd64 without AVX2+FMA or AVX-512F, or with
// them turned off by GODEBUG).
var ErrNoFMA = errors.New("cpu: no FMA peak")

// FMAKernel names the loop FMARate times, e.g. "VFMADD231PS zmm, 16
// chains", or says why there is none (an error wrapping ErrNoFMA).
func FMAKernel() (string, error) {
	if fmaPeak == nil {
		return "", fmt.Errorf("%w: %s", ErrNoFMA, noFMAReason)
	}
	return fmaPeak.name, nil
}

// fmaStep is how many steps one call of the kernel runs while timed:
// ~0.1–1 ms, short enough that a goroutine reaches a preemption point
// often (Go does not preempt assembly), long enough that the call's
// loads and stores are nothing beside it.
const fmaStep = 1 << 16

// FMARate is the machine's peak float32 FMA rate, in GFLOP/s, on threads
// goroutines at once: each runs FMAKernel's independent chains of the
// widest vector FMA the CPU has (AVX-512 zmm, else AVX2 ymm; NEON on
// arm64) on registers alone, so the figure is the cores' arithmetic and
// nothing else — the ceiling no float32 kernel passes, against which
// SgemmRate and each attention show how much of it they use. Timed as
// SgemmRate is: a pass from the goroutines' common release to the last
// one's end, runs about budget/passes, and the fastest of passes is
// reported (2 flops a lane an FMA). Without an FMA kernel (FMAKernel) it
// returns an error wrapping ErrNoFMA.
func FMARate(threads, passes int, budget time.Duration) (float64, error) {
	if err := checkRate("FMA", threads, passes, budget); err != nil {
		return 0, err
	}
	k := fmaPeak
	if k == nil {
		return 0, fmt.Errorf("%w: %s", ErrNoFMA, noFMAReason)
	}
	ops := make([]fmaOperands, threads)
	for i := range ops {
		ops[i] = k.operands()
	}
	return peakRate(threads, passes, budget, func(i int) { k.run(ops[i], fmaStep) }, k.flops()*fmaStep), nil
}

// ErrNoAMX is what AMXRate returns, wrapped with the reason, where AMX's
// tiles cannot run: a build or CPU without AMX-BF16 (amd64 with
// AMX-TILE, AMX-BF16 and AVX512_BF16, not -tags purego), or Linux's
// refusal of the tiles.
var ErrNoAMX = errors.New("cpu: no AMX peak")

// AMXKernel names the loop AMXRate times ("TDPBF16PS, 4 tiles"), or says
// why there is none (an error wrapping ErrNoAMX).
func AMXKernel() (string, error) {
	if _, err := sgemm.NewAMXProbe(); err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoAMX, err)
	}
	return sgemm.AMXProbeKernel, nil
}

// amxStep is the rounds of one timed call of the tiles' probe: 4
// TDPBF16PS each, about 64 cycles a round at the tiles' issue rate, so
// a call is about as long as an fmaStep one.
const amxStep = 1 << 14

// AMXRate is the peak rate of AMX's tiles in bfloat16, in GFLOP/s, on
// threads goroutines at once: each runs four independent TDPBF16PS back
// to back on tiles loaded once (a 16×32 by 32×16 bfloat16 product into
// 16×16 float32 sums, 16,384 flops each), nothing of memory in the loop
// — the ceiling no kernel on the tiles passes, bfloat16 or 8-bit, as
// FMARate is float32's. Timed as FMARate is. Without the tiles it
// returns an error wrapping ErrNoAMX.
func AMXRate(threads, passes int, budget time.Duration) (float64, error) {
	if err := checkRate("AMX", threads, passes, budget); err != nil {
		return 0, err
	}
	probes := make([]*sgemm.AMXProbe, threads)
	for i := range probes {
		p, err := sgemm.NewAMXProbe()
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrNoAMX, err)
		}
		probes[i] = p
	}
	return peakRate(threads, passes, budget, func(i int) { probes[i].Run(amxStep) }, sgemm.AMXProbeFLOPs*amxStep), nil
}

// checkRate refuses a peak's timing without a thread, a pass or a budget.
func checkRate(what string, threads, passes int, budget time.Duration) error {
	if threads < 1 || passes < 1 || budget <= 0 {
		return fmt.Errorf("cpu: %s rate on %d threads, %d passes in %v: want a thread, a pass and a budget", what, threads, passes, budget)
	}
	return nil
}

// peakRate times call(i), flops flops, on threads goroutines (i their
// index) at once: one call alone sizes the passes, each pass runs about
// budget/passes from the goroutines' common release to the last one's
// end, and the fastest pass gives the rate, in GFLOP/s.
func peakRate(threads, passes int, budget time.Duration, call func(i int), flops float64) float64 {
	t0 := time.Now()
	call(0)
	one := max(time.Since(t0), time.Microsecond)
	reps := max(1, int(budget/time.Duration(passes)/one))
	best := time.Duration(math.MaxInt64)
	for range passes {
		var ready, done sync.WaitGroup
		start := make(chan struct{})
		ready.Add(threads)
		done.Add(threads)
		for i := range threads {
			go func() {
				defer done.Done()
				ready.Done()
				<-start
				for range reps {
					call(i)
				}
			}()
		}
		ready.Wait()
		t := time.Now()
		close(start)
		done.Wait()
		best = min(best, time.Since(t))
	}
	return flops * float64(reps) * float64(threads) / best.Seconds() / 1e9
}
