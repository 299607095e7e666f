package plan

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// keyRangeOf is what lib/vars.wgsl's key_range computes from the variant
// data for row i of batch b of a problem with H heads, in i32 as there.
func keyRangeOf(data []uint32, H, b, i int) (lo, hi int) {
	at := 2*H + 4*b
	n, hb, lb := int32(data[at]), int32(data[at+1]), int32(data[at+2])
	h := max(min(n, hb+int32(i)), 0)
	l := min(max(lb+int32(i), 0), h)
	return int(l), int(h)
}

// TestVarsLayout checks the variant data the kernels read against
// package backend: the key range key_range computes from it is
// Problem.KeyRange for every row, extreme offsets and windows included,
// and the slopes, sinks and alignment sit where lib/*.wgsl read them.
func TestVarsLayout(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	extremes := []int{backend.MaxPosition - 3, 3 - backend.MaxPosition, 1 << 31, -(1 << 31), 0}
	for n := range 2000 {
		p := backend.Problem{B: 1 + rng.IntN(3), H: 1 + rng.IntN(3), Nq: rng.IntN(50), Nk: rng.IntN(60), D: 4}
		p = randomVariants(rng, p)
		if n%5 == 0 {
			o := extremes[rng.IntN(len(extremes))] + rng.IntN(7) - 3
			p.CausalOffset = &o
		}
		if n%7 == 0 && p.Window != nil {
			p.Window.Left = backend.MaxPosition - rng.IntN(3)
		}
		if n%11 == 0 && p.Window != nil {
			p.Window.Right = backend.MaxPosition - rng.IntN(3)
		}
		p.ALiBi = make([]float32, p.H)
		p.Sinks = make([]float32, p.H)
		for h := range p.H {
			p.ALiBi[h], p.Sinks[h] = rng.Float32(), -rng.Float32()
		}
		if err := p.Validate(); err != nil {
			t.Fatal(err)
		}
		p = p.Resolved()
		data := VarsLayout(p)
		if len(data) != 2*p.H+4*p.B {
			t.Fatalf("%+v: %d values, want 2H + 4B = %d", p, len(data), 2*p.H+4*p.B)
		}
		for h := range p.H {
			if math.Float32frombits(data[h]) != p.ALiBi[h] || math.Float32frombits(data[p.H+h]) != p.Sinks[h] {
				t.Fatalf("%+v: head %d: slope %v sink %v, want %v %v", p, h, math.Float32frombits(data[h]), math.Float32frombits(data[p.H+h]), p.ALiBi[h], p.Sinks[h])
			}
		}
		for b := range p.B {
			if a := p.Align(b); a >= -maxVarPos && a <= maxVarPos && int(int32(data[2*p.H+4*b+3])) != a {
				t.Fatalf("%+v: batch %d: alignment %d, want %d", p, b, int32(data[2*p.H+4*b+3]), a)
			}
			for i := range p.Nq {
				lo, hi := keyRangeOf(data, p.H, b, i)
				if wl, wh := p.KeyRange(b, i); lo != wl || hi != wh {
					t.Fatalf("%+v: batch %d row %d: key_range [%d, %d), KeyRange [%d, %d)", p, b, i, lo, hi, wl, wh)
				}
			}
		}
	}
}

// TestCheckVars checks the refusals of positions the kernels' i32
// arithmetic cannot hold, and that ordinary problems pass.
func TestCheckVars(t *testing.T) {
	far := 1 << 31
	ok := []backend.Problem{
		{B: 1, H: 1, Nq: 10, Nk: 10, D: 4},
		{B: 1, H: 1, Nq: 10, Nk: 10, D: 4, Variants: backend.Variants{CausalOffset: &far}},
		{B: 1, H: 1, Nq: 1 << 30, Nk: 1 << 30, D: 4}, // no positions in play
	}
	for _, p := range ok {
		if err := CheckVars("fused", p.Resolved()); err != nil {
			t.Errorf("%+v: %v", p, err)
		}
	}
	bad := []struct {
		p    backend.Problem
		want error
	}{
		{backend.Problem{B: 1, H: 1, Nq: 10, Nk: 10, D: 4, Variants: backend.Variants{CausalOffset: &far, ALiBi: []float32{1}}}, backend.ErrUnsupported},
		{backend.Problem{B: 1, H: 1, Nq: 1 << 30, Nk: 10, D: 4, Causal: true}, backend.ErrTooLarge},
		{backend.Problem{B: 1, H: 1, Nq: 1, Nk: 1 << 30, D: 4, Variants: backend.Variants{KVLens: []int{5}}}, backend.ErrTooLarge},
	}
	for _, c := range bad {
		err := CheckVars("fused", c.p.Resolved())
		if !errors.Is(err, c.want) {
			t.Errorf("%+v: err = %v, want %v", c.p, err, c.want)
		}
	}
}

// TestKernelFlags checks that each variant, mask, sequence layout and
// output sets its own bit and no other, that a score stage applies the
// bits of the one before it, and which bits make a call read vars.
func TestKernelFlags(t *testing.T) {
	p := backend.Problem{B: 1, H: 2, Nq: 3, Nk: 4, D: 4}
	if f := KernelFlags(p, false, false, false); f != 0 {
		t.Errorf("a plain problem: flags %#x, want none", f)
	}
	for _, c := range []struct {
		name            string
		mod             func(*backend.Problem)
		bias, keep, lse bool
		want            shaders.Flag
	}{
		{name: "causal", mod: func(p *backend.Problem) { p.Causal = true }, want: shaders.FlagRange},
		{name: "window", mod: func(p *backend.Problem) { p.Window = &backend.Window{Left: 1, Right: -1} }, want: shaders.FlagRange},
		{name: "key lengths", mod: func(p *backend.Problem) { p.KVLens = []int{2} }, want: shaders.FlagRange},
		{name: "bias", bias: true, want: shaders.FlagBias},
		{name: "keep", keep: true, want: shaders.FlagKeep},
		{name: "lse", lse: true, want: shaders.FlagLSE},
		{name: "softcap", mod: func(p *backend.Problem) { p.Softcap = 30 }, want: shaders.FlagSoftcap},
		{name: "alibi", mod: func(p *backend.Problem) { p.ALiBi = []float32{1, 2} }, want: shaders.FlagALiBi},
		{name: "sinks", mod: func(p *backend.Problem) { p.Sinks = []float32{1, 2} }, want: shaders.FlagSink},
		{name: "packed queries", mod: func(p *backend.Problem) { p.Packed = &backend.Packed{CuQ: []int{0, 3}} }, want: shaders.FlagPackQ},
		// Packed keys give each sequence its own key length.
		{name: "packed keys", mod: func(p *backend.Problem) { p.Packed = &backend.Packed{CuQ: []int{0, 3}, CuK: []int{0, 4}} },
			want: shaders.FlagPackQ | shaders.FlagPackK | shaders.FlagRange},
		{name: "paged", mod: func(p *backend.Problem) { p.Paged = &backend.Paged{} }, want: shaders.FlagPaged},
	} {
		q := p
		if c.mod != nil {
			c.mod(&q)
		}
		if f := KernelFlags(q, c.bias, c.keep, c.lse); f != c.want {
			t.Errorf("%s: flags %#x, want %#x", c.name, f, c.want)
		}
	}
	var before shaders.Flag
	for _, s := range []backend.ScoreStage{backend.StageRaw, backend.StageCapped, backend.StageBiased, backend.StageMasked} {
		f := ScoreStageFlags(s)
		if f&before != before || f&^(shaders.FlagSoftcap|shaders.FlagBias|shaders.FlagALiBi|shaders.FlagRange|shaders.FlagKeep) != 0 {
			t.Errorf("stage %v: flags %#x, after %#x", s, f, before)
		}
		before = f
	}
	if before != shaders.FlagSoftcap|shaders.FlagBias|shaders.FlagALiBi|shaders.FlagRange|shaders.FlagKeep {
		t.Errorf("the masked stage applies %#x, want every score step", before)
	}
	if VarsFlags&(shaders.FlagBias|shaders.FlagKeep|shaders.FlagLSE|shaders.FlagSoftcap) != 0 {
		t.Errorf("vars read for bits %#x that need none of it", VarsFlags)
	}
}
