package cpu_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/cpu"
)

// TestBackward runs Backward after the backend's own forward (O and the
// LSE from Fused) and compares dQ, dK, dV and dSinks with
// backendtest.ReferenceGrad (float64), within 1e-4 of each tensor's
// largest gradient: sizes past the tiles (64 query rows, 128 keys) and
// below them, GQA and MQA, Dv ≠ D, BNHD, causal masking and its offset,
// a window, key lengths, softcap, ALiBi and sinks; and its refusals.
func TestBackward(t *testing.T) {
	c0, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer c0.Close()
	var be backend.Backend = c0
	var bw backend.Backwarder = c0
	ctx := context.Background()
	off := -3
	for _, p := range []backend.Problem{
		{B: 1, H: 2, KVHeads: 2, Nq: 5, Nk: 9, D: 8},
		{B: 2, H: 4, KVHeads: 2, Nq: 70, Nk: 300, D: 32, Dv: 24, Causal: true},
		{B: 1, H: 4, KVHeads: 1, Nq: 65, Nk: 129, D: 17, Layout: backend.BNHD, Variants: backend.Variants{
			Softcap: 2, ALiBi: []float32{0.5, 0.25, 0.125, 0.0625}, Sinks: []float32{0, 1, -1, 2}, Window: &backend.Window{Left: 40, Right: 3}}},
		{B: 2, H: 2, KVHeads: 1, Nq: 33, Nk: 140, D: 16, Variants: backend.Variants{CausalOffset: &off, KVLens: []int{140, 20}}},
	} {
		p := p.Resolved()
		t.Run(fmt.Sprintf("B%d_H%d_KV%d_Nq%d_Nk%d_D%d_Dv%d", p.B, p.H, p.KVHeads, p.Nq, p.Nk, p.D, p.Dv), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(66, uint64(p.Nk)))
			c := backendtest.RandomCase(rng, p, nil, nil)
			dO := make([]float32, p.OLen())
			for i := range dO {
				dO[i] = float32(rng.Float64()*2 - 1)
			}
			up := func(x []float32) backend.Buffer {
				buf, err := be.Alloc(backend.Float32, len(x))
				if err != nil {
					t.Fatal(err)
				}
				if err := be.Write(buf, 0, x); err != nil {
					t.Fatal(err)
				}
				return buf
			}
			q, k, v, dob := up(c.Q), up(c.K), up(c.V), up(dO)
			o, lse := up(make([]float32, p.OLen())), up(make([]float32, p.LSELen()))
			if err := be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, lse); err != nil {
				t.Fatal(err)
			}
			dq, dk, dv := up(make([]float32, p.QLen())), up(make([]float32, p.KLen())), up(make([]float32, p.VLen()))
			var dSinks []float32
			if p.Sinks != nil {
				dSinks = make([]float32, p.H)
			}
			if err := bw.Backward(ctx, backend.BackwardParams{Problem: p}, q, k, v, o, lse, dob, dq, dk, dv, dSinks); err != nil {
				t.Fatal(err)
			}
			want := backendtest.ReferenceGrad(c, dO)
			read := func(buf backend.Buffer) []float32 {
				x := make([]float32, buf.Len())
				if err := be.Read(x, buf, 0); err != nil {
					t.Fatal(err)
				}
				return x
			}
			for _, cmp := range []struct {
				name string
				got  []float32
				want []float64
			}{{"dQ", read(dq), want.DQ}, {"dK", read(dk), want.DK}, {"dV", read(dv), want.DV}, {"dSinks", dSinks, want.DSinks}} {
				if err := backendtest.NearGrad(cmp.name, cmp.got, cmp.want, 1e-4); err != nil {
					t.Fatal(err)
				}
			}
		})
	}

	// Refusals, before any work.
	p := backend.Problem{B: 1, H: 2, KVHeads: 2, Nq: 4, Nk: 4, D: 8}.Resolved()
	alloc := func(dt backend.DType, n int) backend.Buffer {
		buf, err := be.Alloc(dt, n)
		if err != nil {
			t.Fatal(err)
		}
		return buf
	}
	f := func(n int) backend.Buffer { return alloc(backend.Float32, n) }
	q, k, v, o, lse, dob := f(p.QLen()), f(p.KLen()), f(p.VLen()), f(p.OLen()), f(p.LSELen()), f(p.OLen())
	dq, dk, dv := f(p.QLen()), f(p.KLen()), f(p.VLen())
	packed := backendtest.PackedProblem(p, []int{2, 2}, nil)
	for _, c := range []struct {
		name string
		p    backend.Problem
		q    backend.Buffer
		want error
	}{
		{"packed", packed, q, backend.ErrUnsupported},
		{"half", p, alloc(backend.Float16, p.QLen()), backend.ErrUnsupported},
		{"short", p, f(p.QLen() - 1), backend.ErrShape},
	} {
		if err := bw.Backward(ctx, backend.BackwardParams{Problem: c.p}, c.q, k, v, o, lse, dob, dq, dk, dv, nil); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}
