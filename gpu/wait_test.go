//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"testing"
	"time"

	"github.com/attn-go/attn/gpu/internal/wg"
	"github.com/attn-go/attn/internal/gputest"
)

// testDevice opens a device on a Vulkan adapter (lavapipe on CPU-only
// machines) and releases it when the test ends. Without an adapter it skips,
// or fails where ATTN_REQUIRE_GPU=1 says one must exist.
func testDevice(t testing.TB) *wg.Device {
	t.Helper()
	if _, ok := os.LookupEnv("NODEVICE_SELECT"); !ok {
		t.Setenv("NODEVICE_SELECT", "1")
	}
	wg.SetLogLevel(wg.LogOff)
	inst := wg.NewInstance()
	t.Cleanup(inst.Release)
	adapter, err := inst.HighPerformanceAdapter()
	if err == nil {
		t.Cleanup(adapter.Release)
		var dev *wg.Device
		dev, err = adapter.RequestDevice("", nil, wg.DefaultLimits())
		if err == nil {
			t.Cleanup(dev.Release)
			return dev
		}
	}
	gputest.Unavailable(t, fmt.Errorf("no WebGPU device on a Vulkan adapter: %v", err))
	return nil
}

// roundTripper owns one staging pair of buffers: data goes in through
// WriteBuffer, is copied on the GPU, and comes back through a map.
type roundTripper struct {
	dev      *wg.Device
	src, dst *wg.Buffer
	size     uint64
}

func newRoundTripper(t testing.TB, dev *wg.Device, size uint64) *roundTripper {
	t.Helper()
	src, err := dev.CreateBuffer("", size, wg.UsageStorage|wg.UsageCopySrc|wg.UsageCopyDst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Release)
	dst, err := dev.CreateBuffer("", size, wg.UsageMapRead|wg.UsageCopyDst)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(dst.Release)
	return &roundTripper{dev: dev, src: src, dst: dst, size: size}
}

// upload writes data to src and submits its copy to dst.
func (r *roundTripper) upload(data []byte) error {
	if err := r.dev.WriteBuffer(r.src, 0, data); err != nil {
		return err
	}
	enc, err := r.dev.CreateEncoder()
	if err != nil {
		return err
	}
	defer enc.Release()
	if err := enc.CopyBufferToBuffer(r.src, 0, r.dst, 0, r.size); err != nil {
		return err
	}
	cmd, err := enc.Finish()
	if err != nil {
		return err
	}
	defer cmd.Release()
	if err := r.dev.Submit(cmd); err != nil {
		return err
	}
	return nil
}

// download maps dst, copies it out and unmaps it.
func (r *roundTripper) download() ([]byte, error) {
	p, err := r.dev.MapAsync(r.dst, wg.MapRead, 0, r.size)
	if err != nil {
		return nil, err
	}
	if err := p.Wait(pollSpin); err != nil {
		return nil, err
	}
	out := bytes.Clone(r.dst.Mapped(0, r.size))
	return out, r.dst.Unmap()
}

func TestMapRoundTrip(t *testing.T) {
	dev := testDevice(t)
	r := newRoundTripper(t, dev, 256)
	want := make([]byte, r.size)
	for i := range want {
		want[i] = byte(i*7 + 3)
	}
	if err := r.upload(want); err != nil {
		t.Fatal(err)
	}
	p, err := dev.OnWorkDone()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Wait(pollSpin); err != nil {
		t.Fatal(err)
	}
	got, err := r.download()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("read back %v, want %v", got[:16], want[:16])
	}
}

// TestWorkDoneIdle asks for work-done with nothing submitted: the callback
// must still come.
func TestWorkDoneIdle(t *testing.T) {
	dev := testDevice(t)
	for range 3 {
		p, err := dev.OnWorkDone()
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(pollSpin); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWaitStressGC is the regression test for go-webgpu's dangling
// userdata: thousands of submit / work-done / map round trips from several
// goroutines, with the collector running as often as it can and explicitly
// between each request and its wait, where go-webgpu's own MapAsync
// crashes (see wg's TestUpstreamMapAsyncCrash). With go-webgpu's MapAsync
// or OnSubmittedWorkDone in place of wg's MapAsync or OnWorkDone, this
// test dies with "misuse of an invalid Handle" within its first rounds. ATTN_LONG=1
// runs ten times as many.
func TestWaitStressGC(t *testing.T) {
	dev := testDevice(t)
	defer debug.SetGCPercent(debug.SetGCPercent(1))

	const workers = 4
	total := 2000
	if os.Getenv("ATTN_LONG") == "1" {
		total *= 10
	}
	var mu sync.Mutex // the device's lock: all use of dev goes under it
	rts := make([]*roundTripper, workers)
	for w := range rts {
		rts[w] = newRoundTripper(t, dev, uint64(256*(w+1)))
	}

	start := time.Now()
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			errs <- stressWorker(&mu, rts[w], w, total/workers)
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	t.Logf("%d round trips by %d goroutines in %v", total, workers, time.Since(start))
}

func stressWorker(mu *sync.Mutex, r *roundTripper, w, n int) error {
	rng := rand.New(rand.NewPCG(uint64(w), 1))
	data := make([]byte, r.size)
	locked := func(f func() error) error {
		mu.Lock()
		defer mu.Unlock()
		return f()
	}
	for i := range n {
		for j := 0; j < len(data); j += 8 {
			binary.LittleEndian.PutUint64(data[j:], rng.Uint64())
		}
		var p *wg.Pending
		err := locked(func() (err error) {
			if err = r.upload(data); err != nil {
				return err
			}
			p, err = r.dev.OnWorkDone()
			return err
		})
		if err != nil {
			return fmt.Errorf("worker %d round %d: submit: %v", w, i, err)
		}
		// Let the other workers in, and collect and reuse freed memory
		// while C holds p's userdata.
		if i%4 == 0 {
			collectAndReuse()
		}
		if err := locked(func() error { return p.Wait(pollSpin) }); err != nil {
			return fmt.Errorf("worker %d round %d: work done: %v", w, i, err)
		}

		var got []byte
		err = locked(func() error {
			p, err := r.dev.MapAsync(r.dst, wg.MapRead, 0, r.size)
			if err != nil {
				return err
			}
			if i%4 == 1 {
				collectAndReuse()
			}
			if err := p.Wait(pollSpin); err != nil {
				return err
			}
			got = bytes.Clone(r.dst.Mapped(0, r.size))
			return r.dst.Unmap()
		})
		if err != nil {
			return fmt.Errorf("worker %d round %d: map: %v", w, i, err)
		}
		if !bytes.Equal(got, data) {
			return fmt.Errorf("worker %d round %d: read back differs from what was written", w, i)
		}
	}
	return nil
}

// TestMapMisuse checks that bad map requests come back as errors, from
// MapAsync or from Wait, and leave the buffer usable. Misuse that
// wgpu-native answers by aborting the process cannot be tested here: a map
// mode other than exactly Read or Write (MapAsync refuses it in Go) and
// mapping a destroyed buffer (a panic inside the next Poll).
func TestMapMisuse(t *testing.T) {
	dev := testDevice(t)
	r := newRoundTripper(t, dev, 256)
	mapped := func(t *testing.T) {
		t.Helper()
		p, err := dev.MapAsync(r.dst, wg.MapRead, 0, r.size)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Wait(pollSpin); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.dst.Unmap() })
	}
	for _, c := range []struct {
		name   string
		setup  func(t *testing.T)
		buf    *wg.Buffer
		mode   wg.MapMode
		offset uint64
		size   uint64
	}{
		{"no MapRead usage", nil, r.src, wg.MapRead, 0, 256},
		{"no MapWrite usage", nil, r.dst, wg.MapWrite, 0, 256},
		{"mode None", nil, r.dst, wg.MapNone, 0, 256},
		{"mode Read|Write", nil, r.dst, wg.MapRead | wg.MapWrite, 0, 256},
		{"offset past end", nil, r.dst, wg.MapRead, 512, 8},
		{"size past end", nil, r.dst, wg.MapRead, 0, 1024},
		{"unaligned offset", nil, r.dst, wg.MapRead, 4, 8},
		{"unaligned size", nil, r.dst, wg.MapRead, 0, 6},
		{"already mapped", mapped, r.dst, wg.MapRead, 0, 256},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup(t)
			}
			p, err := dev.MapAsync(c.buf, c.mode, c.offset, c.size)
			if err == nil {
				err = p.Wait(pollSpin)
			}
			if err == nil {
				t.Fatal("no error")
			}
			t.Logf("error: %v", err)
		})
	}

	// A second request while the first is pending fails; the first is
	// unharmed.
	t.Run("map pending", func(t *testing.T) {
		if err := r.upload(make([]byte, r.size)); err != nil {
			t.Fatal(err)
		}
		p, err := dev.MapAsync(r.dst, wg.MapRead, 0, r.size)
		if err != nil {
			t.Fatal(err)
		}
		if q, err := dev.MapAsync(r.dst, wg.MapRead, 0, r.size); err == nil {
			q.Wait(pollSpin)
			t.Error("second map while one is pending: no error")
		}
		if err := p.Wait(pollSpin); err != nil {
			t.Fatalf("first map: %v", err)
		}
		r.dst.Unmap()
	})
	// Unmapping or destroying a buffer whose map is pending must still
	// call back, with a failed status.
	t.Run("unmap pending", func(t *testing.T) {
		if err := r.upload(make([]byte, r.size)); err != nil {
			t.Fatal(err)
		}
		p, err := dev.MapAsync(r.dst, wg.MapRead, 0, r.size)
		if err != nil {
			t.Fatal(err)
		}
		r.dst.Unmap()
		if err := p.Wait(pollSpin); err == nil {
			t.Error("map cancelled by Unmap reported success")
		} else {
			t.Logf("error: %v", err)
		}
	})
	t.Run("destroy pending", func(t *testing.T) {
		tmp := newRoundTripper(t, dev, 256)
		if err := tmp.upload(make([]byte, tmp.size)); err != nil {
			t.Fatal(err)
		}
		p, err := dev.MapAsync(tmp.dst, wg.MapRead, 0, tmp.size)
		if err != nil {
			t.Fatal(err)
		}
		tmp.dst.DestroyOnly()
		if err := p.Wait(pollSpin); err == nil {
			t.Error("map cancelled by Destroy reported success")
		} else {
			t.Logf("error: %v", err)
		}
	})

	// After all that, the buffer still round-trips.
	want := bytes.Repeat([]byte{0xa5}, int(r.size))
	if err := r.upload(want); err != nil {
		t.Fatal(err)
	}
	got, err := r.download()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Error("buffer does not round-trip after the misuse")
	}
}

// collectAndReuse runs the collector and then allocates small
// pointer-free objects, the size class of a cgo.Handle, so that memory
// freed by the collection is written over at once. A collection alone
// leaves a dead handle's bytes intact and hides the bug.
func collectAndReuse() {
	runtime.GC()
	junk := make([]*uint64, 1024)
	for j := range junk {
		junk[j] = new(^uint64(j))
	}
	runtime.KeepAlive(junk)
}
