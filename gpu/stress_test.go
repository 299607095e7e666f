//go:build (cgo || gogpu) && !nogpu

package gpu_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/kernels"
)

// pattern is the value element i of a buffer holds in version tag: an
// integer below 2²⁴, so exact in float32, and different for every buffer,
// version and element a stress test reads.
func pattern(i, tag int) float32 {
	return float32((uint32(i)*2654435761 ^ uint32(tag)*40503) & 0xffffff)
}

// smallCase is the fused problem the stress tests run between readbacks.
func smallCase() backendtest.Case {
	return backendtest.RandomCase(newRand(7), bnhd(prob(1, 2, 1, 17, 33, 16, 8)), nil, shape(1, 1, 1, 33))
}

// deviceCase is smallCase uploaded to one backend.
type deviceCase struct {
	q, k, v, keep backend.Buffer
	params        backend.FusedParams
}

func upload(t testing.TB, be backend.Backend, c backendtest.Case) deviceCase {
	t.Helper()
	in := func(x []float32) backend.Buffer {
		b, err := be.Alloc(backend.Float32, len(x))
		if err != nil {
			t.Fatal(err)
		}
		if err := be.Write(b, 0, x); err != nil {
			t.Fatal(err)
		}
		return b
	}
	d := deviceCase{q: in(c.Q), k: in(c.K), v: in(c.V), keep: in(c.Keep.Data)}
	d.params = backend.FusedParams{Problem: c.Problem, Keep: &backend.Mask{Buf: d.keep, Shape: c.Keep.Shape}}
	return d
}

// TestStressReadbacks has four goroutines share one backend for at least
// 10 000 Reads in all (1 000 with -short), with Writes and small Fused
// calls in between, while the GC runs all the time (GC percent 1, an
// explicit runtime.GC now and then, and a goroutine that collects and
// reuses memory without rest): the map and work-done callbacks must
// survive the GC (see gpu/internal/wg; go-webgpu's own MapAsync in Read dies here
// within a second of "misuse of an invalid Handle"), and every readback
// must hold exactly the data last written, or exactly the fused result a
// lone call gave.
func TestStressReadbacks(t *testing.T) {
	g := openGPU(t)
	ctx := context.Background()
	reads := 10000
	if testing.Short() {
		reads = 1000
	}
	const workers = 4
	defer debug.SetGCPercent(debug.SetGCPercent(1))

	// A shared buffer every worker reads, a little over the 16 MiB
	// staging buffer so that reading it whole takes two chunks.
	const sharedTag = 1 << 20
	shared := make([]float32, 4<<20+12345)
	for i := range shared {
		shared[i] = pattern(i, sharedTag)
	}
	sb, err := g.Alloc(backend.Float32, len(shared))
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Write(sb, 0, shared); err != nil {
		t.Fatal(err)
	}

	// The fused result every call must reproduce bitwise, and which must
	// agree with the CPU.
	c := smallCase()
	want, err := run(ctx, g, c, kernels.Fused, true)
	if err != nil {
		t.Fatal(err)
	}
	cpuOut, err := run(ctx, openCPU(t), c, kernels.Fused, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agree(c, want, cpuOut); err != nil {
		t.Fatalf("%v: gpu and cpu disagree:\n%v", c, err)
	}
	dc := upload(t, g, c)

	// A collector that never rests: it runs the GC and at once reuses the
	// memory freed, in small pointer-free objects (a cgo.Handle's size
	// class), while the workers wait on the device. A Go value that C
	// holds only by address would be collected and overwritten here.
	done := make(chan struct{})
	var churned sync.WaitGroup
	var nChurn int
	churned.Go(func() {
		for {
			select {
			case <-done:
				return
			default:
			}
			runtime.GC()
			junk := make([]*uint64, 1024)
			for j := range junk {
				junk[j] = new(uint64(j))
			}
			runtime.KeepAlive(junk)
			nChurn++
		}
	})

	start := time.Now()
	var mu sync.Mutex
	var nReads, nWrites, nFused, nGC, nBig int
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := newRand(uint64(1000 + w))
			n := 3000 + 77*w
			tag := w << 8
			mine := make([]float32, n)
			for i := range mine {
				mine[i] = pattern(i, tag)
			}
			buf, err := g.Alloc(backend.Float32, n)
			if err == nil {
				err = g.Write(buf, 0, mine)
			}
			o, err2 := g.Alloc(backend.Float32, c.OLen())
			lse, err3 := g.Alloc(backend.Float32, c.LSELen())
			if err := errors.Join(err, err2, err3); err != nil {
				t.Error(err)
				return
			}
			defer buf.Release()
			defer o.Release()
			defer lse.Release()

			var r, wr, fu, gc, big int
			defer func() {
				mu.Lock()
				nReads, nWrites, nFused, nGC, nBig = nReads+r, nWrites+wr, nFused+fu, nGC+gc, nBig+big
				mu.Unlock()
			}()
			check := func(what string, got, want []float32, off int) bool {
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Errorf("worker %d, read %d (%s): element %d of %d at offset %d is %v, want %v",
							w, r, what, i, len(got), off, got[i], want[i])
						return false
					}
				}
				return true
			}
			for it := 0; it < reads/workers; it++ {
				switch {
				case it%97 == 13:
					// Rewrite part of my buffer with a new version.
					tag++
					off := rng.IntN(n)
					m := rng.IntN(n - off + 1)
					src := make([]float32, m)
					for i := range src {
						src[i] = pattern(off+i, tag)
					}
					if err := g.Write(buf, off, src); err != nil {
						t.Errorf("worker %d: Write: %v", w, err)
						return
					}
					copy(mine[off:], src)
					wr++
				case it%331 == 7:
					// A small fused call, read back in full.
					if err := g.Fused(ctx, dc.params, dc.q, dc.k, dc.v, o, lse); err != nil {
						t.Errorf("worker %d: Fused: %v", w, err)
						return
					}
					got := make([]float32, c.OLen())
					gotLSE := make([]float32, c.LSELen())
					if err := errors.Join(g.Read(got, o, 0), g.Read(gotLSE, lse, 0)); err != nil {
						t.Errorf("worker %d: Read: %v", w, err)
						return
					}
					if !check("fused O", got, want.O, 0) || !check("fused LSE", gotLSE, want.LSE, 0) {
						return
					}
					fu++
					r += 2
				case it%50 == 49:
					runtime.GC()
					gc++
				}

				// One read: mostly a random range of my buffer, sometimes
				// of the shared one, twice per worker the whole shared one.
				src, data := buf, mine
				if rng.IntN(4) == 0 {
					src, data = sb, shared
				}
				off := rng.IntN(len(data) + 1)
				m := rng.IntN(min(len(data)-off, 4096) + 1)
				if it == reads/workers/3 || it == 2*reads/workers/3 {
					src, data, off, m = sb, shared, 0, len(shared)
					big++
				}
				got := make([]float32, m)
				if err := g.Read(got, src, off); err != nil {
					t.Errorf("worker %d: Read(%d at %d): %v", w, m, off, err)
					return
				}
				r++
				if !check("data", got, data[off:off+m], off) {
					return
				}
			}
		})
	}
	wg.Wait()
	el := time.Since(start)
	close(done)
	churned.Wait()
	t.Logf("%d workers: %d reads (%d of the whole %d MiB shared buffer), %d writes, %d fused calls, %d explicit GCs in %v (%.0f reads/s); %d GCs by the collector goroutine",
		workers, nReads, nBig, len(shared)*4>>20, nWrites, nFused, nGC, el.Round(time.Millisecond), float64(nReads)/el.Seconds(), nChurn)
	if !t.Failed() && nReads < reads {
		t.Errorf("only %d reads, want ≥ %d", nReads, reads)
	}
}

// rssBytes is this process's resident set size, from /proc/self/statm.
func rssBytes(t testing.TB) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Skipf("no /proc/self/statm: %v", err)
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		t.Fatalf("/proc/self/statm: %q", b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatalf("/proc/self/statm: %q: %v", b, err)
	}
	return pages * int64(os.Getpagesize())
}

// openFDs is the number of this process's open file descriptors.
func openFDs(t testing.TB) int {
	t.Helper()
	e, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skipf("no /proc/self/fd: %v", err)
	}
	return len(e)
}

// Allowances of TestOpenCloseCycles, after the warm-up cycles: the open
// file descriptors may grow by fdSlack, the goroutines not at all (both
// exact counts, which no load on the host changes), and, in its long
// form only, the RSS by rssSlack. The RSS is the one measure a busy host
// moves: with one malloc arena (inOneArena) it grew by a few MiB over
// 1,000 cycles on an idle 2-core host and by several times that on a
// shared one, as lavapipe's threads interleave their frees, which no
// leak of ours changes. A leak grows with the cycles: over the long
// form's 950 measured ones, 48 KiB a cycle (a leaked backend keeps far
// more: its device, its pipelines, its dummies) passes rssSlack, over
// three times the most that noise was seen to add. The short form's 40
// cycles could not tell such a leak from that noise, so it only logs the
// RSS.
const (
	rssSlack = 44 << 20
	fdSlack  = 2
)

// arenaEnv is glibc's limit on its malloc arenas. Mesa 25's lavapipe starts
// threads of its own for every device, and glibc gives new threads new
// arenas, up to 8 per core, each of which keeps the memory it has touched.
// Over open/close cycles the RSS so climbs by tens of MiB (about 90 MiB on
// two cores, flat after some 600 cycles) without a byte leaked; with one
// arena the same cycles stay within 4 MiB. TestOpenCloseCycles runs itself
// in a child process with one arena, so what it measures is leaks and not
// the number of arenas.
const arenaEnv = "MALLOC_ARENA_MAX"

// inOneArena runs test t again in a child process of this test binary with
// arenaEnv=1, and reports the child's outcome as t's: true means the caller
// is the child and should run the test body.
func inOneArena(t *testing.T) bool {
	if runtime.GOOS != "linux" || os.Getenv(arenaEnv) == "1" {
		return true
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), arenaEnv+"=1")
	out, err := cmd.CombinedOutput()
	switch {
	case err != nil:
		t.Fatalf("%s with %s=1: %v\n%s", t.Name(), arenaEnv, err, out)
	case bytes.Contains(out, []byte("--- SKIP: "+t.Name())):
		t.Skipf("%s with %s=1 skipped:\n%s", t.Name(), arenaEnv, out)
	case !bytes.Contains(out, []byte("--- PASS: "+t.Name())):
		t.Fatalf("%s with %s=1 did not run:\n%s", t.Name(), arenaEnv, out)
	default:
		t.Logf("%s with %s=1:\n%s", t.Name(), arenaEnv, out)
	}
	return false
}

// TestOpenCloseCycles opens a backend, writes, runs a small fused call,
// reads and closes, over and over (1 000 times under ATTN_LONG=1, 50
// otherwise), and checks that nothing accumulates: after the warm-up, the
// goroutines return to their count, the open file descriptors and the
// resident memory stay within the allowances above. Each cycle also checks
// that the closed backend refuses every call with ErrReleased, that its
// buffers do too, and that closing twice is fine. It runs in a child process
// with one malloc arena (inOneArena).
func TestOpenCloseCycles(t *testing.T) {
	if !inOneArena(t) {
		return
	}
	cycles, warm := 50, 10
	if long() {
		cycles, warm = 1000, 50
	}
	ctx := context.Background()
	c := smallCase()
	want, err := run(ctx, openCPU(t), c, kernels.Fused, true)
	if err != nil {
		t.Fatal(err)
	}

	cycle := func(i int) {
		g := openGPU(t)
		dc := upload(t, g, c)
		o, err := g.Alloc(backend.Float32, c.OLen())
		if err != nil {
			t.Fatal(err)
		}
		lse, err := g.Alloc(backend.Float32, c.LSELen())
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Fused(ctx, dc.params, dc.q, dc.k, dc.v, o, lse); err != nil {
			t.Fatalf("cycle %d: Fused: %v", i, err)
		}
		var got outputs
		got.O, got.LSE = make([]float32, c.OLen()), make([]float32, c.LSELen())
		if err := errors.Join(g.Read(got.O, o, 0), g.Read(got.LSE, lse, 0)); err != nil {
			t.Fatalf("cycle %d: Read: %v", i, err)
		}
		if _, err := agree(c, got, want); err != nil {
			t.Fatalf("cycle %d: gpu and cpu disagree:\n%v", i, err)
		}
		dc.k.Release() // one buffer released before Close, the rest by it
		if err := g.Close(); err != nil {
			t.Fatalf("cycle %d: Close: %v", i, err)
		}
		if err := closedChecks(g, dc, o, lse, got.O); err != nil {
			t.Fatalf("cycle %d: after Close: %v", i, err)
		}
	}

	for i := range warm {
		cycle(i)
	}
	runtime.GC()
	debug.FreeOSMemory()
	g0, fd0, rss0 := runtime.NumGoroutine(), openFDs(t), rssBytes(t)
	start := time.Now()
	for i := warm; i < cycles; i++ {
		cycle(i)
		if (i+1)%250 == 0 {
			t.Logf("after %d cycles: RSS %.1f MiB, %d fds, %d goroutines", i+1, float64(rssBytes(t))/(1<<20), openFDs(t), runtime.NumGoroutine())
		}
	}
	per := time.Since(start) / time.Duration(cycles-warm)
	runtime.GC()
	debug.FreeOSMemory()
	g1 := runtime.NumGoroutine()
	for deadline := time.Now().Add(2 * time.Second); g1 > g0 && time.Now().Before(deadline); g1 = runtime.NumGoroutine() {
		time.Sleep(10 * time.Millisecond)
	}
	fd1, rss1 := openFDs(t), rssBytes(t)
	t.Logf("%d cycles after %d of warm-up, %v each: goroutines %d → %d, fds %d → %d, RSS %.1f → %.1f MiB",
		cycles-warm, warm, per.Round(10*time.Microsecond), g0, g1, fd0, fd1, float64(rss0)/(1<<20), float64(rss1)/(1<<20))
	if g1 > g0 {
		t.Errorf("goroutines grew from %d to %d over %d cycles", g0, g1, cycles-warm)
	}
	if fd1 > fd0+fdSlack {
		t.Errorf("open file descriptors grew from %d to %d over %d cycles (allowed %d)", fd0, fd1, cycles-warm, fdSlack)
	}
	if long() && rss1 > rss0+rssSlack {
		t.Errorf("RSS grew from %.1f to %.1f MiB over %d cycles (allowed %d MiB)",
			float64(rss0)/(1<<20), float64(rss1)/(1<<20), cycles-warm, rssSlack>>20)
	}
}

// closedChecks checks a closed backend: every call and every one of its
// buffers gives ErrReleased, releasing a buffer is harmless, Len is
// unchanged, and Close again returns nil.
func closedChecks(g backend.Backend, dc deviceCase, o, lse backend.Buffer, dst []float32) error {
	ctx := context.Background()
	p := dc.params.Problem
	var errs []error
	want := func(what string, err error) {
		if !errors.Is(err, backend.ErrReleased) {
			errs = append(errs, fmt.Errorf("%s: got %v, want ErrReleased", what, err))
		}
	}
	_, err := g.Alloc(backend.Float32, 4)
	want("Alloc", err)
	want("Read", g.Read(dst, o, 0))
	want("Read of a buffer released before Close", g.Read(dst[:1], dc.k, 0))
	want("Write", g.Write(dc.q, 0, []float32{1}))
	want("Fused", g.Fused(ctx, dc.params, dc.q, dc.k, dc.v, o, lse))
	want("Sync", g.Sync())
	if n := o.Len(); n != p.OLen() {
		errs = append(errs, fmt.Errorf("O.Len() = %d after Close, want %d", n, p.OLen()))
	}
	for _, b := range []backend.Buffer{dc.q, dc.k, dc.v, dc.keep, o, lse} {
		b.Release()
	}
	if err := g.Close(); err != nil {
		errs = append(errs, fmt.Errorf("second Close: %v", err))
	}
	return errors.Join(errs...)
}
