//go:build (cgo || gogpu) && !nogpu

package wg

// Buffers, pipelines, bind groups, query sets and command encoders, over
// the binding's calls (deviceCalls, encoderCalls, passCalls in
// binding.go).

import "fmt"

// Buffer is a handle to a wgpu buffer. Two Buffers may be handles to one
// wgpu buffer (Reference): Same tells.
type Buffer struct{ raw *NativeBuffer }

// WrapBuffer is a Buffer of the handle b, which stays the caller's: no
// reference of its own, so Release releases b.
func WrapBuffer(b *NativeBuffer) *Buffer { return &Buffer{b} }

// CreateBuffer makes a buffer of size bytes.
func (d *Device) CreateBuffer(label string, size uint64, usage Usage) (*Buffer, error) {
	b, err := d.createBuffer(label, size, usage)
	if err != nil {
		return nil, err
	}
	if b == nil {
		return nil, fmt.Errorf("no buffer of %d bytes", size)
	}
	return &Buffer{b}, nil
}

func (b *Buffer) Native() *NativeBuffer { return b.raw }

// Pipeline is one compiled entry point with its explicit bind group
// layout.
type Pipeline struct {
	module *nativeModule
	bgl    *nativeGroupLayout
	layout *nativePipelineLayout
	pipe   *nativePipeline
}

// Release releases what the pipeline holds, which after a failed
// CreatePipeline is what was made before the failure.
func (p *Pipeline) Release() {
	if p.pipe != nil {
		p.pipe.Release()
	}
	if p.layout != nil {
		p.layout.Release()
	}
	if p.bgl != nil {
		p.bgl.Release()
	}
	if p.module != nil {
		p.module.Release()
	}
}

// CreatePipeline compiles entry of the WGSL src into a compute pipeline
// whose one bind group binds a buffer of each type in binds, at slots 0,
// 1, …. The error is a *StageError.
func (d *Device) CreatePipeline(label, src, entry string, binds []BindingType) (*Pipeline, error) {
	p := &Pipeline{}
	fail := func(what string, err error) (*Pipeline, error) {
		p.Release()
		return nil, &StageError{what, err}
	}
	var err error
	if p.module, err = d.createModule(label, src); err != nil {
		return fail("compiling WGSL", err)
	}
	if p.bgl, err = d.createGroupLayout(label, binds); err != nil {
		return fail("bind group layout", err)
	}
	if p.layout, err = d.createPipelineLayout(label, p.bgl); err != nil {
		return fail("pipeline layout", err)
	}
	if p.pipe, err = d.createPipeline(label, p.layout, p.module, entry); err != nil {
		return fail("compute pipeline", err)
	}
	return p, nil
}

// bySlot is f of each x of xs and its slot in a bind group, which is its
// index (Entry): a binding's entries of a bind group or of its layout.
func bySlot[X, E any](xs []X, f func(slot uint32, x X) E) []E {
	es := make([]E, len(xs))
	for i, x := range xs {
		es[i] = f(uint32(i), x)
	}
	return es
}

// BindGroup is a bind group of a Pipeline's layout.
type BindGroup struct{ raw *nativeGroup }

func (g *BindGroup) Release() { g.raw.Release() }

// CreateBindGroup binds entries[i] at slot i of p's layout.
func (d *Device) CreateBindGroup(p *Pipeline, entries []Entry) (*BindGroup, error) {
	g, err := d.createGroup(p.bgl, entries)
	if err != nil {
		return nil, err
	}
	return &BindGroup{g}, nil
}

// QuerySet is a set of timestamp queries.
type QuerySet struct{ raw *nativeQuerySet }

func (q *QuerySet) Release() { q.raw.Release() }

// CreateTimestamps makes a query set of count timestamps.
func (d *Device) CreateTimestamps(label string, count uint32) (*QuerySet, error) {
	qs, err := d.createTimestamps(label, count)
	if err != nil {
		return nil, err
	}
	return &QuerySet{qs}, nil
}

// Encoder records commands; Finish makes them a CommandBuffer, and
// Release frees what is left either way. dev is the device it records
// for, on which a binding's call may open an error scope.
type Encoder struct {
	raw *nativeEncoder
	dev *Device
}

// CreateEncoder starts recording.
func (d *Device) CreateEncoder() (*Encoder, error) {
	e, err := d.createEncoder()
	if err != nil {
		return nil, err
	}
	return &Encoder{e, d}, nil
}

func (e *Encoder) Release() { e.raw.Release() }

// Dispatch is one kernel launch of a compute pass.
type Dispatch struct {
	Pipeline *Pipeline
	Group    *BindGroup
	Grid     [3]uint32
}

// ComputePass records ds, in order, in one compute pass.
func (e *Encoder) ComputePass(ds []Dispatch) error { return e.record(ds, nil) }

// record records ds, in order, in one compute pass. Where stamp is not
// nil it is called with the pass before dispatch i, with i, and after
// the last, with len(ds): a binding's ComputePassStamped writes its
// timestamps there.
func (e *Encoder) record(ds []Dispatch, stamp func(pass *nativePass, i uint32)) error {
	pass := e.beginPass()
	for i, d := range ds {
		if stamp != nil {
			stamp(pass, uint32(i))
		}
		pass.SetPipeline(d.Pipeline.pipe)
		pass.SetBindGroup(0, d.Group.raw, nil)
		pass.DispatchWorkgroups(d.Grid[0], d.Grid[1], d.Grid[2])
	}
	if stamp != nil {
		stamp(pass, uint32(len(ds)))
	}
	err := e.endPass(pass)
	pass.Release()
	return err
}

// CommandBuffer is recorded work for Submit.
type CommandBuffer struct{ raw *nativeCommands }

func (c *CommandBuffer) Release() { c.raw.Release() }

func (e *Encoder) Finish() (*CommandBuffer, error) {
	c, err := e.finish()
	if err != nil {
		return nil, err
	}
	return &CommandBuffer{c}, nil
}
