//go:build cgo && !nogpu

package gpu

import (
	"fmt"
	"reflect"

	"github.com/attn-go/attn/gpu/internal/wg"
	"github.com/attn-go/attn/shaders"
)

// pipeline is one compiled entry point of a specialised kernel, with the
// explicit bind group layout every dispatch of it uses. (An automatic
// layout would drop bindings a specialisation never reads, and then the
// same bind group would not fit every specialisation.)
type pipeline struct {
	kernel *shaders.Kernel
	p      *wg.Pipeline
}

func (p *pipeline) release() {
	if p.p != nil {
		p.p.Release()
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
	binds := make([]wg.BindingType, len(k.Bindings))
	for i, bd := range k.Bindings {
		switch bd.Access {
		case shaders.Uniform:
			binds[i] = wg.BindUniform
		case shaders.Read, shaders.ReadI32, shaders.ReadU32:
			binds[i] = wg.BindReadOnly
		case shaders.ReadWrite, shaders.ReadWriteU32, shaders.ReadWriteAtomic, shaders.ReadWriteI32:
			binds[i] = wg.BindStorage
		}
	}
	wp, err := b.dev.CreatePipeline(key, src, entry, binds)
	if err != nil {
		if se, ok := err.(*wg.StageError); ok {
			return nil, fmt.Errorf("gpu: %s for %s: %w", se.Stage, key, se.Err)
		}
		return nil, fmt.Errorf("gpu: %s: %w", key, err)
	}
	p := &pipeline{kernel: k, p: wp}
	b.pipes[key] = p
	return p, nil
}
