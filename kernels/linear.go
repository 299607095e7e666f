package kernels

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/attn-go/attn/backend"
)

// Linear is the affine map of the tutorials' projections:
//
//	y = x·W + b
//
// with b of length Out (nil for none). W is stored [In, Out] by default,
// as the tutorials write it (so that y = x·W). PyTorch's nn.Linear stores
// its weight [Out, In] and computes y = x·Wᵀ + b; set Layout to OutIn to
// use such a weight as it is, without transposing it first.
type Linear struct {
	W      *Tensor
	B      []float32
	Layout WeightLayout
}

// WeightLayout is the order of a Linear's weight dimensions.
type WeightLayout int

const (
	// InOut is W of shape [In, Out]: y = x·W + b (the zero value).
	InOut WeightLayout = iota
	// OutIn is W of shape [Out, In], PyTorch's nn.Linear.weight:
	// y = x·Wᵀ + b.
	OutIn
)

func (l WeightLayout) String() string {
	switch l {
	case InOut:
		return "[In, Out]"
	case OutIn:
		return "[Out, In]"
	}
	return fmt.Sprintf("WeightLayout(%d)", int(l))
}

func (l Linear) check(name string) (in, out int, err error) {
	if l.W == nil {
		return 0, 0, backend.Errorf(backend.ErrShape, "%s: no weight matrix", name)
	}
	if err := l.W.check(name + ".W"); err != nil {
		return 0, 0, err
	}
	if l.Layout != InOut && l.Layout != OutIn {
		return 0, 0, backend.Errorf(backend.ErrShape, "%s: unknown weight layout %v", name, l.Layout)
	}
	if len(l.W.Shape) != 2 {
		return 0, 0, backend.Errorf(backend.ErrShape, "%s.W has shape %v; want %v", name, l.W.Shape, l.Layout)
	}
	in, out = l.W.Shape[0], l.W.Shape[1]
	if l.Layout == OutIn {
		in, out = out, in
	}
	if l.B != nil && len(l.B) != out {
		return 0, 0, backend.Errorf(backend.ErrShape, "%s.B has %d elements; W of shape %v (%v) needs %d", name, len(l.B), l.W.Shape, l.Layout, out)
	}
	return in, out, nil
}

// Apply returns x·W + b (x·Wᵀ + b for an OutIn weight) for x of shape
// [..., In]; the result has shape [..., Out] and x's layout and dtype.
// Half x or W are widened exactly; sums accumulate in float64, and a half
// result is rounded to nearest even and saturated (backend.DType.Saturate).
func (l Linear) Apply(x *Tensor) (*Tensor, error) {
	return l.apply("linear", x)
}

func (l Linear) apply(name string, x *Tensor) (*Tensor, error) {
	in, out, err := l.check(name)
	if err != nil {
		return nil, err
	}
	if err := x.check("x"); err != nil {
		return nil, err
	}
	if len(x.Shape) == 0 || x.Shape[len(x.Shape)-1] != in {
		return nil, backend.Errorf(backend.ErrShape, "%s: x of shape %v does not end in W's In=%d (W is %v, stored %v)", name, x.Shape, in, l.W.Shape, l.Layout)
	}
	shape := append([]int(nil), x.Shape...)
	shape[len(shape)-1] = out
	y, err := NewTensor(x.Layout, shape...)
	if err != nil {
		return nil, err
	}
	// Half x or W are widened once here; y is rounded to x's dtype at the
	// end (saturated, as attention's outputs are).
	xd, wd := x.Float32s(), l.W.Float32s()
	rows := 0
	if in > 0 {
		rows = len(xd) / in
	} else if out > 0 {
		rows = len(y.Data) / out
	}
	parallelRows(rows, func(r0, r1 int) {
		acc := make([]float64, out)
		for r := r0; r < r1; r++ {
			xr := xd[r*in : (r+1)*in]
			for j := range acc {
				acc[j] = 0
				if l.B != nil {
					acc[j] = float64(l.B[j])
				}
			}
			if l.Layout == OutIn {
				// Row j of W is output j's weights: one dot product each.
				for j := range acc {
					w := wd[j*in : (j+1)*in]
					for i, xv := range xr {
						acc[j] += float64(xv) * float64(w[i])
					}
				}
			} else {
				for i, xv := range xr {
					if xv == 0 {
						continue
					}
					w := wd[i*out : (i+1)*out]
					for j, wv := range w {
						acc[j] += float64(xv) * float64(wv)
					}
				}
			}
			yr := y.Data[r*out : (r+1)*out]
			for j, a := range acc {
				yr[j] = float32(a)
			}
		}
	})
	if x.DType.Half() {
		y.Bits, y.DType = make([]uint16, len(y.Data)), x.DType
		for i, v := range y.Data {
			y.Bits[i] = x.DType.Encode(x.DType.Saturate(v))
		}
		y.Data = nil
	}
	return y, nil
}

// parallelRows splits [0, n) into one contiguous block per processor.
func parallelRows(n int, f func(r0, r1 int)) {
	workers := min(runtime.GOMAXPROCS(0), n)
	if workers <= 1 {
		f(0, n)
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		r0, r1 := n*w/workers, n*(w+1)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			f(r0, r1)
		}()
	}
	wg.Wait()
}

// SelfAttention is single-head self-attention as the tutorials build it:
//
//	Q = x·W_q + b_q,  K = x·W_k + b_k,  V = x·W_v + b_v
//	O = softmax(scale · Q·Kᵀ + bias, masked) · V
//
// x is [N, Din] or [B, N, Din]; the output is [N, Dv] or [B, N, Dv].
// Result.Weights (when asked for) is [N, N] or [B, 1, N, N].
func SelfAttention(ctx context.Context, be backend.Backend, x *Tensor, wq, wk, wv Linear, opts *Options) (*Result, error) {
	p, err := project(x, opts, []Linear{wq, wk, wv}, []string{"W_q", "W_k", "W_v"})
	if err != nil {
		return nil, err
	}
	q, k, v := p[0], p[1], p[2]
	if len(x.Shape) == 3 { // [B, N, D] is BNHD with one head
		for _, t := range p {
			t.Shape = []int{t.Shape[0], t.Shape[1], 1, t.Shape[2]}
			t.Layout = BNHD
		}
	}
	res, err := Attention(ctx, be, q, k, v, opts)
	if err != nil {
		return nil, err
	}
	if len(x.Shape) == 3 {
		res.Out.Shape = []int{res.Out.Shape[0], res.Out.Shape[1], res.Out.Shape[3]}
		res.Out.Layout = x.Layout
	}
	return res, nil
}

// project checks x (rank 2 or 3, finite unless the options allow
// otherwise) and applies each projection to it.
func project(x *Tensor, opts *Options, ls []Linear, names []string) ([]*Tensor, error) {
	if err := x.check("x"); err != nil {
		return nil, err
	}
	if r := len(x.Shape); r != 2 && r != 3 {
		return nil, backend.Errorf(backend.ErrShape, "x has shape %v; want [N, Dmodel] or [B, N, Dmodel]", x.Shape)
	}
	if opts == nil || !opts.AllowNonFinite {
		if err := checkFinite(x, x, x, nil); err != nil {
			return nil, backend.Wrapf(err, "x")
		}
	}
	out := make([]*Tensor, len(ls))
	for i, l := range ls {
		t, err := l.apply(names[i], x)
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// MultiHead is multi-head attention with input and output projections:
//
//	Q = x·W_q + b_q  split into Heads heads of D
//	K = x·W_k + b_k  split into KVHeads heads of D
//	V = x·W_v + b_v  split into KVHeads heads of Dv
//	head_h = softmax(scale · Q_h·K_{h/G}ᵀ + bias, masked) · V_{h/G}
//	y = concat(head_0 … head_{H−1})·W_o + b_o
//
// W_q is [Dmodel, Heads·D], W_k is [Dmodel, KVHeads·D], W_v is
// [Dmodel, KVHeads·Dv] and W_o is [Heads·Dv, Dout] (each transposed, as
// PyTorch stores them, when its Layout is OutIn). KVHeads 0 means Heads,
// as a zero KVHeads does everywhere in attn. The projections produce the [B, N, H, D] layout directly, so the
// heads are split without a copy.
type MultiHead struct {
	Heads, KVHeads int
	Q, K, V, O     Linear
}

// Forward runs self-attention over x ([N, Dmodel] or [B, N, Dmodel]) and
// returns y of shape [N, Dout] or [B, N, Dout] in Result.Out, with the
// weights and LSE of the attention step when opts asks for them.
func (m *MultiHead) Forward(ctx context.Context, be backend.Backend, x *Tensor, opts *Options) (*Result, error) {
	kvh := m.KVHeads
	if kvh == 0 {
		kvh = m.Heads
	}
	if m.Heads < 1 || kvh < 1 || m.Heads%kvh != 0 {
		return nil, backend.Errorf(backend.ErrShape, "multi-head: Heads=%d must be a positive multiple of KVHeads=%d", m.Heads, kvh)
	}
	p, err := project(x, opts, []Linear{m.Q, m.K, m.V}, []string{"W_q", "W_k", "W_v"})
	if err != nil {
		return nil, err
	}
	heads := []int{m.Heads, kvh, kvh}
	for i, t := range p {
		last := t.Shape[len(t.Shape)-1]
		if last%heads[i] != 0 {
			return nil, backend.Errorf(backend.ErrShape, "multi-head: projection %d has width %d, not a multiple of %d heads", i, last, heads[i])
		}
		lead := t.Shape[:len(t.Shape)-1]
		if len(lead) == 1 {
			lead = []int{1, lead[0]}
		}
		t.Shape = []int{lead[0], lead[1], heads[i], last / heads[i]}
		t.Layout = BNHD
	}
	res, err := Attention(ctx, be, p[0], p[1], p[2], opts)
	if err != nil {
		return nil, err
	}
	o := res.Out // [B, N, H, Dv]
	o.Shape = []int{o.Shape[0], o.Shape[1], o.Shape[2] * o.Shape[3]}
	if len(x.Shape) == 2 {
		o.Shape = o.Shape[1:]
	}
	o.Layout = x.Layout
	y, err := m.O.apply("W_o", o)
	if err != nil {
		return nil, err
	}
	res.Out = y
	return res, nil
}
