package kernels_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// limitedFused is the CPU backend dressed as a backend of the given kind
// whose Fused cannot run head dims wider than maxD, as a GPU's workgroup
// memory limits it: it says so through backend.FusedSupporter, and its
// Fused refuses such a problem the same way. It counts the calls of
// Fused, so that a test sees which path ran and that a refused call
// reached no op.
type limitedFused struct {
	backend.Backend
	kind  backend.Kind
	maxD  int
	fused atomic.Int64
}

var _ backend.FusedSupporter = (*limitedFused)(nil)

func (l *limitedFused) Info() backend.Info {
	info := l.Backend.Info()
	info.Kind = l.kind
	return info
}

func (l *limitedFused) FusedSupports(p backend.Problem) error {
	if p.D > l.maxD || p.Dv > l.maxD {
		return backend.Errorf(backend.ErrUnsupported, "limited: head dims D=%d Dv=%d are wider than %d", p.D, p.Dv, l.maxD)
	}
	return nil
}

func (l *limitedFused) Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	l.fused.Add(1)
	if err := l.FusedSupports(p.Problem.Resolved()); err != nil {
		return err
	}
	return l.Backend.Fused(ctx, p, q, k, v, o, lse)
}

// noFused is the CPU backend claiming no fused path.
type noFused struct{ backend.Backend }

func (n noFused) Caps() backend.Caps {
	c := n.Backend.Caps()
	c.Fused = false
	return c
}

// TestStrategyChoose pins the one rule Attention and attn run's memory
// estimate both follow, on backends of each kind with and without a
// fused path that can run the problem.
func TestStrategyChoose(t *testing.T) {
	cpu := openCPU(t)
	gpuLike := &limitedFused{Backend: cpu, kind: backend.KindGPU, maxD: 64}
	cpuLike := &limitedFused{Backend: cpu, kind: backend.KindCPU, maxD: 64}
	prob := func(nq, d int) backend.Problem {
		return backend.Problem{B: 1, H: 1, Nq: nq, Nk: 256, D: d}.Resolved()
	}
	// 256·256 = 2¹⁶ scores is auto's staged limit on a CPU; 257 rows pass it.
	small, large := prob(256, 64), prob(257, 64)
	wide, wideLarge := prob(256, 65), prob(257, 65)
	for _, tt := range []struct {
		name        string
		s           kernels.Strategy
		be          backend.Backend
		p           backend.Problem
		wantsMatrix bool
		want        kernels.Strategy
		err         error // a sentinel; nil for none
	}{
		{"cpu small", kernels.Auto, cpu, small, false, kernels.Staged, nil},
		{"cpu large", kernels.Auto, cpu, large, false, kernels.Fused, nil},
		{"cpu large weights", kernels.Auto, cpu, large, true, kernels.Staged, nil},
		{"gpu small", kernels.Auto, gpuLike, small, false, kernels.Fused, nil},
		{"gpu large weights", kernels.Auto, gpuLike, large, true, kernels.Staged, nil},
		{"gpu wide falls back", kernels.Auto, gpuLike, wide, false, kernels.Staged, nil},
		{"cpu-kind wide large falls back", kernels.Auto, cpuLike, wideLarge, false, kernels.Staged, nil},
		{"no fused path", kernels.Auto, noFused{cpu}, large, false, kernels.Staged, nil},
		{"staged", kernels.Staged, gpuLike, wide, false, kernels.Staged, nil},
		{"fused small cpu", kernels.Fused, cpu, small, false, kernels.Fused, nil},
		{"fused wide", kernels.Fused, gpuLike, wide, false, kernels.Fused, backend.ErrUnsupported},
		{"fused without a fused path", kernels.Fused, noFused{cpu}, small, false, kernels.Fused, backend.ErrUnsupported},
		{"fused weights", kernels.Fused, cpu, large, true, kernels.Fused, backend.ErrUnsupported},
		{"unknown", kernels.Strategy(7), cpu, small, false, kernels.Strategy(7), backend.ErrShape},
	} {
		got, err := tt.s.Choose(tt.be, tt.p, tt.wantsMatrix)
		if got != tt.want || (tt.err == nil) != (err == nil) || tt.err != nil && !errors.Is(err, tt.err) {
			t.Errorf("%s: %v.Choose(%s, D=%d Nq=%d, %v) = %v, %v; want %v, %v", tt.name, tt.s, tt.be.Name(), tt.p.D, tt.p.Nq, tt.wantsMatrix, got, err, tt.want, tt.err)
		}
	}
}

// A problem whose head dims the backend's Fused cannot run runs staged
// under Auto, with the answer the CPU gives; asked for by name, Fused is
// refused with the backend's own error before any op runs.
func TestAutoFallsBackToStaged(t *testing.T) {
	cpu := openCPU(t)
	be := &limitedFused{Backend: cpu, kind: backend.KindGPU, maxD: 8}
	rng := rand.New(rand.NewPCG(5, 6))
	narrow := randTensor(rng, kernels.BHND, 1, 2, 9, 8)
	q := randTensor(rng, kernels.BHND, 1, 2, 9, 12)
	k := randTensor(rng, kernels.BHND, 1, 2, 11, 12)
	v := randTensor(rng, kernels.BHND, 1, 2, 11, 4)
	opts := &kernels.Options{Causal: true, LSE: true}

	res, err := kernels.Attention(context.Background(), be, narrow, narrow, narrow, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Strategy != kernels.Fused || be.fused.Load() != 1 {
		t.Fatalf("D=8: auto ran %v with %d calls of Fused, want fused once", res.Strategy, be.fused.Load())
	}

	be.fused.Store(0)
	res, err = kernels.Attention(context.Background(), be, q, k, v, opts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Strategy != kernels.Staged || be.fused.Load() != 0 {
		t.Fatalf("D=12: auto ran %v with %d calls of Fused, want staged and none", res.Strategy, be.fused.Load())
	}
	want, err := kernels.Attention(context.Background(), cpu, q, k, v, &kernels.Options{Causal: true, LSE: true, Strategy: kernels.Fused})
	if err != nil {
		t.Fatal(err)
	}
	sameResult(t, "staged fallback vs the CPU's fused", res, want)

	opts.Strategy = kernels.Fused
	_, err = kernels.Attention(context.Background(), be, q, k, v, opts)
	if !errors.Is(err, backend.ErrUnsupported) || !strings.Contains(err.Error(), "D=12 Dv=4") {
		t.Errorf("fused at D=12: %v, want the backend's ErrUnsupported naming D=12 Dv=4", err)
	}
	if n := be.fused.Load(); n != 0 {
		t.Errorf("a refused fused call reached Fused %d times", n)
	}
}

// sameResult fails t unless got's output and LSE are want's within the
// suite's tolerance.
func sameResult(t *testing.T, what string, got, want *kernels.Result) {
	t.Helper()
	for _, c := range []struct {
		name string
		g, w []float32
	}{{"O", got.Out.Data, want.Out.Data}, {"LSE", got.LSE.Data, want.LSE.Data}} {
		w := make([]float64, len(c.w))
		for i, x := range c.w {
			w[i] = float64(x)
		}
		if err := closeTo(c.g, w); err != nil {
			t.Errorf("%s, %s: %v", what, c.name, err)
		}
	}
}

// A strategy that is none of the constants is refused the same way by
// Attention, dense or packed, with one ErrShape message naming it, before
// any op runs and without touching the output. (A cache's Attend takes
// AttendOptions, which have no strategy: it always runs fused.)
func TestUnknownStrategy(t *testing.T) {
	be := &limitedFused{Backend: openCPU(t), kind: backend.KindCPU, maxD: 1 << 10}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(111, 112))
	const b, n, h, d = 2, 3, 2, 8
	q := randTensor(rng, kernels.BNHD, b, 1, h, d)
	k, v := randTensor(rng, kernels.BNHD, b, n, h, d), randTensor(rng, kernels.BNHD, b, n, h, d)
	packed := randTensor(rng, kernels.BNHD, b*n, h, d)
	for _, s := range []kernels.Strategy{-1, 3, 42} {
		want := "unknown strategy " + s.String()
		for _, c := range []struct {
			name string
			run  func(opts *kernels.Options, out *kernels.Tensor) error
		}{
			{"Attention", func(opts *kernels.Options, _ *kernels.Tensor) error {
				_, err := kernels.Attention(ctx, be, q, k, v, opts)
				return err
			}},
			{"Attention packed", func(opts *kernels.Options, _ *kernels.Tensor) error {
				opts.CuSeqlensQ, opts.CuSeqlensK = []int{0, n, 2 * n}, []int{0, n, 2 * n}
				_, err := kernels.Attention(ctx, be, packed, packed, packed, opts)
				return err
			}},
		} {
			out, _ := kernels.NewTensor(kernels.BNHD, b, 1, h, d)
			for i := range out.Data {
				out.Data[i] = 7
			}
			before := be.fused.Load()
			err := c.run(&kernels.Options{Strategy: s}, out)
			if !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), want) {
				t.Errorf("%s with %v: %v, want %v naming %q", c.name, s, err, backend.ErrShape, want)
			}
			if calls := be.fused.Load() - before; calls != 0 {
				t.Errorf("%s with %v: Fused ran %d times", c.name, s, calls)
			}
			for i, x := range out.Data {
				if x != 7 {
					t.Fatalf("%s with %v wrote out[%d] = %v", c.name, s, i, x)
				}
			}
		}
	}
}
