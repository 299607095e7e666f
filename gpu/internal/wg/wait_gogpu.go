//go:build gogpu && !nogpu

package wg

// Map and work-done requests over gogpu/wgpu. A map is the binding's
// MapAsync, whose MapPending resolves when the device is polled after
// the submissions that use the buffer have finished; work done is the
// queue's last submission index, reached when the queue's completed
// index passes it. Both are polled with the backoff of sleep.go, not
// with the binding's Buffer.Map, which waits for the whole device to go
// idle.

import (
	"errors"
	"fmt"
	"time"

	"github.com/gogpu/wgpu"
)

// Pending is one outstanding map or work-done request. Call Wait exactly
// once.
type Pending struct {
	dev  *Device
	what string // "map" or "work done", for errors
	mp   *wgpu.MapPending
	idx  uint64 // the submission work done waits for
	// resolved and err are a map's outcome: the binding's MapPending is
	// returned to its pool once it has said so, and is not asked again.
	resolved bool
	err      error
}

// MapAsync starts mapping size bytes of buf from offset for mode (exactly
// one of MapRead and MapWrite). The binding's validation error (usage,
// alignment, range, a buffer already mapped or destroyed) is returned
// here, with a nil *Pending; a failure found later comes back from Wait.
func (d *Device) MapAsync(buf *Buffer, mode MapMode, offset, size uint64) (*Pending, error) {
	if mode != MapRead && mode != MapWrite {
		return nil, fmt.Errorf("gpu: map mode %#x: want MapMode_Read or MapMode_Write", uint32(mode))
	}
	if ok, err := d.Owns(buf.raw); err != nil {
		return nil, err
	} else if !ok {
		return nil, errors.New("gpu: mapAsync: buffer belongs to another device")
	}
	mp, err := buf.raw.MapAsync(wgpu.MapMode(mode), offset, size)
	if err != nil {
		return nil, fmt.Errorf("gpu: mapAsync: %w", err)
	}
	return &Pending{dev: d, what: "map", mp: mp}, nil
}

// OnWorkDone asks to be told once all work submitted to d's queue so far
// has finished.
func (d *Device) OnWorkDone() (*Pending, error) {
	return &Pending{dev: d, what: "work done", idx: d.queue.LastSubmissionIndex()}, nil
}

// done reports whether p's request has resolved: a map's status, or the
// queue's completed index.
func (p *Pending) done() bool {
	switch {
	case p.what != "map":
		return p.dev.queue.Poll() >= p.idx
	case !p.resolved:
		p.resolved, p.err = p.mp.Status()
	}
	return p.resolved
}

// Wait polls the device until p's request has resolved, spinning for
// spin and then sleeping between polls (sleep.go), and returns an error
// saying why a map failed. The caller need not hold the device's lock:
// the binding's device and queue are safe for concurrent use.
func (p *Pending) Wait(spin time.Duration) error {
	if p == nil || p.dev == nil {
		return errors.New("gpu: wait on a finished or nil request")
	}
	dev := p.dev
	if p.what == "map" {
		backoff(spin, func() { dev.raw.Poll(wgpu.PollPoll) }, p.done)
	} else {
		backoff(spin, func() {}, p.done)
	}
	p.dev = nil
	if p.err != nil {
		return fmt.Errorf("gpu: map failed: %w", p.err)
	}
	return nil
}
