package backendtest

import (
	"context"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
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
	run(t, open, false, nil)
}

// RunKernels is the part of the suite whose answers depend on which
// kernels a backend picks: every section of cases (sizes, head dims,
// masks, variants, far scores, sequences, 8-bit and 4-bit caches, V from
// K, index lists, block masks, the backward pass, half operands), not
// those of buffers, views, wrapped memory, copies, errors, closing,
// cancelling and the concurrency and determinism rounds, which a
// backend's choice of kernels does not change. A backend runs it again
// under each other way it can pick its kernels (the GPU's hardware plan
// on a software adapter, say), after Run. Given section names (Variants,
// FarScores, …: the subtests' names), it runs only those of them.
func RunKernels(t *testing.T, open func(t testing.TB) backend.Backend, sections ...string) {
	run(t, open, true, sections)
}

func run(t *testing.T, open func(t testing.TB) backend.Backend, kernelsOnly bool, only []string) {
	be := openBackend(t, open)
	s := &suite{be: be, caps: be.Caps(), open: open}
	for _, sec := range []struct {
		name    string
		run     func(t *testing.T)
		kernels bool // the answers depend on the kernels picked
	}{
		{"Caps", s.testCaps, false},
		{"Buffers", s.testBuffers, false},
		{"Sizes", func(t *testing.T) { s.cases(t, sizeSpecs()) }, true},
		{"HeadDims", func(t *testing.T) { s.cases(t, headDimSpecs()) }, true},
		{"Scale", func(t *testing.T) { s.cases(t, scaleSpecs()) }, true},
		{"Causal", func(t *testing.T) { s.cases(t, causalSpecs()) }, true},
		{"Heads", func(t *testing.T) { s.cases(t, headSpecs()) }, true},
		{"Layout", func(t *testing.T) { s.cases(t, layoutSpecs()) }, true},
		{"Bias", func(t *testing.T) { s.cases(t, maskSpecs(true, false)) }, true},
		{"Keep", func(t *testing.T) { s.cases(t, maskSpecs(false, true)) }, true},
		{"BiasAndKeep", func(t *testing.T) { s.cases(t, biasAndKeepSpecs()) }, true},
		{"MaskedRows", func(t *testing.T) { s.cases(t, maskedRowSpecs()) }, true},
		{"KeyPadding", func(t *testing.T) { s.cases(t, keyPaddingSpecs()) }, true},
		{"Variants", func(t *testing.T) { s.cases(t, variantSpecs()) }, true},
		{"FarScores", func(t *testing.T) { s.cases(t, farSpecs()) }, true},
		{"Seqs", s.testSeqs, true},
		{"Quant", func(t *testing.T) { s.cases(t, quantSpecs()) }, true},
		{"Quant4", func(t *testing.T) {
			if !s.caps.Quant4 {
				t.Skip("backend does not claim Quant4")
			}
			s.cases(t, quant4Specs())
		}, true},
		{"VFromK", func(t *testing.T) { s.cases(t, vFromKSpecs()) }, true},
		{"Indices", s.testIndices, true},
		{"Blocks", s.testBlocks, true},
		{"Layouts", s.testLayouts, false},
		{"Backward", s.testBackward, true},
		{"HalfBuffers", s.testHalfBuffers, true},
		{"Half", s.testHalf, true},
		{"Views", s.testViews, false},
		{"Wrap", s.testWrap, false},
		{"Copy", s.testCopy, false},
		{"Errors", s.testErrors, false},
		{"Closed", s.testClosed, false},
		{"Cancel", s.testCancel, false},
		{"Concurrent", s.testConcurrent, false},
		{"ConcurrentWrites", s.testConcurrentWrites, false},
		{"Deterministic", s.testDeterministic, false},
	} {
		if (sec.kernels || !kernelsOnly) && (only == nil || slices.Contains(only, sec.name)) {
			t.Run(sec.name, sec.run)
		}
	}
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
	if (dt.K == backend.Q4 || dt.V == backend.Q4) && !s.caps.Quant4 {
		missing = append(missing, "Quant4")
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

var negInf = float32(math.Inf(-1))

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
