//go:build cgo && !nogpu && !gowebgpu && !gogpu

package wg

// The binding's MapAsync and OnSubmittedWorkDone keep their Go callback
// in a table of the binding's own (a map from a pointer into a Go array
// it never frees), not behind a pointer to a Go local as go-webgpu
// v0.17.1 did: C's userdata stays valid whatever the collector does, so
// attn calls them directly. The callback only stores the status; the
// waiter polls until it has (TestWaitStressGC checks under GOGC=1).

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/oliverbestmann/webgpu/wgpu"
)

// Pending is one outstanding map or work-done request. Call Wait exactly
// once.
type Pending struct {
	dev    *Device
	what   string // "map" or "work done", for errors
	done   atomic.Bool
	status atomic.Uint32
	keep   any // the buffer mapped, held until the callback has fired
}

// MapAsync starts mapping size bytes of buf from offset for mode (exactly
// one of MapRead and MapWrite). A validation error raised by the call
// itself is returned here, with a nil *Pending; one found later comes
// back from Wait as the status.
func (d *Device) MapAsync(buf *Buffer, mode MapMode, offset, size uint64) (*Pending, error) {
	if mode != MapRead && mode != MapWrite {
		return nil, fmt.Errorf("gpu: map mode %#x: want MapMode_Read or MapMode_Write", uint32(mode))
	}
	if ok, err := d.Owns(buf.raw); err != nil {
		return nil, err
	} else if !ok {
		return nil, errors.New("gpu: mapAsync: buffer belongs to another device")
	}
	p := &Pending{dev: d, what: "map", keep: buf.raw}
	err := buf.raw.TryMapAsync(wgpu.MapMode(mode), offset, size, func(s wgpu.MapAsyncStatus) {
		p.status.Store(uint32(s))
		p.done.Store(true)
	})
	if err != nil {
		// The callback, if wgpu-core called it, stored into p, which the
		// binding's table holds: no wait is needed for memory's sake.
		return nil, fmt.Errorf("gpu: mapAsync: %s", errorText("validation", err.Error()))
	}
	return p, nil
}

// OnWorkDone asks for a callback once all work submitted to d's queue so
// far has finished.
func (d *Device) OnWorkDone() (*Pending, error) {
	p := &Pending{dev: d, what: "work done"}
	d.queue.OnSubmittedWorkDone(func(s wgpu.QueueWorkDoneStatus) {
		p.status.Store(uint32(s))
		p.done.Store(true)
	})
	return p, nil
}

// Wait polls the device with Poll(false) until p's callback has fired,
// spinning for spin and then sleeping between polls (sleep.go), and
// returns an error naming the status if it is not success. The caller
// need not hold the device's lock: wgpu-core's poll is safe from several
// threads at once, each running whatever callbacks are due, which here
// only store into their Pending.
func (p *Pending) Wait(spin time.Duration) error {
	if p == nil || p.dev == nil {
		return errors.New("gpu: wait on a finished or nil request")
	}
	backoff(spin, p.dev.poll, p.done.Load)
	p.dev, p.keep = nil, nil
	status := p.status.Load()
	switch {
	case p.what == "map" && wgpu.MapAsyncStatus(status) != wgpu.MapAsyncStatusSuccess:
		return fmt.Errorf("gpu: map failed: status %v", wgpu.MapAsyncStatus(status))
	case p.what != "map" && wgpu.QueueWorkDoneStatus(status) != wgpu.QueueWorkDoneStatusSuccess:
		return fmt.Errorf("gpu: waiting for submitted work: status %v", wgpu.QueueWorkDoneStatus(status))
	}
	return nil
}
