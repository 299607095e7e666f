package shaders

import (
	"fmt"
	"reflect"
)

// The backward pass's kernels (gpu's Backward: attention's gradients by
// FlashAttention-2's method): backdelta.wgsl computes each query row's
// δ = dO·O, backkv.wgsl dK and dV over tiles of keys, backq.wgsl dQ
// over tiles of query rows, backbias.wgsl the bias's gradient an
// element an invocation, each recomputing the probabilities it needs
// from Q, K and the forward's LSE. Each reads Q, K, V, O, dO and the
// bias stored as its Consts' Elems say (halves widened by the loaders);
// what they write is float32. Each binds at most WebGPU's default of 8
// storage buffers: what the call makes for them lies in one, vars (the
// variant data, then each query row's LSE and δ, which backdelta.wgsl
// writes there, then the keep-mask's copy; lib/backvars.wgsl), beside
// the caller's Q, K, V, dO, bias and outputs.
var (
	BackDelta = Kernel{
		Name:   "backdelta",
		Consts: reflect.TypeFor[BackDeltaConsts](),
		Params: reflect.TypeFor[BackDeltaParams](),
		Bindings: []Binding{{"P", Uniform}, {"o", Read}, {"dout", Read}, {"lse", Read}, {"vars", ReadWriteI32},
			{"sink", ReadWrite}},
		Entries: []string{"main"},
		Include: []string{"neginf", "vars", "seqs", "backvars"},
	}
	BackKV = Kernel{
		Name:     "backkv",
		Consts:   reflect.TypeFor[BackKVConsts](),
		Params:   reflect.TypeFor[BackKVParams](),
		Bindings: backBindings("dk", "dv"),
		Entries:  []string{"main"},
		Include:  []string{"neginf", "vars", "scoremod", "seqs", "blocks", "backload", "backvars"},
		Template: true,
	}
	BackQ = Kernel{
		Name:     "backq",
		Consts:   reflect.TypeFor[BackQConsts](),
		Params:   reflect.TypeFor[BackQParams](),
		Bindings: backBindings("dq"),
		Entries:  []string{"main"},
		Include:  []string{"neginf", "vars", "scoremod", "seqs", "blocks", "backload", "backvars"},
		Template: true,
	}
	BackBias = Kernel{
		Name:     "backbias",
		Consts:   reflect.TypeFor[BackBiasConsts](),
		Params:   reflect.TypeFor[BackBiasParams](),
		Bindings: backBindings("dbias"),
		Entries:  []string{"main"},
		Include:  []string{"neginf", "vars", "scoremod", "seqs", "blocks", "backvars"},
		Template: true,
	}
)

// backBindings are the bindings of backkv, backq and backbias: the
// Params, the inputs all three read (vars holding the LSE, δ and the
// keep-mask), then outs, written.
func backBindings(outs ...string) []Binding {
	b := []Binding{{"P", Uniform}, {"q", Read}, {"k", Read}, {"v", Read}, {"dout", Read},
		{"bias", Read}, {"vars", ReadI32}}
	for _, o := range outs {
		b = append(b, Binding{o, ReadWrite})
	}
	return b
}

// BackDeltaConsts specialises backdelta.wgsl: WG invocations a
// workgroup, one query row each, of value head dim DV; O and Dout are
// how O and dO are stored.
type BackDeltaConsts struct {
	WG, DV  int
	O, Dout Elem
	F16     bool // mode: float16 operands bound as f16 arrays (see modes)
}

// BackKVConsts specialises backkv.wgsl: WG invocations a workgroup, L
// a key (1, or under SG a power of two dividing ⌈D/4⌉ and ⌈DV/4⌉),
// staging TQ query rows at a time in workgroup memory, head dims D and
// DV (D4 = ⌈D/4⌉, DV4 = ⌈DV/4⌉, QS = TQ·D4, GS = TQ·DV4, NK = WG/L keys
// a workgroup, CK = D4/L and CV = DV4/L are derived); Q, K, V, Dout and
// Bias are how those operands are stored.
type BackKVConsts struct {
	WG, TQ, D, DV       int
	L                   int
	Q, K, V, Dout, Bias Elem
	F16                 bool // mode: float16 operands bound as f16 arrays (see modes)
	// SG is a mode: a key's L lanes sum their shares of a row's products
	// by subgroup shuffles.
	SG bool
}

// BackQConsts specialises backq.wgsl: WG invocations a workgroup, L a
// query row (as BackKVConsts' L a key), staging TK keys at a time in
// workgroup memory, head dims D and DV (D4, DV4, KS = TK·D4, VS =
// TK·DV4, NR = WG/L rows a workgroup, CK and CV derived); the operands'
// storage as in BackKVConsts.
type BackQConsts struct {
	WG, TK, D, DV       int
	L                   int
	Q, K, V, Dout, Bias Elem
	F16                 bool // mode: float16 operands bound as f16 arrays (see modes)
	// SG is a mode: a row's L lanes sum their shares of its products by
	// subgroup shuffles.
	SG bool
}

// BackBiasConsts specialises backbias.wgsl: WG invocations a workgroup,
// one element of dBias each, head dims D and DV (D4, DV4 derived); the
// operands' storage as in BackKVConsts.
type BackBiasConsts struct {
	WG, D, DV           int
	Q, K, V, Dout, Bias Elem
	F16                 bool // mode: float16 operands bound as f16 arrays (see modes)
}

func (BackDeltaConsts) Kernel() *Kernel { return &BackDelta }
func (BackKVConsts) Kernel() *Kernel    { return &BackKV }
func (BackQConsts) Kernel() *Kernel     { return &BackQ }
func (BackBiasConsts) Kernel() *Kernel  { return &BackBias }

func (BackDeltaConsts) derived() []Const { return nil }
func (c BackKVConsts) derived() []Const {
	l := max(c.L, 1)
	return []Const{{"D4", ceil4(c.D)}, {"DV4", ceil4(c.DV)}, {"QS", c.TQ * ceil4(c.D)}, {"GS", c.TQ * ceil4(c.DV)},
		{"NK", max(1, c.WG/l)}, {"CK", max(1, ceil4(c.D)/l)}, {"CV", max(1, ceil4(c.DV)/l)}}
}
func (c BackQConsts) derived() []Const {
	l := max(c.L, 1)
	return []Const{{"D4", ceil4(c.D)}, {"DV4", ceil4(c.DV)}, {"KS", c.TK * ceil4(c.D)}, {"VS", c.TK * ceil4(c.DV)},
		{"NR", max(1, c.WG/l)}, {"CK", max(1, ceil4(c.D)/l)}, {"CV", max(1, ceil4(c.DV)/l)}}
}
func (c BackBiasConsts) derived() []Const {
	return []Const{{"D4", ceil4(c.D)}, {"DV4", ceil4(c.DV)}}
}

func (BackDeltaConsts) check() error { return nil }
func (c BackKVConsts) check() error  { return checkBackLanes(c.L, c.D, c.DV, c.WG, c.SG) }
func (c BackQConsts) check() error   { return checkBackLanes(c.L, c.D, c.DV, c.WG, c.SG) }
func (BackBiasConsts) check() error  { return nil }

// checkBackLanes refuses l lanes sharing a backward kernel's key or row
// unless l is a power of two dividing the head dims' vec4s and wg, with
// subgroups (sg) for more than one.
func checkBackLanes(l, d, dv, wg int, sg bool) error {
	l, d4, dv4 := max(l, 1), ceil4(d), ceil4(dv)
	if l&(l-1) != 0 || d4%l != 0 || dv4%l != 0 || wg%l != 0 || l > 1 && !sg {
		return fmt.Errorf("L = %d lanes: want a power of two dividing D4 = %d, DV4 = %d and WG = %d, and SG for more than one", l, d4, dv4, wg)
	}
	return nil
}

// WorkgroupBytes is the workgroup memory backkv.wgsl declares: the
// staged rows of Q and dO (vec4s), and each row's LSE and δ and key
// range (vec2s).
func (c BackKVConsts) WorkgroupBytes() int {
	return 16*c.TQ*(ceil4(c.D)+ceil4(c.DV)) + 16*c.TQ
}

// WorkgroupBytes is the workgroup memory backq.wgsl declares: the staged
// rows of K and V (vec4s).
func (c BackQConsts) WorkgroupBytes() int {
	return 16 * c.TK * (ceil4(c.D) + ceil4(c.DV))
}

// BackDeltaParams is backdelta.wgsl's Params: the flags (FlagSink:
// write each row's sink term too; FlagPackQ), where the per-sequence
// entries start in vars (lib/seqs.wgsl), the output and its gradient,
// the LSE, where it writes each row's LSE and δ in vars, and the rows'
// sink terms (as the LSE).
type BackDeltaParams struct {
	Unit
	Flags Flag     `wgsl:"flags"`
	Seq   uint32   `wgsl:"seq"`
	O     Tensor   `wgsl:"o"`
	Dout  Tensor   `wgsl:"dout"`
	LSE   Tensor   `wgsl:"lse"`
	LD    VarsRows `wgsl:"ld"`
	Sink  Tensor   `wgsl:"sink"`
}

// VarsRows addresses each query row's LSE and δ, the pair of words the
// backward pass keeps in its vars binding (lib/backvars.wgsl), as x_at,
// x_b, x_h and x_r: row r of head h of batch b from word at + b·b_ +
// h·h_ + r·r_.
type VarsRows struct {
	At uint32 `wgsl:"at"`
	B  uint32 `wgsl:"b"`
	H  uint32 `wgsl:"h"`
	R  uint32 `wgsl:"r"`
}

// VarsMask addresses the keep-mask's copy in the backward pass's vars
// binding as x_at, x_b, x_h, x_r and x_c: element (b, h, i, j) at word
// at + b·b_ + h·h_ + i·r_ + j·c_ (the mask's strides, 0 on a broadcast
// dimension).
type VarsMask struct {
	At uint32 `wgsl:"at"`
	B  uint32 `wgsl:"b"`
	H  uint32 `wgsl:"h"`
	R  uint32 `wgsl:"r"`
	C  uint32 `wgsl:"c"`
}

// BackKVParams is backkv.wgsl's Params: the scale, the softcap and the
// flags of the forward (FlagRange, FlagSoftcap, FlagALiBi, FlagBias,
// FlagKeep, FlagPackQ, FlagPackK, FlagBlocks), hg, the query head of each KV group
// whose rows this dispatch adds to dK and dV (query head kv·G + hg
// reads KV head kv), where the per-sequence entries start in vars, the
// operands, and the block mask (FlagBlocks).
type BackKVParams struct {
	Unit
	Scale           float32  `wgsl:"scale"`
	Softcap         float32  `wgsl:"softcap"`
	Flags           Flag     `wgsl:"flags"`
	HG              uint32   `wgsl:"hg"`
	Seq             uint32   `wgsl:"seq"`
	Q               Tensor   `wgsl:"q"`
	K               Tensor   `wgsl:"k"`
	V               Tensor   `wgsl:"v"`
	Dout            Tensor   `wgsl:"dout"`
	LD              VarsRows `wgsl:"ld"`
	DK              Tensor   `wgsl:"dk"`
	DV              Tensor   `wgsl:"dv"`
	Bias            Mask     `wgsl:"bias"`
	Keep            VarsMask `wgsl:"keep"`
	BlockMaskParams          // the block mask, as FusedParams' (under FlagBlocks)
}

// BackQParams is backq.wgsl's Params: the scale, the softcap and the
// flags of the forward, where the per-sequence entries start in vars,
// the operands, and the block mask (FlagBlocks).
type BackQParams struct {
	Unit
	Scale           float32  `wgsl:"scale"`
	Softcap         float32  `wgsl:"softcap"`
	Flags           Flag     `wgsl:"flags"`
	Seq             uint32   `wgsl:"seq"`
	Q               Tensor   `wgsl:"q"`
	K               Tensor   `wgsl:"k"`
	V               Tensor   `wgsl:"v"`
	Dout            Tensor   `wgsl:"dout"`
	LD              VarsRows `wgsl:"ld"`
	DQ              Tensor   `wgsl:"dq"`
	Bias            Mask     `wgsl:"bias"`
	Keep            VarsMask `wgsl:"keep"`
	BlockMaskParams          // the block mask, as FusedParams' (under FlagBlocks)
}

// BackBiasParams is backbias.wgsl's Params: the scale, the softcap and
// the flags of the forward, where the per-sequence entries start in
// vars, the elements [e0, e1) of dBias this dispatch adds to, the terms
// [u0, u1) of each it adds, dBias's shape [sb, sh, sq, sk], the
// operands, and the block mask (FlagBlocks).
type BackBiasParams struct {
	Unit
	Scale           float32  `wgsl:"scale"`
	Softcap         float32  `wgsl:"softcap"`
	Flags           Flag     `wgsl:"flags"`
	Seq             uint32   `wgsl:"seq"`
	E0              uint32   `wgsl:"e0"`
	E1              uint32   `wgsl:"e1"`
	U0              uint32   `wgsl:"u0"`
	U1              uint32   `wgsl:"u1"`
	SB              uint32   `wgsl:"sb"`
	SH              uint32   `wgsl:"sh"`
	SQ              uint32   `wgsl:"sq"`
	SK              uint32   `wgsl:"sk"`
	Q               Tensor   `wgsl:"q"`
	K               Tensor   `wgsl:"k"`
	V               Tensor   `wgsl:"v"`
	Dout            Tensor   `wgsl:"dout"`
	LD              VarsRows `wgsl:"ld"`
	Bias            Mask     `wgsl:"bias"`
	Keep            VarsMask `wgsl:"keep"`
	DBias           Mask     `wgsl:"dbias"`
	BlockMaskParams          // the block mask, as FusedParams' (under FlagBlocks)
}
