package backendtest

// The suite's cases, one list a section: sizes, head dims, scales,
// causal masking, heads, layouts, masks, variants, packed and paged
// sequences, key padding, 8-bit K and V, V from K.

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/attn-go/attn/backend"
)

// prob is a BHND problem with the default scale 1/√D.
func prob(b, h, kv, nq, nk, d, dv int) backend.Problem {
	return backend.Problem{B: b, H: h, KVHeads: kv, Nq: nq, Nk: nk, D: d, Dv: dv, Scale: defaultScale(d)}
}

func bnhd(p backend.Problem) backend.Problem   { p.Layout = backend.BNHD; return p }
func causal(p backend.Problem) backend.Problem { p.Causal = true; return p }
func scaled(p backend.Problem, s float32) backend.Problem {
	p.Scale = s
	return p
}

// full is the shape [B, H, Nq, Nk] of p's scores.
func full(p backend.Problem) [4]int { return [4]int{p.B, p.H, p.Nq, p.Nk} }

// broadcast is p's full shape with the dimensions whose bit is clear in
// bits (bit 3 for B … bit 0 for Nk) set to 1.
func broadcast(p backend.Problem, bits int) *[4]int {
	s := full(p)
	for d := range s {
		if bits&(1<<(3-d)) == 0 {
			s[d] = 1
		}
	}
	return &s
}

func shape(b, h, nq, nk int) *[4]int { return &[4]int{b, h, nq, nk} }

// Sizes around the tile sizes a backend is likely to use (64 and its
// neighbours), Nq ≠ Nk both ways, decoding with Nq = 1, and empty
// problems. Head dims rotate so every size meets a few of them.
func sizeSpecs() []spec {
	pairs := [][2]int{
		{0, 0}, {0, 7}, {7, 0}, {1, 1}, {1, 2}, {2, 1}, {2, 2}, {1, 300}, {2, 129}, {5, 64},
		{63, 64}, {64, 63}, {63, 63}, {64, 64}, {65, 65}, {65, 64}, {64, 65}, {63, 129}, {129, 63},
		{127, 128}, {128, 127}, {127, 127}, {128, 128}, {128, 129}, {129, 128}, {129, 129},
		{129, 2}, {65, 1}, {1, 65}, {200, 130}, {1, 129},
	}
	dims := [][2]int{{64, 64}, {16, 16}, {40, 24}, {3, 3}, {128, 128}, {80, 80}, {1, 1}, {64, 80}}
	var specs []spec
	for n, nn := range pairs {
		d := dims[n%len(dims)]
		b, h := 1, 2
		if n%2 == 1 {
			b, h = 2, 1
		}
		specs = append(specs, spec{p: prob(b, h, h, nn[0], nn[1], d[0], d[1])})
	}
	return append(specs,
		spec{p: prob(0, 2, 2, 5, 7, 8, 8)},
		spec{p: prob(0, 1, 1, 0, 0, 4, 4)},
		spec{p: causal(prob(0, 4, 2, 65, 1, 16, 8))},
	)
}

func headDimSpecs() []spec {
	dims := [][2]int{
		{1, 1}, {3, 3}, {16, 16}, {40, 40}, {64, 64}, {80, 80}, {128, 128},
		{40, 24}, {64, 80}, {1, 8}, {128, 64}, {3, 128}, {80, 16},
	}
	var specs []spec
	for _, d := range dims {
		specs = append(specs, spec{p: prob(1, 2, 2, 33, 65, d[0], d[1])})
	}
	return specs
}

func scaleSpecs() []spec {
	var specs []spec
	for _, sc := range []float32{defaultScale(64), 1, -0.7, -defaultScale(64), 0.01, 3} {
		specs = append(specs, spec{p: scaled(prob(1, 2, 2, 64, 64, 64, 64), sc)})
	}
	for _, sc := range []float32{1, -1.5} {
		specs = append(specs, spec{p: causal(scaled(prob(1, 2, 2, 17, 129, 40, 24), sc))})
	}
	// Zero KVHeads, Dv and Scale mean H, D and 1/√D (Problem.Resolved):
	// the backend must resolve them as the reference does.
	return append(specs,
		spec{p: backend.Problem{B: 1, H: 2, Nq: 33, Nk: 65, D: 40}},
		spec{p: causal(backend.Problem{B: 2, H: 4, KVHeads: 2, Nq: 17, Nk: 17, D: 16, Dv: 8})},
	)
}

// Causal masking is bottom-right aligned; with Nq > Nk the first
// Nq − Nk rows see no key at all.
func causalSpecs() []spec {
	pairs := [][2]int{
		{1, 1}, {2, 2}, {1, 2}, {2, 1}, {64, 64}, {65, 65}, {129, 129}, {1, 300}, {3, 130},
		{63, 129}, {64, 128}, {65, 129}, {129, 63}, {130, 3}, {65, 1}, {128, 64}, {0, 5}, {5, 0},
	}
	dims := [][2]int{{64, 64}, {40, 24}, {16, 16}, {128, 128}, {3, 3}}
	var specs []spec
	for n, nn := range pairs {
		d := dims[n%len(dims)]
		specs = append(specs, spec{p: causal(prob(1, 2, 2, nn[0], nn[1], d[0], d[1]))})
	}
	return append(specs,
		spec{p: bnhd(causal(prob(2, 4, 2, 65, 129, 32, 32)))},
		spec{p: causal(prob(1, 4, 1, 129, 65, 16, 24))},
	)
}

// GQA, MQA and plain multi-head, in both layouts.
func headSpecs() []spec {
	var specs []spec
	for _, hk := range [][2]int{{4, 2}, {4, 1}, {4, 4}, {6, 3}, {3, 1}, {1, 1}, {8, 2}} {
		p := prob(2, hk[0], hk[1], 17, 65, 16, 24)
		specs = append(specs, spec{p: p}, spec{p: bnhd(p)})
	}
	return append(specs,
		spec{p: causal(prob(1, 4, 2, 65, 65, 32, 32))},
		spec{p: bnhd(causal(prob(1, 4, 1, 65, 65, 32, 32)))},
	)
}

func layoutSpecs() []spec {
	return []spec{
		{p: bnhd(prob(1, 2, 2, 1, 300, 64, 64))},
		{p: bnhd(prob(2, 3, 3, 63, 129, 40, 24))},
		{p: bnhd(prob(1, 4, 2, 129, 63, 16, 16))},
		{p: bnhd(prob(1, 2, 2, 64, 64, 128, 128))},
		{p: bnhd(prob(1, 4, 1, 128, 129, 64, 80))},
		{p: bnhd(prob(2, 2, 1, 2, 1, 3, 3))},
		{p: bnhd(prob(1, 2, 2, 0, 5, 8, 8))},
		{p: bnhd(prob(1, 2, 2, 5, 0, 8, 8))},
	}
}

// maskSpecs has a bias (or keep-mask) in every broadcast pattern of
// [B|1, H|1, Nq|1, Nk|1] at a small shape whose sizes all differ, then a
// few patterns at sizes that cross tiles.
func maskSpecs(bias, keep bool) []spec {
	mk := func(p backend.Problem, s *[4]int) spec {
		sp := spec{p: p}
		if bias {
			sp.bias = s
		}
		if keep {
			sp.keep = s
		}
		return sp
	}
	var specs []spec
	small := prob(2, 3, 3, 5, 7, 8, 8)
	for bits := range 16 {
		specs = append(specs, mk(small, broadcast(small, bits)))
	}
	big := prob(2, 2, 2, 65, 129, 16, 16)
	for _, bits := range []int{0b0011, 0b0111, 0b0001, 0b0110, 0b1001, 0b1111} {
		specs = append(specs, mk(big, broadcast(big, bits)))
	}
	gqa := causal(prob(2, 4, 2, 64, 64, 32, 32))
	return append(specs,
		mk(gqa, broadcast(gqa, 0b1111)),
		mk(bnhd(gqa), broadcast(gqa, 0b0101)),
	)
}

func biasAndKeepSpecs() []spec {
	small := prob(2, 3, 3, 5, 7, 8, 8)
	return []spec{
		{p: small, bias: shape(2, 3, 5, 7), keep: shape(2, 3, 5, 7)},
		{p: small, bias: shape(1, 3, 1, 7), keep: shape(2, 1, 5, 1)},
		{p: causal(small), bias: shape(2, 1, 1, 7), keep: shape(1, 1, 5, 7)},
		{p: bnhd(causal(prob(2, 4, 2, 65, 129, 40, 24))), bias: shape(2, 1, 65, 129), keep: shape(2, 1, 1, 129)},
		{p: prob(1, 4, 1, 1, 300, 64, 64), bias: shape(1, 4, 1, 300), keep: shape(1, 1, 1, 300)},
		{p: causal(prob(1, 2, 2, 129, 63, 16, 16)), bias: shape(1, 1, 129, 63), keep: shape(1, 2, 129, 63)},
	}
}

// setMask replaces the values of m for which f reports true, visiting m's
// own (possibly broadcast) indices.
func setMask(m *HostMask, f func(b, h, i, j int) (float32, bool)) {
	s := m.Shape
	for b := range s[0] {
		for h := range s[1] {
			for i := range s[2] {
				for j := range s[3] {
					if v, ok := f(b, h, i, j); ok {
						m.Data[((b*s[1]+h)*s[2]+i)*s[3]+j] = v
					}
				}
			}
		}
	}
}

// Rows that see no key at all must come out as exact zeros with LSE −Inf.
func maskedRowSpecs() []spec {
	p := prob(2, 2, 2, 65, 65, 16, 16)
	return []spec{
		{p: p, keep: shape(2, 2, 65, 65), note: "rows%3==0_masked", edit: func(c *Case) {
			setMask(c.Keep, func(b, h, i, j int) (float32, bool) { return 0, i%3 == 0 })
		}},
		{p: p, keep: shape(1, 1, 65, 1), note: "even_rows_masked", edit: func(c *Case) {
			setMask(c.Keep, func(b, h, i, j int) (float32, bool) { return float32(i % 2), true })
		}},
		{p: p, bias: shape(2, 2, 65, 65), note: "rows%4==1_-Inf", edit: func(c *Case) {
			setMask(c.Bias, func(b, h, i, j int) (float32, bool) { return negInf, i%4 == 1 })
		}},
		{p: p, bias: shape(1, 1, 65, 1), note: "rows%3==2_-Inf", edit: func(c *Case) {
			setMask(c.Bias, func(b, h, i, j int) (float32, bool) {
				if i%3 == 2 {
					return negInf, true
				}
				return 0.5, true
			})
		}},
		{p: prob(2, 2, 2, 33, 65, 16, 16), keep: shape(1, 1, 1, 1), note: "all_masked", edit: func(c *Case) {
			c.Keep.Data[0] = 0
		}},
		{p: prob(2, 2, 2, 33, 65, 16, 16), bias: shape(1, 1, 1, 1), note: "all_-Inf", edit: func(c *Case) {
			c.Bias.Data[0] = negInf
		}},
		{p: prob(2, 2, 2, 33, 65, 16, 16), bias: shape(1, 2, 33, 65), note: "mostly_-Inf", edit: func(c *Case) {
			setMask(c.Bias, func(b, h, i, j int) (float32, bool) { return negInf, (h+i+j)%3 != 0 })
		}},
		{p: prob(1, 2, 2, 33, 129, 16, 16), bias: shape(1, 1, 1, 129), note: "columns%5==0_-Inf", edit: func(c *Case) {
			setMask(c.Bias, func(b, h, i, j int) (float32, bool) { return negInf, j%5 == 0 })
		}},
		{p: causal(p), keep: shape(1, 1, 1, 65), note: "first_10_keys_masked", edit: func(c *Case) {
			setMask(c.Keep, func(b, h, i, j int) (float32, bool) {
				if j < 10 {
					return 0, true
				}
				return 1, true
			})
		}},
		{p: prob(1, 2, 2, 5, 0, 8, 8), bias: shape(1, 2, 5, 0), keep: shape(1, 1, 5, 0)},
		{p: causal(prob(1, 2, 2, 130, 65, 16, 16))},
	}
}

// withV returns p with its variants set by f.
func withV(p backend.Problem, f func(v *backend.Variants)) backend.Problem {
	f(&p.Variants)
	return p
}

func win(l, r int) *backend.Window { return &backend.Window{Left: l, Right: r} }
func offset(n int) *int            { return &n }

// The variants of backend.Variants, alone and together: windows of every
// kind with and without causal masking (bands narrower and wider than a
// tile, so that tiles are skipped at both ends), causal offsets that
// align top-left, leave rows empty or show every key, softcap over large
// scores, ALiBi, sinks (with rows that see no key but the sink), per-batch
// key lengths from 0 to Nk, and everything at once with GQA, BNHD, a bias
// and a keep-mask.
func variantSpecs() []spec {
	return []spec{
		{p: withV(prob(1, 2, 2, 70, 70, 16, 16), func(v *backend.Variants) { v.Window = win(3, 2) })},
		{p: withV(causal(prob(1, 2, 1, 200, 200, 24, 8)), func(v *backend.Variants) { v.Window = win(16, 0) })},
		{p: withV(causal(prob(2, 1, 1, 65, 129, 9, 9)), func(v *backend.Variants) { v.Window = win(64, -1) })},
		{p: withV(prob(1, 1, 1, 63, 130, 8, 5), func(v *backend.Variants) { v.Window = win(-1, 4) })},
		{p: withV(prob(1, 1, 1, 40, 40, 8, 8), func(v *backend.Variants) { v.Window = win(0, 0) })},
		{p: withV(prob(1, 1, 1, 33, 65, 7, 7), func(v *backend.Variants) { v.Window = win(-1, -1) })},
		{p: withV(prob(1, 2, 2, 5, 9, 16, 16), func(v *backend.Variants) { v.CausalOffset = offset(0) })},
		{p: withV(prob(1, 2, 1, 10, 10, 16, 16), func(v *backend.Variants) { v.CausalOffset = offset(-3) })},
		{p: withV(prob(1, 1, 1, 70, 66, 16, 16), func(v *backend.Variants) { v.CausalOffset = offset(100) })},
		{p: withV(prob(1, 1, 1, 20, 20, 8, 8), func(v *backend.Variants) { v.CausalOffset = offset(-25) })},
		{p: withV(scaled(prob(1, 2, 2, 65, 65, 16, 16), 4), func(v *backend.Variants) { v.Softcap = 0.5 })},
		{p: withV(prob(1, 1, 1, 17, 33, 31, 31), func(v *backend.Variants) { v.Softcap = 30 })},
		{p: withV(causal(prob(1, 4, 2, 65, 65, 16, 16)), func(v *backend.Variants) { v.ALiBi = []float32{0.5, 0.25, 0.125, 0.0625} })},
		{p: withV(prob(1, 2, 2, 9, 70, 16, 12), func(v *backend.Variants) { v.ALiBi = []float32{1, -0.5} })},
		{p: withV(prob(1, 2, 2, 30, 40, 16, 16), func(v *backend.Variants) { v.Sinks = []float32{0, 10} })},
		{p: withV(prob(1, 3, 1, 12, 12, 8, 8), func(v *backend.Variants) { v.Sinks = []float32{-1, 0.5, 2}; v.CausalOffset = offset(-4) })},
		{p: withV(prob(2, 2, 2, 6, 6, 8, 8), func(v *backend.Variants) { v.Sinks = []float32{1, -2} }), keep: shape(2, 1, 6, 1)},
		{p: withV(causal(prob(3, 2, 1, 3, 65, 16, 16)), func(v *backend.Variants) { v.KVLens = []int{0, 5, 65} })},
		{p: withV(prob(2, 1, 1, 64, 64, 8, 8), func(v *backend.Variants) { v.KVLens = []int{64, 1} })},
		{p: withV(bnhd(prob(2, 4, 2, 20, 70, 16, 16)), func(v *backend.Variants) { v.KVLens = []int{70, 33}; v.CausalOffset = offset(10) })},
		{p: withV(causal(prob(2, 2, 2, 1, 300, 32, 32)), func(v *backend.Variants) { v.Window = win(64, 0); v.KVLens = []int{300, 17} })},
		{p: withV(bnhd(causal(scaled(prob(2, 4, 2, 67, 130, 24, 40), 0.5))), func(v *backend.Variants) {
			v.Window = win(40, 0)
			v.Softcap = 5
			v.ALiBi = []float32{0.5, 0.25, 0.125, 0.0625}
			v.Sinks = []float32{0, 1, -1, 3}
			v.KVLens = []int{130, 90}
		}), bias: shape(2, 1, 67, 130), keep: shape(1, 4, 1, 130)},
	}
}

// PackedProblem returns p (made BNHD) with its sequences packed
// (backend.Packed): query counts qs and, when ks is not nil, key counts
// ks; B is their number and Nq and Nk the longest.
func PackedProblem(p backend.Problem, qs, ks []int) backend.Problem {
	p.Layout = backend.BNHD
	p.B = len(qs)
	cu := func(ns []int) ([]int, int) {
		c, most := []int{0}, 0
		for _, n := range ns {
			c = append(c, c[len(c)-1]+n)
			most = max(most, n)
		}
		return c, most
	}
	p.Packed = &backend.Packed{}
	p.Packed.CuQ, p.Nq = cu(qs)
	if ks != nil {
		p.Packed.CuK, p.Nk = cu(ks)
	}
	return p
}

// PagedProblem returns p with K and V in a pool of pages of size keys
// (backend.Paged), spare pages beyond those the sequences use, and the
// sequences' key lengths lens (B is their number, Nk the longest): each
// sequence's blocks on pages drawn at random from the pool (seeded by the
// sizes), the table's unused entries −1, and, with shared, sequence 1's
// first block on sequence 0's first page (a shared prefix).
func PagedProblem(p backend.Problem, size, spare int, lens []int, shared bool) backend.Problem {
	p.B = len(lens)
	p.KVLens = lens
	p.Nk = 0
	for _, n := range lens {
		p.Nk = max(p.Nk, n)
	}
	per := max(1, (p.Nk+size-1)/size)
	used := 0
	for _, n := range lens {
		used += (n + size - 1) / size
	}
	pg := &backend.Paged{PageSize: size, Pages: used + spare, PerSeq: per, Table: make([]int, p.B*per)}
	rng := newRand(fmt.Sprintf("pages%d_%d_%v", size, spare, lens))
	order := rng.Perm(pg.Pages)
	for b, n := range lens {
		for blk := range per {
			pg.Table[b*per+blk] = -1
			if blk < (n+size-1)/size {
				pg.Table[b*per+blk], order = order[0], order[1:]
			}
		}
	}
	if shared && p.B > 1 && lens[0] > 0 && lens[1] > 0 {
		pg.Table[per] = pg.Table[0]
	}
	p.Paged = pg
	return p
}

// testSeqs runs the packed and paged cases; a backend that does not
// claim Caps.Seqs must refuse one with ErrUnsupported, not misread it.
func (s *suite) testSeqs(t *testing.T) {
	if s.caps.Seqs || !s.caps.Fused {
		s.cases(t, seqSpecs())
		return
	}
	c := seqSpecs()[0].build()
	ops, err := Upload(s.be, c)
	if err != nil {
		t.Fatal(err)
	}
	defer ops.Release()
	o, err := s.be.Alloc(backend.Float32, c.Problem.Resolved().OLen())
	if err != nil {
		t.Fatal(err)
	}
	defer o.Release()
	err = guard(func() error {
		return s.be.Fused(context.Background(), backend.FusedParams{Problem: c.Problem}, ops.Q, ops.K, ops.V, o, nil)
	})
	if !errors.Is(err, backend.ErrUnsupported) {
		t.Errorf("Fused on %v without Caps.Seqs: %v, want ErrUnsupported", c, err)
	}
}

// SeqCases are the suite's cases of packed sequences and paged caches
// (its Seqs section), for a backend's own tests to run under settings of
// its own (tiles, threads, plans).
func SeqCases() []Case {
	var cs []Case
	for _, sp := range seqSpecs() {
		cs = append(cs, sp.build())
	}
	return cs
}

// Packed sequences (cu_seqlens) and paged caches (a block table), alone,
// together and with the variants: empty sequences, one query over many
// keys (decoding, one head or a group), a few (speculative decoding),
// more queries than keys, pages of one key and pages larger than a tile,
// shared pages, pools in both layouts, half caches, and long enough keys
// that a backend splits them.
func seqSpecs() []spec {
	f16 := DTypes{Q: backend.Float16, K: backend.Float16, V: backend.Float16, O: backend.Float16}
	return []spec{
		{p: PackedProblem(prob(0, 4, 2, 0, 0, 16, 16), []int{5, 0, 65}, []int{9, 11, 70})},
		{p: PackedProblem(causal(prob(0, 4, 2, 0, 0, 16, 8)), []int{5, 0, 65, 1}, []int{9, 11, 70, 300})},
		{p: PackedProblem(causal(prob(0, 2, 1, 0, 0, 9, 9)), []int{40, 3}, []int{20, 3})},
		{p: withV(PackedProblem(causal(prob(0, 4, 2, 0, 0, 16, 16)), []int{70, 2, 33}, []int{70, 130, 33}), func(v *backend.Variants) {
			v.Window = win(16, 0)
			v.Softcap = 5
			v.ALiBi = []float32{0.5, 0.25, 0.125, 0.0625}
			v.Sinks = []float32{0, 1, -1, 3}
		}), bias: shape(1, 4, 70, 130)},
		{p: withV(PackedProblem(prob(3, 2, 2, 0, 50, 16, 16), []int{1, 7, 30}, nil), func(v *backend.Variants) { v.KVLens = []int{50, 0, 31} })},
		{p: PagedProblem(causal(prob(0, 4, 2, 1, 0, 16, 16)), 16, 3, []int{0, 17, 100}, true)},
		{p: PagedProblem(causal(bnhd(prob(0, 8, 2, 3, 0, 32, 32))), 16, 2, []int{3, 64, 260}, false)},
		{p: PagedProblem(causal(prob(0, 2, 1, 4, 0, 8, 8)), 1, 5, []int{9, 4}, true)},
		{p: PagedProblem(causal(bnhd(prob(0, 4, 4, 2, 0, 16, 16))), 300, 1, []int{290, 600}, false)},
		{p: PagedProblem(prob(0, 4, 1, 1, 0, 64, 64), 64, 0, []int{1100}, false)},
		{p: PagedProblem(causal(prob(0, 6, 2, 20, 0, 16, 16)), 32, 1, []int{20, 90}, true), keep: shape(2, 1, 1, 90)},
		{p: withV(PagedProblem(causal(bnhd(prob(0, 4, 2, 2, 0, 16, 16))), 16, 1, []int{100, 40}, false), func(v *backend.Variants) {
			v.Window = win(31, 0)
			v.Sinks = []float32{1, 0, 2, -1}
			v.ALiBi = []float32{0.5, 0.25, 0.125, 0.0625}
		})},
		{p: PagedProblem(causal(bnhd(prob(0, 4, 2, 1, 0, 32, 32))), 16, 1, []int{33, 70}, false), dt: f16},
		{p: PagedProblem(causal(bnhd(prob(0, 4, 2, 2, 0, 32, 32))), 16, 1, []int{33, 70}, false), dt: Same(backend.BFloat16)},
		{p: PagedProblem(causal(PackedProblem(prob(0, 4, 2, 0, 0, 16, 16), []int{1, 4, 0}, nil)), 16, 1, []int{30, 4, 9}, false)},
	}
}

// Key padding: a [B, 1, 1, Nk] mask hiding the tail of each batch's keys,
// one batch hiding all of them.
func keyPaddingSpecs() []spec {
	padding := func(lengths ...int) func(*Case) {
		return func(c *Case) {
			m := c.Keep
			if m == nil {
				m = c.Bias
			}
			setMask(m, func(b, h, i, j int) (float32, bool) {
				switch {
				case j >= lengths[b] && c.Keep != nil:
					return 0, true
				case j >= lengths[b]:
					return negInf, true
				case c.Keep != nil:
					return 1, true
				}
				return 0, false
			})
		}
	}
	return []spec{
		{p: prob(3, 2, 2, 129, 129, 32, 32), keep: shape(3, 1, 1, 129), note: "lengths129,92,0", edit: padding(129, 92, 0)},
		{p: prob(3, 4, 2, 1, 300, 64, 64), keep: shape(3, 1, 1, 300), note: "lengths300,17,0", edit: padding(300, 17, 0)},
		{p: causal(prob(2, 2, 2, 65, 65, 16, 16)), keep: shape(2, 1, 1, 65), note: "lengths65,40", edit: padding(65, 40)},
		{p: bnhd(prob(3, 2, 2, 64, 129, 16, 16)), bias: shape(3, 1, 1, 129), note: "lengths129,64,0", edit: padding(129, 64, 0)},
	}
}

// quantSpecs cover 8-bit K and V (backend.Q8, backend.FP8) under Fused:
// decoding (one query, a group of heads, long enough to split), a few
// queries, prefill, both layouts, paged pools, the variants, half
// queries and outputs, head dims of one and several q8 blocks, and the
// values that test a format: all-zero blocks, one large outlier a block
// (which sets the block's scale), values beyond fp8's ±448 (stored
// saturated, the reference reading what is stored) and per-head scales.
func quantSpecs() []spec {
	q8 := DTypes{K: backend.Q8, V: backend.Q8}
	f8 := DTypes{K: backend.FP8, V: backend.FP8}
	mixed := DTypes{Q: backend.Float16, K: backend.Q8, V: backend.FP8, O: backend.Float16}
	// zeroBlocks zeroes every third 32-value block of K and V; outliers
	// puts one value of 40 in every block of K, at a place of its own.
	zeroBlocks := func(c *Case) {
		for _, x := range [][]float32{c.K, c.V} {
			for lo := 0; lo+32 <= len(x); lo += 96 {
				clear(x[lo : lo+32])
			}
		}
	}
	outliers := func(c *Case) {
		for lo := 0; lo+32 <= len(c.K); lo += 32 {
			c.K[lo+lo/32%32] = 40 * float32(1-2*(lo/32%2))
		}
	}
	beyond := func(c *Case) { // a tenth of V beyond ±448
		for i := 0; i < len(c.V); i += 10 {
			c.V[i] *= 2000
		}
	}
	scales := func(p backend.Problem, k, v []float32) backend.Problem {
		p.Scales = &backend.Scales{K: k, V: v}
		return p
	}
	var specs []spec
	for _, dt := range []DTypes{q8, f8} {
		specs = append(specs,
			spec{p: prob(1, 8, 2, 1, 37, 32, 32), dt: dt},
			spec{p: causal(prob(1, 32, 8, 1, 700, 128, 128)), dt: dt},
			spec{p: causal(bnhd(prob(2, 4, 2, 3, 300, 64, 64))), dt: dt},
			spec{p: causal(prob(1, 4, 4, 67, 67, 32, 96)), dt: dt},
			spec{p: bnhd(prob(2, 2, 1, 70, 129, 64, 32)), dt: dt},
			spec{p: prob(1, 4, 2, 1, 200, 64, 64), note: "zeroblocks", edit: zeroBlocks, dt: dt},
			spec{p: prob(1, 4, 2, 5, 200, 64, 64), note: "outliers", edit: outliers, dt: dt},
			spec{p: PagedProblem(causal(bnhd(prob(0, 8, 2, 1, 0, 64, 64))), 16, 2, []int{1, 33, 260}, true), dt: dt},
			spec{p: PagedProblem(causal(prob(0, 4, 2, 2, 0, 32, 32)), 32, 1, []int{70, 40}, false), dt: dt},
			// Runs of 512 keys and more, which a CPU with AMX-INT8 takes
			// on its tiles (q8): a head dim of eight blocks beside a Dv
			// of one pass, scale rows a whole position apart (BNHD),
			// pages of 512, outliers.
			spec{p: causal(bnhd(prob(1, 8, 2, 1, 1100, 256, 64))), dt: dt},
			spec{p: PagedProblem(causal(prob(0, 4, 1, 1, 0, 64, 128)), 512, 1, []int{1200, 530}, false), dt: dt},
			spec{p: prob(1, 4, 2, 1, 600, 64, 64), note: "outliers", edit: outliers, dt: dt},
			spec{p: withV(causal(prob(2, 4, 2, 2, 130, 32, 32)), quantVariants), dt: dt},
		)
	}
	// Head dims that are not whole q8 blocks (Phi-2's 80, 40, 72, 112:
	// rows padded to whole blocks, backend's Pitch), in every layout,
	// packed and paged, with fp8 (which has no blocks) beside them, and
	// MLA's 576 and 512 at full width.
	for _, dt := range []DTypes{q8, f8} {
		specs = append(specs,
			spec{p: causal(prob(1, 8, 2, 1, 300, 80, 80)), dt: dt},
			spec{p: causal(bnhd(prob(2, 4, 2, 3, 100, 40, 72))), dt: dt},
			spec{p: prob(1, 4, 4, 40, 70, 112, 40), dt: dt},
			spec{p: PagedProblem(causal(bnhd(prob(0, 8, 2, 1, 0, 72, 112))), 16, 2, []int{1, 33, 100}, true), dt: dt},
			spec{p: PagedProblem(causal(prob(0, 4, 1, 2, 0, 80, 80)), 32, 1, []int{70, 40}, false), dt: dt},
			spec{p: PackedProblem(causal(prob(3, 4, 2, 0, 0, 40, 80)), []int{1, 7, 30}, []int{20, 7, 45}), dt: dt},
			spec{p: causal(prob(1, 16, 1, 1, 70, 576, 512)), dt: dt},
		)
	}
	specs = append(specs,
		spec{p: causal(bnhd(prob(1, 8, 2, 2, 90, 80, 72))), dt: DTypes{Q: backend.Float16, K: backend.Q8, V: backend.Float16, O: backend.BFloat16}},
		spec{p: causal(prob(1, 8, 2, 1, 90, 64, 40)), dt: DTypes{K: backend.Float16, V: backend.Q8}},
	)
	return append(specs,
		spec{p: prob(1, 4, 2, 1, 150, 32, 32), note: "beyond448", edit: beyond, dt: f8},
		spec{p: scales(causal(prob(1, 4, 2, 2, 150, 32, 32)), []float32{0.5, 3}, []float32{2, 0.25}), dt: f8},
		spec{p: scales(causal(prob(1, 4, 2, 2, 150, 32, 32)), nil, []float32{4, 0.5}), dt: q8},
		spec{p: causal(bnhd(prob(1, 8, 2, 1, 333, 64, 64))), dt: mixed},
		spec{p: causal(prob(2, 4, 4, 40, 90, 32, 32)), dt: mixed},
	)
}

// quantVariants are the variants quantSpecs and quant4Specs take at once,
// over 2 sequences of 130 keys and 4 heads.
func quantVariants(v *backend.Variants) {
	v.Window = win(40, 0)
	v.Softcap = 5
	v.ALiBi = []float32{0.5, 0.25, 0.125, 0.0625}
	v.Sinks = []float32{0, 1, -1, 3}
	v.KVLens = []int{130, 77}
}

// vFromKSpecs are problems that take V from K (Problem.VFromK): MLA's
// latent cache, where V is the first Dv columns of each K row, stored
// once. The head dims are MLA's shape scaled down (D = 576, Dv = 512 in
// DeepSeek V3: 18 and 16 blocks of 32, here 3 and 2, or 2 and 1), Dv = D,
// and odd ones for the unquantized dtypes; many query heads over one KV
// head, as MLA decodes with absorbed weights; every storage dtype,
// contiguous, packed and paged, with the variants.
func vFromKSpecs() []spec {
	v := func(p backend.Problem) backend.Problem { p.VFromK = true; return p }
	f16 := Same(backend.Float16)
	bf16 := Same(backend.BFloat16)
	mixed := DTypes{Q: backend.Float32, K: backend.Float16, V: backend.Float16, O: backend.BFloat16}
	q8 := DTypes{K: backend.Q8, V: backend.Q8}
	f8 := DTypes{K: backend.FP8, V: backend.FP8}
	specs := []spec{
		{p: v(prob(1, 4, 1, 3, 50, 17, 9))},
		{p: v(prob(1, 2, 2, 1, 1, 5, 5))},
		{p: v(causal(bnhd(prob(2, 4, 2, 33, 65, 24, 16))))},
		{p: v(scaled(causal(prob(1, 16, 1, 1, 300, 96, 64)), defaultScale(40)))},
		{p: v(prob(1, 16, 1, 2, 129, 96, 64)), dt: f16},
		{p: v(causal(bnhd(prob(1, 8, 1, 70, 70, 40, 32)))), dt: bf16},
		{p: v(prob(2, 4, 2, 5, 40, 32, 8)), keep: &[4]int{2, 1, 5, 40}, dt: mixed},
		{p: v(withV(causal(prob(2, 4, 1, 4, 90, 32, 16)), func(vs *backend.Variants) {
			vs.Window = win(30, 0)
			vs.Softcap = 5
			vs.ALiBi = []float32{0.5, 0.25, 0.125, 0.0625}
			vs.Sinks = []float32{0, 1, -1, 3}
			vs.KVLens = []int{90, 17}
		}))},
		{p: v(PackedProblem(causal(prob(3, 4, 1, 0, 0, 32, 16)), []int{1, 7, 30}, []int{20, 7, 45}))},
		{p: v(PackedProblem(causal(prob(2, 4, 2, 0, 0, 48, 40)), []int{3, 5}, nil)), dt: f16},
		{p: v(PackedProblem(causal(prob(2, 4, 2, 0, 0, 48, 40)), []int{3, 5}, nil)), bias: &[4]int{1, 4, 1, 1}},
	}
	// 8 bits: rows of 3 and 2 blocks (q8), whose V straddles a q8
	// superblock where K's row does; decoding, GQA and paged.
	for _, dt := range []DTypes{q8, f8} {
		specs = append(specs,
			spec{p: v(causal(prob(1, 16, 1, 1, 300, 96, 64))), dt: dt},
			spec{p: v(causal(bnhd(prob(2, 8, 2, 3, 70, 64, 32)))), dt: dt},
			spec{p: v(PagedProblem(causal(prob(0, 16, 1, 1, 0, 96, 64)), 16, 2, []int{1, 40, 130}, true)), dt: dt},
			spec{p: v(PagedProblem(causal(bnhd(prob(0, 4, 2, 2, 0, 64, 32))), 32, 1, []int{70, 33}, false)), dt: dt},
			// Rows that are not whole q8 blocks: V's 40 columns
			// of K's 80, read at K's pitch of 96.
			spec{p: v(causal(prob(1, 16, 1, 1, 100, 80, 40))), dt: dt},
			spec{p: v(PagedProblem(causal(bnhd(prob(0, 8, 2, 2, 0, 72, 72))), 16, 2, []int{1, 50}, true)), dt: dt},
		)
	}
	specs = append(specs, spec{p: v(PagedProblem(causal(prob(0, 16, 1, 1, 0, 96, 64)), 16, 2, []int{1, 40, 130}, true)), dt: f16})
	// fp8 with a scale a KV head: V's are K's.
	sc := v(causal(prob(1, 8, 2, 1, 100, 64, 32)))
	sc.Scales = &backend.Scales{K: []float32{0.5, 3}, V: []float32{0.5, 3}}
	specs = append(specs, spec{p: sc, dt: f8})
	return specs
}
