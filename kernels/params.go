package kernels

import (
	"math"

	"github.com/attn-go/attn/backend"
)

// params are the options every attention computes from, whatever it runs
// over: the fields of AttendOptions exactly, and the first fields of
// Options. AttendOptions converts to params (a conversion that stops
// compiling if the two drift apart); Options copies them (TestParams
// checks that every one is copied). problem is then the one place they
// become a backend.Problem's.
type params struct {
	Scale          float64
	Causal         bool
	CausalOffset   *int
	Window         *Window
	Softcap        float64
	ALiBi          []float32
	Sinks          []float32
	KVLens         []int
	AllowNonFinite bool
	Indices        *Indices
	Blocks         *BlockMask
	Tree           *Tree
}

func (o *Options) params() params {
	return params{
		Scale: o.Scale, Causal: o.Causal, CausalOffset: o.CausalOffset, Window: o.Window,
		Softcap: o.Softcap, ALiBi: o.ALiBi, Sinks: o.Sinks, KVLens: o.KVLens,
		AllowNonFinite: o.AllowNonFinite, Indices: o.Indices, Blocks: o.Blocks, Tree: o.Tree,
	}
}

func (o *AttendOptions) params() params { return params(*o) }

// problem sets the scale, causal masking and variants of p, whose head
// dim D is set, as o asks; p.Validate checks the variants against the
// sizes after. The scale and softcap are refused unless they fit a
// float32, which the kernels compute in, and a causal offset unless
// Causal is set: the offset says where causal masking aligns, and
// backend.Variants's rule that it implies causal masking would make a
// lone offset turn on masking its caller did not ask for.
func (o params) problem(p *backend.Problem) error {
	var err error
	if p.Scale, err = o.scale(p.D); err != nil {
		return err
	}
	if c := o.Softcap; math.IsNaN(c) || math.IsInf(c, 0) || math.Abs(c) > math.MaxFloat32 {
		return backend.Errorf(backend.ErrShape, "softcap %v is not a finite float32", c)
	}
	if o.CausalOffset != nil && !o.Causal {
		return backend.Errorf(backend.ErrShape, "CausalOffset %d without Causal: an offset aligns causal masking, which Causal turns on", *o.CausalOffset)
	}
	p.Causal = o.Causal
	p.Variants = backend.Variants{
		CausalOffset: o.CausalOffset, Window: o.Window, Softcap: float32(o.Softcap),
		ALiBi: o.ALiBi, Sinks: o.Sinks, KVLens: o.KVLens,
	}
	p.Indices, p.Blocks = o.Indices, o.Blocks
	return nil
}

// scale is the scale o gives for head dim d, 1/√d for 0, or the error
// every call returns for one that is no finite float32.
func (o params) scale(d int) (float32, error) {
	s := o.Scale
	if s == 0 {
		s = 1 / math.Sqrt(float64(d))
	}
	if math.IsNaN(s) || math.IsInf(s, 0) || math.Abs(s) > math.MaxFloat32 {
		return 0, backend.Errorf(backend.ErrShape, "scale %v is not a finite float32", o.Scale)
	}
	return float32(s), nil
}
