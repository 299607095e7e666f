//go:build cgo && !nogpu

package gpu

import (
	"fmt"
	"reflect"

	"github.com/attn-go/attn/shaders"
	"github.com/rajveermalviya/go-webgpu/wgpu"
)

// pipeline is one compiled entry point of a specialised kernel, with the
// explicit bind group layout every dispatch of it uses. (An automatic
// layout would drop bindings a specialisation never reads, and then the
// same bind group would not fit every specialisation.)
type pipeline struct {
	kernel *shaders.Kernel
	module *wgpu.ShaderModule
	bgl    *wgpu.BindGroupLayout
	layout *wgpu.PipelineLayout
	pipe   *wgpu.ComputePipeline
}

func (p *pipeline) release() {
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

// specEntry is a Spec value and an entry point: the key under which
// pipeline finds a compiled entry point again without building its
// string key (Kernel.Key formats every constant, a few µs an op).
type specEntry struct {
	spec  shaders.Spec
	entry string
}

// pipeline returns the compiled entry point of the kernel s specialises,
// compiling it on first use. The caller holds b.mu.
func (b *Backend) pipeline(s shaders.Spec, entry string) (*pipeline, error) {
	if !reflect.TypeOf(s).Comparable() {
		return b.compile(s.Kernel(), s, entry)
	}
	k := specEntry{s, entry}
	if p, ok := b.specs[k]; ok {
		return p, nil
	}
	p, err := b.compile(s.Kernel(), s, entry)
	if err != nil {
		return nil, err
	}
	if b.specs == nil {
		b.specs = map[specEntry]*pipeline{}
	}
	b.specs[k] = p
	return p, nil
}

// compile returns the compiled entry point of kernel k specialised by s
// (which Generate refuses unless it is k's Spec type), compiling it on
// first use. The caller holds b.mu.
func (b *Backend) compile(k *shaders.Kernel, s shaders.Spec, entry string) (*pipeline, error) {
	key := k.Key(s) + " " + entry
	if p, ok := b.pipes[key]; ok {
		return p, nil
	}
	src, err := k.Generate(s)
	if err != nil {
		return nil, fmt.Errorf("gpu: %w", err)
	}
	p := &pipeline{kernel: k}
	fail := func(what string, err error) (*pipeline, error) {
		p.release()
		return nil, fmt.Errorf("gpu: %s for %s: %w", what, key, err)
	}
	if p.module, err = b.dev.CreateShaderModule(&wgpu.ShaderModuleDescriptor{
		Label:          key,
		WGSLDescriptor: &wgpu.ShaderModuleWGSLDescriptor{Code: src},
	}); err != nil {
		return fail("compiling WGSL", err)
	}
	entries := make([]wgpu.BindGroupLayoutEntry, len(k.Bindings))
	for i, bd := range k.Bindings {
		e := wgpu.BindGroupLayoutEntry{Binding: uint32(i), Visibility: wgpu.ShaderStage_Compute}
		switch bd.Access {
		case shaders.Uniform:
			e.Buffer.Type = wgpu.BufferBindingType_Uniform
		case shaders.Read, shaders.ReadI32:
			e.Buffer.Type = wgpu.BufferBindingType_ReadOnlyStorage
		case shaders.ReadWrite:
			e.Buffer.Type = wgpu.BufferBindingType_Storage
		}
		entries[i] = e
	}
	if p.bgl, err = b.dev.CreateBindGroupLayout(&wgpu.BindGroupLayoutDescriptor{Label: key, Entries: entries}); err != nil {
		return fail("bind group layout", err)
	}
	if p.layout, err = b.dev.CreatePipelineLayout(&wgpu.PipelineLayoutDescriptor{
		Label: key, BindGroupLayouts: []*wgpu.BindGroupLayout{p.bgl},
	}); err != nil {
		return fail("pipeline layout", err)
	}
	if p.pipe, err = b.dev.CreateComputePipeline(&wgpu.ComputePipelineDescriptor{
		Label:   key,
		Layout:  p.layout,
		Compute: wgpu.ProgrammableStageDescriptor{Module: p.module, EntryPoint: entry},
	}); err != nil {
		return fail("compute pipeline", err)
	}
	b.pipes[key] = p
	return p, nil
}
