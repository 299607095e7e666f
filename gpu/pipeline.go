//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"errors"
	"github.com/attn-go/attn/backend"
	"reflect"
	"runtime"
	"sync"

	"github.com/attn-go/attn/gpu/internal/shaders"
	"github.com/attn-go/attn/gpu/internal/wg"
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
	key := pipeKey(k, s, entry)
	if p, ok := b.pipes[key]; ok {
		return p, nil
	}
	p, err := b.build(k, s, entry, key)
	if err != nil {
		return nil, err
	}
	b.pipes[key] = p
	return p, nil
}

// pipeKey is the name under which compile keeps entry of kernel k
// specialised by s.
func pipeKey(k *shaders.Kernel, s shaders.Spec, entry string) string {
	return k.Key(s) + " " + entry
}

// compileWorkers is how many pipelines precompile builds at once:
// GOMAXPROCS where the binding allows it (wg.ConcurrentPipelines), else 1.
func compileWorkers() int {
	if wg.ConcurrentPipelines {
		return runtime.GOMAXPROCS(0)
	}
	return 1
}

// precompile compiles the entry points of specs that are not compiled
// yet, compileWorkers of them side by side: a driver that compiles a
// pipeline when it is created, as NVIDIA's does, then uses every core,
// where pipeline compiles one at a time. It caches them as compile does
// (pipeline finds them there) and returns every failure, joined. The
// caller holds b.mu.
func (b *Backend) precompile(specs []specEntry) error {
	type job struct {
		s   specEntry
		key string
		p   *pipeline
		err error
	}
	var jobs []*job
	seen := map[string]bool{}
	for _, s := range specs {
		key := pipeKey(s.spec.Kernel(), s.spec, s.entry)
		if _, ok := b.pipes[key]; ok || seen[key] {
			continue
		}
		seen[key] = true
		jobs = append(jobs, &job{s: s, key: key})
	}
	next := make(chan *job)
	var done sync.WaitGroup
	for range min(compileWorkers(), len(jobs)) {
		done.Go(func() {
			for j := range next {
				j.p, j.err = b.build(j.s.spec.Kernel(), j.s.spec, j.s.entry, j.key)
			}
		})
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	done.Wait()
	var errs []error
	for _, j := range jobs {
		if j.err != nil {
			errs = append(errs, j.err)
			continue
		}
		b.pipes[j.key] = j.p
	}
	return errors.Join(errs...)
}

// build compiles entry of kernel k specialised by s, named key; it
// touches none of the backend's maps, so builds may run side by side.
func (b *Backend) build(k *shaders.Kernel, s shaders.Spec, entry, key string) (*pipeline, error) {
	src, err := k.Generate(s)
	if err != nil {
		return nil, backend.Wrapf(err, "gpu")
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
			return nil, backend.Wrapf(se.Err, "gpu: %s for %s", se.Stage, key)
		}
		return nil, backend.Wrapf(err, "gpu: %s", key)
	}
	return &pipeline{kernel: k, p: wp}, nil
}
