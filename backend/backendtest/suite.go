package backendtest

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/attn-go/attn/backend"
)

// Run is the conformance suite. A backend's test file calls it once:
//
//	func TestConformance(t *testing.T) { backendtest.Run(t, open) }
//
// open returns a fresh, independent backend each time it is called (it
// may call t.Skip when the device is absent); Run closes what it opens
// through t.Cleanup. Run checks every capability the backend claims, and
// fails a backend that claims less than the contract requires.
func Run(t *testing.T, open func(t testing.TB) backend.Backend) {
	be := openBackend(t, open)
	s := &suite{be: be, caps: be.Caps(), open: open}

	t.Run("Caps", s.testCaps)
	t.Run("Buffers", s.testBuffers)
	t.Run("Sizes", func(t *testing.T) { s.cases(t, sizeSpecs()) })
	t.Run("HeadDims", func(t *testing.T) { s.cases(t, headDimSpecs()) })
	t.Run("Scale", func(t *testing.T) { s.cases(t, scaleSpecs()) })
	t.Run("Causal", func(t *testing.T) { s.cases(t, causalSpecs()) })
	t.Run("Heads", func(t *testing.T) { s.cases(t, headSpecs()) })
	t.Run("Layout", func(t *testing.T) { s.cases(t, layoutSpecs()) })
	t.Run("Bias", func(t *testing.T) { s.cases(t, maskSpecs(true, false)) })
	t.Run("Keep", func(t *testing.T) { s.cases(t, maskSpecs(false, true)) })
	t.Run("BiasAndKeep", func(t *testing.T) { s.cases(t, biasAndKeepSpecs()) })
	t.Run("MaskedRows", func(t *testing.T) { s.cases(t, maskedRowSpecs()) })
	t.Run("KeyPadding", func(t *testing.T) { s.cases(t, keyPaddingSpecs()) })
	t.Run("Variants", func(t *testing.T) { s.cases(t, variantSpecs()) })
	t.Run("Seqs", s.testSeqs)
	t.Run("Quant", func(t *testing.T) { s.cases(t, quantSpecs()) })
	t.Run("VFromK", func(t *testing.T) { s.cases(t, vFromKSpecs()) })
	t.Run("Indices", s.testIndices)
	t.Run("Blocks", s.testBlocks)
	t.Run("Layouts", s.testLayouts)
	t.Run("Backward", s.testBackward)
	t.Run("HalfBuffers", s.testHalfBuffers)
	t.Run("Half", s.testHalf)
	t.Run("Views", s.testViews)
	t.Run("Wrap", s.testWrap)
	t.Run("Copy", s.testCopy)
	t.Run("Errors", s.testErrors)
	t.Run("Closed", s.testClosed)
	t.Run("Cancel", s.testCancel)
	t.Run("Concurrent", s.testConcurrent)
	t.Run("ConcurrentWrites", s.testConcurrentWrites)
	t.Run("Deterministic", s.testDeterministic)
}

type suite struct {
	be   backend.Backend
	caps backend.Caps
	open func(t testing.TB) backend.Backend
}

// openBackend opens a backend and closes it when t ends.
func openBackend(t testing.TB, open func(t testing.TB) backend.Backend) backend.Backend {
	t.Helper()
	be := open(t)
	if be == nil {
		t.Fatal("open returned a nil Backend")
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return be
}

// requiredCaps lists the capabilities the contract requires of every
// backend.
func requiredCaps(c backend.Caps) []struct {
	name string
	has  bool
} {
	return []struct {
		name string
		has  bool
	}{
		{"Staged", c.Staged}, {"Fused", c.Fused}, {"Bias", c.Bias}, {"KeepMask", c.KeepMask},
		{"Causal", c.Causal}, {"GQA", c.GQA}, {"BNHD", c.BNHD}, {"LSE", c.LSE}, {"Variants", c.Variants},
	}
}

func (s *suite) testCaps(t *testing.T) {
	for _, c := range requiredCaps(s.caps) {
		if !c.has {
			t.Errorf("Caps().%s is false; the contract requires it (the cases that need it are skipped)", c.name)
		}
	}
	if s.caps.MaxBufferLen < 0 {
		t.Errorf("Caps().MaxBufferLen = %d, want ≥ 0", s.caps.MaxBufferLen)
	}
	if name := s.be.Name(); name == "" || name == "auto" {
		t.Errorf("Name() = %q", name)
	}
	if k := s.be.Info().Kind; k != backend.KindCPU && k != backend.KindGPU {
		t.Errorf("Info().Kind = %v", k)
	}
	if err := guard(s.be.Sync); err != nil {
		t.Errorf("Sync with nothing submitted: %v", err)
	}
}

// lacks names the capabilities a case needs that the backend does not
// claim, or returns "".
func (s *suite) lacks(p backend.Problem, bias, keep bool, dt DTypes) string {
	var missing []string
	if dt.Half() && !s.caps.Half {
		missing = append(missing, "Half")
	}
	if dt.Quant() && (!s.caps.Quant8 || !s.caps.Fused) {
		missing = append(missing, "Quant8 and Fused")
	}
	if !s.caps.Staged && !s.caps.Fused {
		missing = append(missing, "Staged and Fused")
	}
	if p.Layout == backend.BNHD && !s.caps.BNHD {
		missing = append(missing, "BNHD")
	}
	if p.Causal && !s.caps.Causal {
		missing = append(missing, "Causal")
	}
	if p.KVHeads < p.H && !s.caps.GQA {
		missing = append(missing, "GQA")
	}
	if bias && !s.caps.Bias {
		missing = append(missing, "Bias")
	}
	if keep && !s.caps.KeepMask {
		missing = append(missing, "KeepMask")
	}
	if p.Variants.Any() && !s.caps.Variants {
		missing = append(missing, "Variants")
	}
	if (p.Packed != nil || p.Paged != nil) && !s.caps.Seqs {
		missing = append(missing, "Seqs")
	}
	if p.VFromK && !s.caps.VFromK {
		missing = append(missing, "VFromK")
	}
	if p.Indices != nil && !s.caps.Indices {
		missing = append(missing, "Indices")
	}
	if p.Blocks != nil && !s.caps.Blocks {
		missing = append(missing, "Blocks")
	}
	if len(missing) == 0 {
		return ""
	}
	return "backend does not claim " + strings.Join(missing, ", ")
}

// lseModes are the ways to run a case: with and without the LSE output.
func (s *suite) lseModes() []bool {
	if s.caps.LSE {
		return []bool{true, false}
	}
	return []bool{false}
}

// spec describes one case of the suite; its data come from a generator
// seeded by its name.
type spec struct {
	p          backend.Problem
	bias, keep *[4]int
	note       string      // names what edit does
	edit       func(*Case) // shapes the random data into the pattern the case is about
	dt         DTypes      // the operands' dtypes; the data are rounded to them after edit
}

func (sp spec) name() string {
	n := describe(sp.p, sp.bias, sp.keep)
	if sp.note != "" {
		n += "_" + sp.note
	}
	if sp.dt != (DTypes{}) {
		n += "_" + sp.dt.String()
	}
	return n
}

func (sp spec) build() Case {
	c := RandomCase(newRand(sp.name()), sp.p, sp.bias, sp.keep)
	if sp.edit != nil {
		sp.edit(&c)
	}
	return c.WithDTypes(sp.dt)
}

// newRand is a generator seeded from name, so every case has its own
// fixed data whatever runs before it.
func newRand(name string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(h.Sum64(), 0x6174746e))
}

// cases runs each spec through both strategies, with and without LSE.
func (s *suite) cases(t *testing.T, specs []spec) {
	for _, sp := range specs {
		t.Run(sp.name(), func(t *testing.T) {
			if why := s.lacks(sp.p, sp.bias != nil, sp.keep != nil, sp.dt); why != "" {
				t.Skip(why)
			}
			s.check(t, sp.build())
		})
	}
}

func (s *suite) check(t *testing.T, c Case) {
	ctx := context.Background()
	if s.caps.Fused {
		t.Run("fused", func(t *testing.T) {
			for _, lse := range s.lseModes() {
				if err := RunFused(ctx, s.be, c, lse); err != nil {
					t.Error(err)
				}
			}
		})
	}
	if s.caps.Staged && c.Packed == nil && c.Paged == nil && c.Indices == nil && c.Blocks == nil && !c.DTypes.Quant() {
		t.Run("staged", func(t *testing.T) {
			for _, lse := range s.lseModes() {
				if err := RunStaged(ctx, s.be, c, lse); err != nil {
					t.Error(err)
				}
			}
		})
	}
}

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

var negInf = float32(math.Inf(-1))

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

// fakeBuffer is a Buffer no backend allocated.
type fakeBuffer struct{ n int }

func (f fakeBuffer) Len() int             { return f.n }
func (f fakeBuffer) DType() backend.DType { return backend.Float32 }
func (f fakeBuffer) Release()             {}

// testBuffers checks Alloc, Write, Read and Release.
func (s *suite) testBuffers(t *testing.T) {
	be := s.be
	alloc := func(t *testing.T, n int) backend.Buffer {
		t.Helper()
		var b backend.Buffer
		if err := guard(func() (err error) { b, err = be.Alloc(backend.Float32, n); return err }); err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		if b == nil {
			t.Fatalf("Alloc(%d) returned a nil Buffer", n)
		}
		t.Cleanup(b.Release)
		if b.Len() != n {
			t.Fatalf("Alloc(%d).Len() = %d", n, b.Len())
		}
		return b
	}
	read := func(t *testing.T, b backend.Buffer, off, n int) []float32 {
		t.Helper()
		x := make([]float32, n)
		if err := guard(func() error { return be.Read(x, b, off) }); err != nil {
			t.Fatalf("Read(%d values at %d) of a buffer of %d: %v", n, off, b.Len(), err)
		}
		return x
	}
	write := func(t *testing.T, b backend.Buffer, off int, x []float32) {
		t.Helper()
		if err := guard(func() error { return be.Write(b, off, x) }); err != nil {
			t.Fatalf("Write(%d values at %d) to a buffer of %d: %v", len(x), off, b.Len(), err)
		}
	}
	wantErr := func(t *testing.T, what string, err, sentinel error) {
		t.Helper()
		switch {
		case err == nil:
			t.Errorf("%s: no error, want one wrapping %v", what, sentinel)
		case !errors.Is(err, sentinel):
			t.Errorf("%s: error %q does not wrap %v", what, err, sentinel)
		}
	}

	t.Run("Empty", func(t *testing.T) {
		b := alloc(t, 0)
		write(t, b, 0, nil)
		read(t, b, 0, 0)
	})
	t.Run("ZeroFilled", func(t *testing.T) {
		for _, n := range []int{1, 63, 1000, 4099} {
			b := alloc(t, n)
			for i, x := range read(t, b, 0, n) {
				if math.Float32bits(x) != 0 {
					t.Fatalf("Alloc(%d): element %d is %v, want +0", n, i, x)
				}
			}
		}
	})
	t.Run("RoundTrip", func(t *testing.T) {
		const n = 300
		b := alloc(t, n)
		want := make([]float32, n)
		src := uniform(newRand("RoundTrip"), n, 10)
		special := []float32{
			float32(math.NaN()), float32(math.Inf(1)), negInf, float32(math.Copysign(0, -1)),
			math.SmallestNonzeroFloat32, -math.MaxFloat32, math.Float32frombits(0x7fc12345),
		}
		copy(src[100:], special)
		for _, w := range []struct{ off, n int }{{0, 50}, {50, 1}, {97, 110}, {280, 20}, {n, 0}, {7, 0}} {
			write(t, b, w.off, src[w.off:w.off+w.n])
			copy(want[w.off:], src[w.off:w.off+w.n])
		}
		if i := firstDiff(read(t, b, 0, n), want); i >= 0 {
			t.Fatalf("after writes at offsets, element %d differs", i)
		}
		for _, r := range []struct{ off, n int }{{0, n}, {37, 50}, {100, len(special)}, {n - 1, 1}, {n, 0}} {
			if i := firstDiff(read(t, b, r.off, r.n), want[r.off:r.off+r.n]); i >= 0 {
				t.Errorf("Read(%d values at %d): element %d differs", r.n, r.off, r.off+i)
			}
		}
		// Out of range: an error, and nothing written.
		for _, r := range []struct{ off, n int }{{-1, 1}, {-1, 0}, {n - 2, 3}, {n + 1, 0}, {0, n + 1}} {
			x := make([]float32, r.n)
			for i := range x {
				x[i] = 42
			}
			err := guard(func() error { return be.Write(b, r.off, x) })
			wantErr(t, fmt.Sprintf("Write(%d values at %d) to a buffer of %d", r.n, r.off, n), err, backend.ErrShape)
			err = guard(func() error { return be.Read(x, b, r.off) })
			wantErr(t, fmt.Sprintf("Read(%d values at %d) of a buffer of %d", r.n, r.off, n), err, backend.ErrShape)
		}
		if i := firstDiff(read(t, b, 0, n), want); i >= 0 {
			t.Errorf("a failed Write changed element %d", i)
		}
		wantErr(t, "Write to a nil Buffer", guard(func() error { return be.Write(nil, 0, nil) }), backend.ErrShape)
		wantErr(t, "Read from a nil Buffer", guard(func() error { return be.Read(nil, nil, 0) }), backend.ErrShape)
	})
	t.Run("AllocNegative", func(t *testing.T) {
		var b backend.Buffer
		err := guard(func() (err error) { b, err = be.Alloc(backend.Float32, -1); return err })
		wantErr(t, "Alloc(-1)", err, backend.ErrShape)
		if err == nil && b != nil {
			b.Release()
		}
	})
	t.Run("DType", func(t *testing.T) {
		b := alloc(t, 8)
		if b.DType() != backend.Float32 {
			t.Errorf("Alloc(Float32, 8).DType() = %v", b.DType())
		}
		var x backend.Buffer
		err := guard(func() (err error) { x, err = be.Alloc(backend.DType(99), 4); return err })
		wantErr(t, "Alloc of an unknown dtype", err, backend.ErrShape)
		if err == nil && x != nil {
			x.Release()
		}
		// The bits of a Float32 buffer are not half bits.
		wantErr(t, "WriteBits to a Float32 buffer", guard(func() error { return be.WriteBits(b, 0, []uint16{1}) }), backend.ErrShape)
		wantErr(t, "ReadBits from a Float32 buffer", guard(func() error { return be.ReadBits(make([]uint16, 1), b, 0) }), backend.ErrShape)
		if s.caps.Half {
			return
		}
		for _, dt := range []backend.DType{backend.Float16, backend.BFloat16} {
			err := guard(func() (err error) { x, err = be.Alloc(dt, 4); return err })
			wantErr(t, fmt.Sprintf("Alloc(%v) without Caps().Half", dt), err, backend.ErrUnsupported)
			if err == nil && x != nil {
				x.Release()
			}
		}
	})
	t.Run("AllocTooLarge", func(t *testing.T) {
		if s.caps.MaxBufferLen == 0 {
			t.Skip("Caps().MaxBufferLen is 0: no limit")
		}
		var b backend.Buffer
		err := guard(func() (err error) { b, err = be.Alloc(backend.Float32, s.caps.MaxBufferLen+1); return err })
		wantErr(t, fmt.Sprintf("Alloc(MaxBufferLen+1 = %d)", s.caps.MaxBufferLen+1), err, backend.ErrTooLarge)
		if err == nil && b != nil {
			b.Release()
		}
	})
	t.Run("Released", func(t *testing.T) {
		b := alloc(t, 8)
		b.Release()
		b.Release() // a no-op
		wantErr(t, "Write after Release", guard(func() error { return be.Write(b, 0, []float32{1}) }), backend.ErrReleased)
		wantErr(t, "Read after Release", guard(func() error { return be.Read(make([]float32, 1), b, 0) }), backend.ErrReleased)
		// Liveness before dtype: released, not a Float32 buffer's ErrShape.
		wantErr(t, "WriteBits after Release", guard(func() error { return be.WriteBits(b, 0, []uint16{1}) }), backend.ErrReleased)
		wantErr(t, "ReadBits after Release", guard(func() error { return be.ReadBits(make([]uint16, 1), b, 0) }), backend.ErrReleased)
		alloc(t, 8) // the backend still works
	})
	t.Run("Foreign", func(t *testing.T) {
		other := openBackend(t, s.open)
		var fb backend.Buffer
		if err := guard(func() (err error) { fb, err = other.Alloc(backend.Float32, 8); return err }); err != nil || fb == nil {
			t.Fatalf("second backend: Alloc(8): %v", err)
		}
		defer fb.Release()
		for _, f := range []backend.Buffer{fb, fakeBuffer{8}} {
			wantErr(t, fmt.Sprintf("Write to a %T from elsewhere", f), guard(func() error { return be.Write(f, 0, []float32{1}) }), backend.ErrForeignBuffer)
			wantErr(t, fmt.Sprintf("Read from a %T from elsewhere", f), guard(func() error { return be.Read(make([]float32, 1), f, 0) }), backend.ErrForeignBuffer)
		}
		got := make([]float32, 8)
		if err := guard(func() error { return other.Read(got, fb, 0) }); err != nil {
			t.Fatalf("second backend: Read: %v", err)
		}
		if i := firstDiff(got, make([]float32, 8)); i >= 0 {
			t.Errorf("a Write through another backend changed element %d", i)
		}
	})
}

// errEnv holds the buffers of one bad call, and what they held before it.
type errEnv struct {
	t                   *testing.T
	s                   *suite
	other               backend.Backend // where foreign buffers come from
	p                   backend.Problem
	bias                *backend.Mask
	keep                *backend.Mask
	q, k, v, o, lse, sc backend.Buffer
	held                []held
}

// held is a buffer of a bad call and the backend that allocated it.
type held struct {
	input
	be backend.Backend
}

// buf allocates n values from be, fills them with a pattern and records
// them.
func (e *errEnv) buf(be backend.Backend, name string, n int) backend.Buffer {
	e.t.Helper()
	return e.bufOf(be, backend.Float32, name, n)
}

// bufOf is buf for n values of dtype t; the pattern is one every dtype
// holds.
func (e *errEnv) bufOf(be backend.Backend, t backend.DType, name string, n int) backend.Buffer {
	e.t.Helper()
	var b backend.Buffer
	if err := guard(func() (err error) { b, err = be.Alloc(t, n); return err }); err != nil || b == nil {
		e.t.Fatalf("Alloc(%v, %d) for %s: %v", t, n, name, err)
	}
	e.t.Cleanup(b.Release)
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(i%113)*0.25 - 3
	}
	if err := guard(func() error { return be.Write(b, 0, data) }); err != nil {
		e.t.Fatalf("Write %s: %v", name, err)
	}
	e.held = append(e.held, held{input{name, b, data}, be})
	return b
}

func (e *errEnv) short(name string, n int) backend.Buffer { return e.buf(e.s.be, name, max(n-1, 0)) }

func (e *errEnv) foreign(name string, n int) backend.Buffer { return e.buf(e.other, name, n) }

func (e *errEnv) released(name string, n int) backend.Buffer {
	b := e.buf(e.s.be, name, n)
	b.Release()
	e.held = e.held[:len(e.held)-1]
	return b
}

// unchanged reports the first buffer that a failed call modified.
func (e *errEnv) unchanged() error {
	for _, in := range e.held {
		got := make([]float32, len(in.data))
		if err := guard(func() error { return in.be.Read(got, in.buf, 0) }); err != nil {
			return fmt.Errorf("reading %s back: %w", in.name, err)
		}
		if i := firstDiff(got, in.data); i >= 0 {
			return fmt.Errorf("%s was written although the call failed: element %d was %v, now %v", in.name, i, in.data[i], got[i])
		}
	}
	return nil
}

type errCase struct {
	name string
	edit func(e *errEnv)
	want error
}

// problemErrs are bad problems every op must refuse.
func problemErrs() []errCase {
	edit := func(f func(p *backend.Problem)) func(e *errEnv) { return func(e *errEnv) { f(&e.p) } }
	return []errCase{
		{"B=-1", edit(func(p *backend.Problem) { p.B = -1 }), backend.ErrShape},
		{"Nq=-1", edit(func(p *backend.Problem) { p.Nq = -1 }), backend.ErrShape},
		{"Nk=-1", edit(func(p *backend.Problem) { p.Nk = -1 }), backend.ErrShape},
		{"H=0", edit(func(p *backend.Problem) { p.H = 0 }), backend.ErrShape},
		{"H=-4", edit(func(p *backend.Problem) { p.H = -4 }), backend.ErrShape},
		{"KVHeads=-2", edit(func(p *backend.Problem) { p.KVHeads = -2 }), backend.ErrShape},
		{"KVHeads=3_of_H=4", edit(func(p *backend.Problem) { p.KVHeads = 3 }), backend.ErrShape},
		{"KVHeads=8_of_H=4", edit(func(p *backend.Problem) { p.KVHeads = 8 }), backend.ErrShape},
		{"D=0", edit(func(p *backend.Problem) { p.D = 0 }), backend.ErrShape},
		{"D=-8", edit(func(p *backend.Problem) { p.D = -8 }), backend.ErrShape},
		{"Dv=-6", edit(func(p *backend.Problem) { p.Dv = -6 }), backend.ErrShape},
		{"scale=NaN", edit(func(p *backend.Problem) { p.Scale = float32(math.NaN()) }), backend.ErrShape},
		{"scale=+Inf", edit(func(p *backend.Problem) { p.Scale = float32(math.Inf(1)) }), backend.ErrShape},
		{"scale=-Inf", edit(func(p *backend.Problem) { p.Scale = negInf }), backend.ErrShape},
		{"layout=7", edit(func(p *backend.Problem) { p.Layout = 7 }), backend.ErrShape},
		{"overflow", edit(func(p *backend.Problem) { p.Nq, p.Nk = 1<<40, 1<<40 }), backend.ErrTooLarge},
	}
}

// maskErrs are bad masks; set is where the op takes the mask.
func maskErrs(name string, set func(e *errEnv, m *backend.Mask)) []errCase {
	bad := func(s [4]int) func(e *errEnv) {
		return func(e *errEnv) {
			set(e, &backend.Mask{Buf: e.buf(e.s.be, name, max(shapeLen(s), 1)+4), Shape: s})
		}
	}
	return []errCase{
		{name + "_shape[2,4,9,12]", bad([4]int{2, 4, 9, 12}), backend.ErrShape},
		{name + "_shape[3,1,1,11]", bad([4]int{3, 1, 1, 11}), backend.ErrShape},
		{name + "_shape[1,2,1,11]", bad([4]int{1, 2, 1, 11}), backend.ErrShape},
		{name + "_shape[1,1,9,0]", bad([4]int{1, 1, 9, 0}), backend.ErrShape},
		{name + "_shape[-1,1,1,11]", bad([4]int{-1, 1, 1, 11}), backend.ErrShape},
		{name + "_short", func(e *errEnv) { set(e, &backend.Mask{Buf: e.short(name, 2*9*11), Shape: [4]int{2, 1, 9, 11}}) }, backend.ErrShape},
		{name + "_nil_buffer", func(e *errEnv) { set(e, &backend.Mask{Shape: [4]int{1, 1, 1, 11}}) }, backend.ErrShape},
		{name + "_foreign", func(e *errEnv) { set(e, &backend.Mask{Buf: e.foreign(name, 11), Shape: [4]int{1, 1, 1, 11}}) }, backend.ErrForeignBuffer},
		{name + "_released", func(e *errEnv) { set(e, &backend.Mask{Buf: e.released(name, 11), Shape: [4]int{1, 1, 1, 11}}) }, backend.ErrReleased},
	}
}

// bufErrs are bad buffers for one operand: nil, too short, from another
// backend, released. slot is where the operand goes, n its length.
func bufErrs(name string, n int, slot func(e *errEnv) *backend.Buffer) []errCase {
	return []errCase{
		{name + "_nil", func(e *errEnv) { *slot(e) = nil }, backend.ErrShape},
		{name + "_short", func(e *errEnv) { *slot(e) = e.short(name, n) }, backend.ErrShape},
		{name + "_foreign", func(e *errEnv) { *slot(e) = e.foreign(name, n) }, backend.ErrForeignBuffer},
		{name + "_fake", func(e *errEnv) { *slot(e) = fakeBuffer{n} }, backend.ErrForeignBuffer},
		{name + "_released", func(e *errEnv) { *slot(e) = e.released(name, n) }, backend.ErrReleased},
	}
}

// testErrors makes bad calls to every op and checks that each returns an
// error wrapping the right sentinel, does not panic, and writes nothing.
func (s *suite) testErrors(t *testing.T) {
	// A valid problem; each case breaks one thing about it.
	p0 := scaled(prob(2, 4, 2, 9, 11, 8, 6), 0.3)
	other := openBackend(t, s.open)
	slot := func(f func(e *errEnv) *backend.Buffer) func(e *errEnv) *backend.Buffer { return f }
	q := slot(func(e *errEnv) *backend.Buffer { return &e.q })
	k := slot(func(e *errEnv) *backend.Buffer { return &e.k })
	v := slot(func(e *errEnv) *backend.Buffer { return &e.v })
	o := slot(func(e *errEnv) *backend.Buffer { return &e.o })
	lse := slot(func(e *errEnv) *backend.Buffer { return &e.lse })
	sc := slot(func(e *errEnv) *backend.Buffer { return &e.sc })
	setBias := func(e *errEnv, m *backend.Mask) { e.bias = m }
	setKeep := func(e *errEnv, m *backend.Mask) { e.keep = m }
	withLSE := func(e *errEnv) { e.lse = e.buf(e.s.be, "LSE", p0.LSELen()) }
	// Half buffers where the contract wants Float32, for a backend that
	// claims Half (the others cannot allocate them).
	half := func(name string, set func(e *errEnv, t backend.DType)) []errCase {
		if !s.caps.Half {
			return nil
		}
		return halfErrs(name, set)
	}
	halfLSE := half("LSE", func(e *errEnv, t backend.DType) { e.lse = e.bufOf(e.s.be, t, "LSE", p0.LSELen()) })
	halfKeep := half("keep", func(e *errEnv, t backend.DType) {
		e.keep = &backend.Mask{Buf: e.bufOf(e.s.be, t, "keep", p0.Nk), Shape: [4]int{1, 1, 1, p0.Nk}}
	})
	halfScores := half("scores", func(e *errEnv, t backend.DType) { e.sc = e.bufOf(e.s.be, t, "scores", p0.ScoresLen()) })

	join := func(lists ...[]errCase) []errCase {
		var all []errCase
		for _, l := range lists {
			all = append(all, l...)
		}
		return all
	}
	ops := []struct {
		name  string
		needs bool
		call  func(ctx context.Context, e *errEnv) error
		cases []errCase
	}{
		{"Fused", s.caps.Fused, func(ctx context.Context, e *errEnv) error {
			return s.be.Fused(ctx, backend.FusedParams{Problem: e.p, Bias: e.bias, Keep: e.keep}, e.q, e.k, e.v, e.o, e.lse)
		}, join(withEach(problemErrs(), withLSE),
			bufErrs("Q", p0.QLen(), q), bufErrs("K", p0.KLen(), k), bufErrs("V", p0.VLen(), v),
			bufErrs("O", p0.OLen(), o), bufErrs("LSE", p0.LSELen(), lse)[1:],
			maskErrs("bias", setBias), maskErrs("keep", setKeep), halfLSE, halfKeep,
		)},
		{"Scores", s.caps.Staged, func(ctx context.Context, e *errEnv) error {
			return s.be.Scores(ctx, backend.ScoresParams{Problem: e.p, Bias: e.bias, Keep: e.keep}, e.q, e.k, e.sc)
		}, join(problemErrs(),
			bufErrs("Q", p0.QLen(), q), bufErrs("K", p0.KLen(), k), bufErrs("scores", p0.ScoresLen(), sc),
			maskErrs("bias", setBias), halfScores, halfKeep,
		)},
		{"Softmax", s.caps.Staged, func(ctx context.Context, e *errEnv) error {
			return s.be.Softmax(ctx, backend.SoftmaxParams{Problem: e.p, Keep: e.keep, LSE: e.lse}, e.sc)
		}, join(
			withEach(problemErrs(), withLSE),
			bufErrs("scores", p0.ScoresLen(), sc), bufErrs("LSE", p0.LSELen(), lse)[1:],
			maskErrs("keep", setKeep), halfScores, halfLSE, halfKeep,
		)},
		{"Context", s.caps.Staged, func(ctx context.Context, e *errEnv) error {
			return s.be.Context(ctx, backend.ContextParams{Problem: e.p}, e.sc, e.v, e.o)
		}, join(problemErrs(),
			bufErrs("weights", p0.ScoresLen(), sc), bufErrs("V", p0.VLen(), v), bufErrs("O", p0.OLen(), o),
			half("weights", func(e *errEnv, t backend.DType) { e.sc = e.bufOf(e.s.be, t, "weights", p0.ScoresLen()) }),
		)},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			if !op.needs {
				t.Skip("backend does not claim it")
			}
			for _, ec := range op.cases {
				t.Run(ec.name, func(t *testing.T) {
					e := &errEnv{t: t, s: s, other: other, p: p0}
					e.q = e.buf(s.be, "Q", p0.QLen())
					e.k = e.buf(s.be, "K", p0.KLen())
					e.v = e.buf(s.be, "V", p0.VLen())
					e.o = e.buf(s.be, "O", p0.OLen())
					e.sc = e.buf(s.be, "scores", p0.ScoresLen())
					ec.edit(e)
					err := guard(func() error { return op.call(context.Background(), e) })
					var pe *panicError
					switch {
					case errors.As(err, &pe):
						t.Errorf("%s with %s: %v", op.name, ec.name, err)
					case err == nil:
						t.Errorf("%s with %s: no error, want one wrapping %v", op.name, ec.name, ec.want)
					case !errors.Is(err, ec.want):
						t.Errorf("%s with %s: error %q does not wrap %v", op.name, ec.name, err, ec.want)
					}
					if err := e.unchanged(); err != nil {
						t.Error(err)
					}
				})
			}
		})
	}
}

// withEach runs before ahead of each case's own edit.
func withEach(cases []errCase, before func(e *errEnv)) []errCase {
	out := make([]errCase, len(cases))
	for i, c := range cases {
		out[i] = c
		out[i].edit = func(e *errEnv) { before(e); c.edit(e) }
	}
	return out
}

// testClosed checks that a closed backend refuses every call with
// ErrReleased.
func (s *suite) testClosed(t *testing.T) {
	be := s.open(t)
	if be == nil {
		t.Fatal("open returned a nil Backend")
	}
	p := prob(1, 1, 1, 2, 3, 4, 4)
	bufs := make([]backend.Buffer, 4)
	for i, n := range []int{p.QLen(), p.KLen(), p.VLen(), p.OLen()} {
		var err error
		if bufs[i], err = be.Alloc(backend.Float32, n); err != nil {
			be.Close()
			t.Fatalf("Alloc(%d): %v", n, err)
		}
	}
	if err := guard(be.Close); err != nil {
		t.Fatalf("Close: %v", err)
	}
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, backend.ErrReleased) {
			t.Errorf("%s after Close: got %v, want an error wrapping %v", what, err, backend.ErrReleased)
		}
	}
	check("Alloc", guard(func() error { _, err := be.Alloc(backend.Float32, 4); return err }))
	check("Write", guard(func() error { return be.Write(bufs[0], 0, []float32{1}) }))
	check("Read", guard(func() error { return be.Read(make([]float32, 1), bufs[0], 0) }))
	check("WriteBits", guard(func() error { return be.WriteBits(bufs[0], 0, []uint16{1}) }))
	check("ReadBits", guard(func() error { return be.ReadBits(make([]uint16, 1), bufs[0], 0) }))
	if s.caps.Half {
		check("Alloc(f16)", guard(func() error { _, err := be.Alloc(backend.Float16, 4); return err }))
	}
	if s.caps.Fused {
		check("Fused", guard(func() error {
			return be.Fused(context.Background(), backend.FusedParams{Problem: p}, bufs[0], bufs[1], bufs[2], bufs[3], nil)
		}))
	}
	if s.caps.Staged {
		check("Context", guard(func() error {
			return be.Context(context.Background(), backend.ContextParams{Problem: prob(1, 1, 1, 1, 1, 1, 1)}, bufs[0], bufs[1], bufs[2])
		}))
	}
}

// testCancel checks that every op returns the context's error when called
// with a cancelled context.
func (s *suite) testCancel(t *testing.T) {
	p := prob(1, 1, 1, 512, 512, 64, 64)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e := &errEnv{t: t, s: s, p: p}
	q := e.buf(s.be, "Q", p.QLen())
	k := e.buf(s.be, "K", p.KLen())
	v := e.buf(s.be, "V", p.VLen())
	o := e.buf(s.be, "O", p.OLen())
	sc := e.buf(s.be, "scores", p.ScoresLen())
	check := func(op string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Errorf("%s with a cancelled context: got %v, want an error wrapping %v", op, err, context.Canceled)
		}
	}
	if s.caps.Fused {
		check("Fused", guard(func() error { return s.be.Fused(ctx, backend.FusedParams{Problem: p}, q, k, v, o, nil) }))
	}
	if s.caps.Staged {
		check("Scores", guard(func() error { return s.be.Scores(ctx, backend.ScoresParams{Problem: p}, q, k, sc) }))
		check("Softmax", guard(func() error { return s.be.Softmax(ctx, backend.SoftmaxParams{Problem: p}, sc) }))
		check("Context", guard(func() error { return s.be.Context(ctx, backend.ContextParams{Problem: p}, sc, v, o) }))
	}
}

// supported strips from sp what the backend does not claim, for the tests
// that need some case rather than a particular one.
func (s *suite) supported(sp spec) spec {
	if !s.caps.BNHD {
		sp.p.Layout = backend.BHND
	}
	if !s.caps.Causal {
		sp.p.Causal = false
	}
	if !s.caps.GQA {
		sp.p.KVHeads = sp.p.H
	}
	if !s.caps.Bias {
		sp.bias = nil
	}
	if !s.caps.KeepMask {
		sp.keep = nil
	}
	return sp
}

// testConcurrent runs different cases from 8 goroutines on one backend at
// once.
func (s *suite) testConcurrent(t *testing.T) {
	const workers, rounds = 8, 3
	dims := [][2]int{{16, 16}, {40, 24}, {64, 64}, {3, 5}}
	var wg sync.WaitGroup
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				n := g*rounds + r
				d := dims[n%len(dims)]
				p := prob(1+n%2, 4, []int{1, 2, 4}[n%3], 20+7*n, 40+5*n, d[0], d[1])
				if n%2 == 1 {
					p = bnhd(p)
				}
				p.Causal = n%3 == 1
				sp := spec{p: p}
				if n%3 == 0 {
					sp.bias = shape(p.B, 1, p.Nq, p.Nk)
				}
				if n%4 == 1 {
					sp.keep = shape(p.B, 1, 1, p.Nk)
				}
				c := s.supported(sp).build()
				if s.caps.Fused {
					if err := RunFused(context.Background(), s.be, c, s.caps.LSE); err != nil {
						t.Errorf("goroutine %d: %v", g, err)
					}
				}
				if s.caps.Staged {
					if err := RunStaged(context.Background(), s.be, c, s.caps.LSE); err != nil {
						t.Errorf("goroutine %d: %v", g, err)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// testDeterministic runs the same case twice and wants bitwise identical
// results, in float32 and, with Caps.Half, in mixed half dtypes.
func (s *suite) testDeterministic(t *testing.T) {
	p := causal(prob(2, 4, 2, 129, 200, 64, 64))
	sp := s.supported(spec{p: p, bias: shape(2, 1, 129, 200), keep: shape(1, 1, 1, 200)})
	cases := []Case{sp.build()}
	if s.caps.Half {
		sp.dt = DTypes{f16, bf16, f16, bf16, f16}
		cases = append(cases, sp.build())
	}
	for _, c := range cases {
		s.deterministic(t, c)
	}
}

// deterministic runs c twice through each strategy.
func (s *suite) deterministic(t *testing.T, c Case) {
	ctx := context.Background()
	same := func(what string, a, b result) {
		for _, x := range []struct {
			name string
			a, b []float32
		}{{"scores", a.S, b.S}, {"weights", a.P, b.P}, {"O", a.O, b.O}, {"LSE", a.LSE, b.LSE}} {
			if i := firstDiff(x.a, x.b); i >= 0 {
				t.Errorf("%s: %s differs between two runs at element %d: %v then %v", what, x.name, i, x.a[i], x.b[i])
			}
		}
	}
	for _, strat := range []struct {
		name string
		has  bool
		exec func(context.Context, backend.Backend, Case, bool) (result, error)
	}{{"fused", s.caps.Fused, execFused}, {"staged", s.caps.Staged, execStaged}} {
		if !strat.has {
			continue
		}
		a, err := strat.exec(ctx, s.be, c, s.caps.LSE)
		if err != nil {
			t.Fatalf("%s %v: %v", strat.name, c, err)
		}
		b, err := strat.exec(ctx, s.be, c, s.caps.LSE)
		if err != nil {
			t.Fatalf("%s %v: %v", strat.name, c, err)
		}
		same(strat.name, a, b)
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
			spec{p: withV(causal(prob(2, 4, 2, 2, 130, 32, 32)), func(v *backend.Variants) {
				v.Window = win(40, 0)
				v.Softcap = 5
				v.ALiBi = []float32{0.5, 0.25, 0.125, 0.0625}
				v.Sinks = []float32{0, 1, -1, 3}
				v.KVLens = []int{130, 77}
			}), dt: dt},
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
