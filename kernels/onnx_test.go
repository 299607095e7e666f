package kernels_test

// ONNX's node tests of its Attention operator (testdata/onnx, see its
// README), run through kernels.Attention on every backend this build has.
// Each case's model.onnx gives the node's attributes, its
// test_data_set_0 the inputs and ONNX's expected outputs, computed by
// onnx/reference/ops/op_attention.py.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/backend/backendtest"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
)

const onnxDir = "testdata/onnx"

// The roles of the Attention node's inputs and outputs, by position.
var (
	onnxInputRoles  = []string{"Q", "K", "V", "attn_mask", "past_key", "past_value", "nonpad_kv_seqlen"}
	onnxOutputRoles = []string{"Y", "present_key", "present_value", "qk_matmul_output"}
)

// The node's int attributes mapONNX reads; its float ones are scale and
// softcap.
var onnxIntAttrs = []string{"is_causal", "q_num_heads", "kv_num_heads", "qk_matmul_output_mode", "softmax_precision"}

// onnxBackends are the backends the cases run on: the CPU always, the GPU
// where the build has it (onnx_gpu_test.go).
var onnxBackends = []struct {
	name string
	open func(testing.TB) backend.Backend
}{{"cpu", openCPU}}

// onnxCase is one vendored node test.
type onnxCase struct {
	name    string
	model   *onnxModel
	in, out map[string]*onnxTensor // by role
}

func loadONNXCase(dir string) (*onnxCase, error) {
	b, err := os.ReadFile(filepath.Join(dir, "model.onnx"))
	if err != nil {
		return nil, err
	}
	m, err := parseONNXModel(b)
	if err != nil {
		return nil, err
	}
	if m.opType != "Attention" {
		return nil, fmt.Errorf("node is %q, want Attention", m.opType)
	}
	c := &onnxCase{name: filepath.Base(dir), model: m, in: map[string]*onnxTensor{}, out: map[string]*onnxTensor{}}
	for _, side := range []struct {
		prefix      string
		graph, node []string
		roles       []string
		into        map[string]*onnxTensor
	}{
		{"input", m.graphIn, m.nodeInputs, onnxInputRoles, c.in},
		{"output", m.graphOut, m.nodeOutputs, onnxOutputRoles, c.out},
	} {
		for i, name := range side.graph {
			pos := slices.Index(side.node, name)
			if pos < 0 || pos >= len(side.roles) {
				return nil, fmt.Errorf("graph %s %q is not among the node's %ss %q", side.prefix, name, side.prefix, side.node)
			}
			b, err := os.ReadFile(filepath.Join(dir, "test_data_set_0", fmt.Sprintf("%s_%d.pb", side.prefix, i)))
			if err != nil {
				return nil, err
			}
			t, err := parseONNXTensor(b)
			if err != nil {
				return nil, fmt.Errorf("%s_%d.pb: %w", side.prefix, i, err)
			}
			side.into[side.roles[pos]] = t
		}
	}
	if c.in["Q"] == nil || c.in["K"] == nil || c.in["V"] == nil || c.out["Y"] == nil {
		return nil, fmt.Errorf("missing Q, K, V or Y")
	}
	return c, nil
}

// onnxAttention is a case mapped onto kernels.Attention.
type onnxAttention struct {
	// k and v are the keys and values attention reads: with a cache,
	// past and new together (ONNX's present_key and present_value).
	q, k, v *kernels.Tensor
	opts    kernels.Options
	mode    int64 // qk_matmul_output_mode when the case has that output, else -1
}

// mapONNX maps a case's node onto kernels.Attention:
//
//	Q, K, V 4D [B, H, N, D]      BHND as they are
//	Q, K, V 3D [B, N, H·D]       BNHD [B, N, H, D], H from q_num_heads
//	                             and kv_num_heads (a free view)
//	scale                        Scale (absent: 0, meaning 1/√D)
//	softcap > 0                  Softcap
//	float attn_mask              Bias, padded to Nk with −Inf
//	bool attn_mask               Mask, padded to Nk with false
//	past_key, past_value         [B, KVH, P, D] whatever Q's rank: K and V
//	                             become kernels.ConcatSeq(past, K) (in K's
//	                             layout), ONNX's present_key and
//	                             present_value
//	nonpad_kv_seqlen             KVLens
//	is_causal with a past        Causal, CausalOffset = P: query i at key P + i
//	is_causal, no past or nonpad Causal, CausalOffset = 0 (top-left)
//	is_causal with nonpad        Causal, aligned at KVLens[b] − Nq
//	qk_matmul_output mode 0/1/2  Scores at StageRaw/StageCapped/StageMasked
//	qk_matmul_output mode 3      Weights
//
// softmax_precision may be absent or FLOAT, the precision attn's softmax
// has. An attribute or input this table lacks is an error, so a newly
// vendored case cannot pass by being half read.
func mapONNX(c *onnxCase) (*onnxAttention, error) {
	m := c.model
	a := &onnxAttention{mode: -1}
	qt, kt, vt := c.in["Q"], c.in["K"], c.in["V"]
	for _, t := range []*onnxTensor{qt, kt, vt} {
		if t.dtype != onnxFloat && t.dtype != onnxFloat16 {
			return nil, fmt.Errorf("%s has data type %d, want FLOAT or FLOAT16", t.name, t.dtype)
		}
	}
	// tensor is t as a kernels.Tensor of the given shape and layout, in
	// t's dtype: a float16 input stays float16 (its bits).
	tensor := func(t *onnxTensor, shape []int, layout kernels.Layout) *kernels.Tensor {
		if t.dtype == onnxFloat16 {
			return &kernels.Tensor{Shape: shape, Layout: layout, DType: kernels.Float16, Bits: t.F16}
		}
		return &kernels.Tensor{Shape: shape, Layout: layout, Data: t.F32}
	}
	var nk int
	switch len(qt.dims) {
	case 4:
		a.q = tensor(qt, qt.dims, kernels.BHND)
		a.k = tensor(kt, kt.dims, kernels.BHND)
		a.v = tensor(vt, vt.dims, kernels.BHND)
		nk = kt.dims[2]
	case 3:
		hq, okq := m.ints["q_num_heads"]
		hk, okk := m.ints["kv_num_heads"]
		if !okq || !okk {
			return nil, fmt.Errorf("3D inputs without q_num_heads and kv_num_heads")
		}
		split := func(t *onnxTensor, heads int64) (*kernels.Tensor, error) {
			if len(t.dims) != 3 || heads < 1 || int64(t.dims[2])%heads != 0 {
				return nil, fmt.Errorf("%s of dims %v does not split into %d heads", t.name, t.dims, heads)
			}
			h := int(heads)
			return tensor(t, []int{t.dims[0], t.dims[1], h, t.dims[2] / h}, kernels.BNHD), nil
		}
		var err error
		if a.q, err = split(qt, hq); err != nil {
			return nil, err
		}
		if a.k, err = split(kt, hk); err != nil {
			return nil, err
		}
		if a.v, err = split(vt, hk); err != nil {
			return nil, err
		}
		nk = kt.dims[1]
	default:
		return nil, fmt.Errorf("Q has dims %v, want rank 3 or 4", qt.dims)
	}
	// ONNX's cache is [B, KVH, P, D] for 3D inputs too: ConcatSeq reads
	// it as BHND and appends K's rows in K's layout.
	past := -1
	pk, pv := c.in["past_key"], c.in["past_value"]
	if (pk == nil) != (pv == nil) {
		return nil, fmt.Errorf("past_key and past_value come together")
	}
	if pk != nil {
		for _, t := range []*onnxTensor{pk, pv} {
			if len(t.dims) != 4 || t.dtype != kt.dtype {
				return nil, fmt.Errorf("%s of dims %v and data type %d: want [B, KVH, P, D] of K's data type %d", t.name, t.dims, t.dtype, kt.dtype)
			}
		}
		var err error
		if a.k, err = kernels.ConcatSeq(tensor(pk, pk.dims, kernels.BHND), a.k); err != nil {
			return nil, fmt.Errorf("present_key: %w", err)
		}
		if a.v, err = kernels.ConcatSeq(tensor(pv, pv.dims, kernels.BHND), a.v); err != nil {
			return nil, fmt.Errorf("present_value: %w", err)
		}
		past = pk.dims[2]
		nk += past
	}

	for name := range m.ints {
		if !slices.Contains(onnxIntAttrs, name) {
			return nil, fmt.Errorf("int attribute %s=%d is not mapped", name, m.ints[name])
		}
	}
	for name := range m.floats {
		if name != "scale" && name != "softcap" {
			return nil, fmt.Errorf("float attribute %s=%v is not mapped", name, m.floats[name])
		}
	}
	if p, ok := m.ints["softmax_precision"]; ok && p != onnxFloat {
		return nil, fmt.Errorf("softmax_precision %d: attn's softmax is float32 (FLOAT, 1)", p)
	}
	o := &a.opts
	if s, ok := m.floats["scale"]; ok {
		o.Scale = float64(s)
	}
	if s := m.floats["softcap"]; s > 0 {
		o.Softcap = float64(s)
	}
	if t := c.in["nonpad_kv_seqlen"]; t != nil {
		for _, n := range t.I64 {
			o.KVLens = append(o.KVLens, int(n))
		}
	}
	if m.ints["is_causal"] != 0 {
		switch {
		case past >= 0:
			o.Causal, o.CausalOffset = true, &past
		case o.KVLens != nil:
			o.Causal = true
		default:
			o.Causal, o.CausalOffset = true, new(int)
		}
	}
	if t := c.in["attn_mask"]; t != nil {
		if len(t.dims) == 0 || t.dims[len(t.dims)-1] > nk {
			return nil, fmt.Errorf("attn_mask of dims %v for %d keys", t.dims, nk)
		}
		shape := slices.Clone(t.dims)
		shape[len(shape)-1] = nk
		switch t.dtype {
		case onnxFloat, onnxFloat16:
			o.Bias = &kernels.Tensor{Shape: shape, Data: padLast(t.floats(), t.dims, nk, float32(math.Inf(-1)))}
		case onnxBool:
			o.Mask = &kernels.Mask{Shape: shape, Keep: padLast(t.Bool, t.dims, nk, false)}
		default:
			return nil, fmt.Errorf("attn_mask has data type %d, want FLOAT or BOOL", t.dtype)
		}
	}
	if y := c.out["qk_matmul_output"]; y != nil {
		a.mode = m.ints["qk_matmul_output_mode"]
		switch a.mode {
		case 0:
			o.Scores, o.ScoresStage = true, kernels.StageRaw
		case 1:
			o.Scores, o.ScoresStage = true, kernels.StageCapped
		case 2:
			o.Scores, o.ScoresStage = true, kernels.StageMasked
		case 3:
			o.Weights = true
		default:
			return nil, fmt.Errorf("qk_matmul_output_mode %d", a.mode)
		}
	}
	return a, nil
}

// padLast pads the last dimension of a row-major tensor of the given dims
// to n with fill: ONNX lets attn_mask cover fewer keys than K has, the
// missing ones hidden.
func padLast[T any](data []T, dims []int, n int, fill T) []T {
	last := dims[len(dims)-1]
	if last == n {
		return data
	}
	rows := len(data) / max(last, 1)
	out := make([]T, 0, rows*n)
	for r := range rows {
		out = append(out, data[r*last:(r+1)*last]...)
		for range n - last {
			out = append(out, fill)
		}
	}
	return out
}

// needsVariants reports whether the call uses what Caps.Variants covers:
// a variant or a score stage other than the biased one.
func (a *onnxAttention) needsVariants() bool {
	o := &a.opts
	variants := o.CausalOffset != nil || o.Window != nil || o.Softcap != 0 || o.ALiBi != nil || o.Sinks != nil || o.KVLens != nil
	return variants || o.Scores && o.ScoresStage != kernels.StageBiased
}

// onnxCompare compares got with ONNX's want row by row (rows of n values),
// by backendtest's rule: |got − want| ≤ Tol·max(1, max |want| over the
// row, infinities skipped); an infinity must match exactly and NaN never
// passes. A row ONNX makes all zeros (a query that sees no key) must be
// exactly zero, and where exactZeros is set so must every zero (a masked
// key's weight).
func onnxCompare(what string, got, want []float32, n int, exactZeros bool, tol float64) error {
	if len(got) != len(want) {
		return fmt.Errorf("%s: %d values, want %d", what, len(got), len(want))
	}
	var errs []error
	worst, worstAt := 0.0, -1
	for r := 0; r*n < len(want); r++ {
		row, grow := want[r*n:(r+1)*n], got[r*n:(r+1)*n]
		scale, allZero := 1.0, true
		for _, w := range row {
			if w != 0 {
				allZero = false
			}
			if !math.IsInf(float64(w), 0) {
				scale = max(scale, math.Abs(float64(w)))
			}
		}
		for j, w := range row {
			g := grow[j]
			i := r*n + j
			switch {
			case math.IsNaN(float64(g)) || math.IsNaN(float64(w)):
				errs = append(errs, fmt.Errorf("%s[%d]: got %v, want %v", what, i, g, w))
			case math.IsInf(float64(w), 0) || math.IsInf(float64(g), 0):
				if g != w {
					errs = append(errs, fmt.Errorf("%s[%d]: got %v, want %v", what, i, g, w))
				}
			case w == 0 && (allZero || exactZeros):
				if g != 0 {
					errs = append(errs, fmt.Errorf("%s[%d]: got %v, want exactly 0", what, i, g))
				}
			default:
				d := math.Abs(float64(g)-float64(w)) / scale
				if d > worst {
					worst, worstAt = d, i
				}
				if backendtest.Exceeds(d, tol) {
					errs = append(errs, fmt.Errorf("%s[%d]: got %v, want %v (error %.3g of the row's scale %.3g, tolerance %g)", what, i, g, w, d, scale, tol))
				}
			}
		}
	}
	if len(errs) > 3 {
		errs = append(errs[:3], fmt.Errorf("%s: %d more mismatches (worst relative error %.3g at %d)", what, len(errs)-3, worst, worstAt))
	}
	return errors.Join(errs...)
}

// runONNX runs a mapped case on be with one strategy and compares what it
// returns with ONNX's outputs; it also checks that the inputs are
// unchanged.
func runONNX(ctx context.Context, be backend.Backend, c *onnxCase, a *onnxAttention, s kernels.Strategy) error {
	opts := a.opts
	opts.Strategy = s
	q0, k0, v0 := clone(a.q), clone(a.k), clone(a.v)
	res, err := kernels.Attention(ctx, be, a.q, a.k, a.v, &opts)
	if err != nil {
		return err
	}
	if !same(q0, a.q) || !same(k0, a.k) || !same(v0, a.v) {
		return fmt.Errorf("Attention modified Q, K or V")
	}
	y := c.out["Y"]
	dv := res.Out.Shape[len(res.Out.Shape)-1]
	// A float16 Y is compared at float16's precision: ONNX's expected
	// values and attn's are each rounded to float16, half a unit (2⁻¹¹ of
	// a value near 1) apiece; 2⁻¹⁰ of the row's scale covers both. The
	// two cases that run agree within 2⁻¹² (measured).
	tol := backendtest.Tol
	if y.dtype == onnxFloat16 {
		tol = 0x1p-10
	}
	if res.Out.DType != a.q.DType {
		return fmt.Errorf("Y is %v, want the query's %v", res.Out.DType, a.q.DType)
	}
	errs := []error{onnxCompare("Y", res.Out.Float32s(), y.floats(), dv, false, tol)}
	if qk := c.out["qk_matmul_output"]; qk != nil {
		got := res.Scores
		if a.opts.Weights {
			got = res.Weights
		}
		if got == nil {
			return fmt.Errorf("no scores or weights returned for qk_matmul_output_mode %d", a.mode)
		}
		// ONNX's qk_matmul_output has the query's type (T1), as Y has.
		wantDT := kernels.Float32
		if qk.dtype == onnxFloat16 {
			wantDT = kernels.Float16
		}
		switch {
		case !slices.Equal(got.Shape, qk.dims):
			errs = append(errs, fmt.Errorf("qk_matmul_output: shape %v, want %v", got.Shape, qk.dims))
		case got.DType != wantDT:
			errs = append(errs, fmt.Errorf("qk_matmul_output (mode %d): %v, want ONNX's %v", a.mode, got.DType, wantDT))
		default:
			what := fmt.Sprintf("qk_matmul_output (mode %d)", a.mode)
			errs = append(errs, onnxCompare(what, got.Float32s(), qk.floats(), qk.dims[len(qk.dims)-1], a.opts.Weights, tol))
		}
	}
	for _, p := range []struct {
		role string
		got  *kernels.Tensor
	}{{"present_key", a.k}, {"present_value", a.v}} {
		if want := c.out[p.role]; want != nil {
			errs = append(errs, samePresent(p.role, p.got, want))
		}
	}
	return errors.Join(errs...)
}

// samePresent compares the keys or values attention read with ONNX's
// present_key or present_value, [B, KVH, P + N, D]: a concatenation is
// exact, so every stored bit must match.
func samePresent(role string, got *kernels.Tensor, want *onnxTensor) error {
	got = toBHND(got)
	if !slices.Equal(got.Shape, want.dims) {
		return fmt.Errorf("%s: shape %v, want %v", role, got.Shape, want.dims)
	}
	if want.dtype == onnxFloat16 {
		if got.DType != kernels.Float16 || !slices.Equal(got.Bits, want.F16) {
			return fmt.Errorf("%s: %v values differ from ONNX's float16 ones", role, got.DType)
		}
		return nil
	}
	for i, w := range want.F32 {
		if math.Float32bits(got.Data[i]) != math.Float32bits(w) {
			return fmt.Errorf("%s[%d]: got %v, want %v", role, i, got.Data[i], w)
		}
	}
	return nil
}

// toBHND is a rank-4 tensor in BHND, [B, H, N, D]: t itself, or a
// transposed copy of a BNHD one.
func toBHND(t *kernels.Tensor) *kernels.Tensor {
	if t.Layout == kernels.BHND {
		return t
	}
	b, h, n, d := operand.Dims(t.Shape, t.Layout)
	out := &kernels.Tensor{Shape: []int{b, h, n, d}, DType: t.DType}
	if t.DType.Half() {
		out.Bits = make([]uint16, len(t.Bits))
	} else {
		out.Data = make([]float32, len(t.Data))
	}
	for bi := range b {
		for i := range n {
			for hi := range h {
				from, to := ((bi*n+i)*h+hi)*d, ((bi*h+hi)*n+i)*d
				if t.DType.Half() {
					copy(out.Bits[to:to+d], t.Bits[from:from+d])
				} else {
					copy(out.Data[to:to+d], t.Data[from:from+d])
				}
			}
		}
	}
	return out
}

// clone and same keep a tensor's data, either slice, to check that it
// was not modified.
func clone(t *kernels.Tensor) *kernels.Tensor {
	return &kernels.Tensor{Data: slices.Clone(t.Data), Bits: slices.Clone(t.Bits)}
}

func same(a, b *kernels.Tensor) bool {
	return slices.Equal(a.Data, b.Data) && slices.Equal(a.Bits, b.Bits)
}

func loadONNXCases(t *testing.T) []*onnxCase {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join(onnxDir, "test_attention*"))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatalf("no cases under %s", onnxDir)
	}
	var cases []*onnxCase
	for _, d := range dirs {
		c, err := loadONNXCase(d)
		if err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		cases = append(cases, c)
	}
	return cases
}

// TestONNXAttention runs every vendored ONNX node test of Attention on
// each backend (float16 ones in float16; a cache's present_key and
// present_value checked bit for bit), with both
// strategies where the case allows (scores and weights exist only on the
// staged path). A backend without Caps.Variants skips the cases that need
// them.
func TestONNXAttention(t *testing.T) {
	cases := loadONNXCases(t)
	for _, bk := range onnxBackends {
		t.Run(bk.name, func(t *testing.T) {
			be := bk.open(t)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					a, err := mapONNX(c)
					if err != nil {
						t.Fatal(err)
					}
					if !be.Caps().Variants && a.needsVariants() {
						t.Skipf("needs variants or a score stage (%s), which this backend does not claim (Caps.Variants is false)", onnxVariantsUsed(a))
					}
					strategies := []kernels.Strategy{kernels.Staged, kernels.Fused}
					if a.opts.Scores || a.opts.Weights {
						strategies = strategies[:1]
					}
					for _, s := range strategies {
						if err := runONNX(t.Context(), be, c, a, s); err != nil {
							t.Errorf("%v: %v", s, err)
						}
					}
				})
			}
		})
	}
}

// onnxVariantsUsed names what a.needsVariants found, for the skip message.
func onnxVariantsUsed(a *onnxAttention) string {
	var v []string
	o := a.opts
	if o.CausalOffset != nil {
		v = append(v, fmt.Sprintf("causal offset %d", *o.CausalOffset))
	}
	if o.Softcap != 0 {
		v = append(v, fmt.Sprintf("softcap %g", o.Softcap))
	}
	if o.KVLens != nil {
		v = append(v, fmt.Sprintf("key lengths %v", o.KVLens))
	}
	if o.Scores && o.ScoresStage != kernels.StageBiased {
		v = append(v, "score stage "+o.ScoresStage.String())
	}
	return strings.Join(v, ", ")
}
