package shaders

import "reflect"

// The backward pass's kernels (gpu's Backward: attention's gradients by
// FlashAttention-2's method): backdelta.wgsl computes each query row's
// δ = dO·O, backkv.wgsl dK and dV over tiles of keys, backq.wgsl dQ
// over tiles of query rows, each recomputing the probabilities it needs
// from Q, K and the forward's LSE.
var (
	BackDelta = Kernel{
		Name:   "backdelta",
		Consts: reflect.TypeFor[BackDeltaConsts](),
		Params: reflect.TypeFor[BackDeltaParams](),
		Bindings: []Binding{{"P", Uniform}, {"o", Read}, {"dout", Read}, {"lse", Read}, {"vars", ReadI32},
			{"delta", ReadWrite}, {"sink", ReadWrite}},
		Entries: []string{"main"},
		Include: []string{"neginf", "vars"},
	}
	BackKV = Kernel{
		Name:   "backkv",
		Consts: reflect.TypeFor[BackKVConsts](),
		Params: reflect.TypeFor[BackKVParams](),
		Bindings: []Binding{{"P", Uniform}, {"q", Read}, {"k", Read}, {"v", Read}, {"dout", Read}, {"lse", Read},
			{"delta", Read}, {"vars", ReadI32}, {"dk", ReadWrite}, {"dv", ReadWrite}},
		Entries:  []string{"main"},
		Include:  []string{"neginf", "vars", "scoremod"},
		Template: true,
	}
	BackQ = Kernel{
		Name:   "backq",
		Consts: reflect.TypeFor[BackQConsts](),
		Params: reflect.TypeFor[BackQParams](),
		Bindings: []Binding{{"P", Uniform}, {"q", Read}, {"k", Read}, {"v", Read}, {"dout", Read}, {"lse", Read},
			{"delta", Read}, {"vars", ReadI32}, {"dq", ReadWrite}},
		Entries:  []string{"main"},
		Include:  []string{"neginf", "vars", "scoremod"},
		Template: true,
	}
)

// BackDeltaConsts specialises backdelta.wgsl: WG invocations a
// workgroup, one query row each, of value head dim DV.
type BackDeltaConsts struct{ WG, DV int }

// BackKVConsts specialises backkv.wgsl: WG invocations a workgroup, one
// key each, staging TQ query rows at a time in workgroup memory, head
// dims D and DV (D4 = ⌈D/4⌉, DV4 = ⌈DV/4⌉, QS = TQ·D4 and GS = TQ·DV4
// are derived).
type BackKVConsts struct{ WG, TQ, D, DV int }

// BackQConsts specialises backq.wgsl: WG invocations a workgroup, one
// query row each, staging TK keys at a time in workgroup memory, head
// dims D and DV (D4, DV4, KS = TK·D4 and VS = TK·DV4 derived).
type BackQConsts struct{ WG, TK, D, DV int }

func (BackDeltaConsts) Kernel() *Kernel { return &BackDelta }
func (BackKVConsts) Kernel() *Kernel    { return &BackKV }
func (BackQConsts) Kernel() *Kernel     { return &BackQ }

func (BackDeltaConsts) derived() []Const { return nil }
func (c BackKVConsts) derived() []Const {
	return []Const{{"D4", ceil4(c.D)}, {"DV4", ceil4(c.DV)}, {"QS", c.TQ * ceil4(c.D)}, {"GS", c.TQ * ceil4(c.DV)}}
}
func (c BackQConsts) derived() []Const {
	return []Const{{"D4", ceil4(c.D)}, {"DV4", ceil4(c.DV)}, {"KS", c.TK * ceil4(c.D)}, {"VS", c.TK * ceil4(c.DV)}}
}

func (BackDeltaConsts) check() error { return nil }
func (BackKVConsts) check() error    { return nil }
func (BackQConsts) check() error     { return nil }

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

// BackDeltaParams is backdelta.wgsl's Params: the flags (FlagSink: write
// each row's sink term too), the output and its gradient, the LSE, and
// the rows' δ and sink terms it writes ([B, H, Nq], as the LSE).
type BackDeltaParams struct {
	Unit
	Flags Flag   `wgsl:"flags"`
	O     Tensor `wgsl:"o"`
	Dout  Tensor `wgsl:"dout"`
	LSE   Tensor `wgsl:"lse"`
	Delta Tensor `wgsl:"delta"`
	Sink  Tensor `wgsl:"sink"`
}

// BackKVParams is backkv.wgsl's Params: the scale, the softcap and the
// flags of the forward (FlagRange, FlagSoftcap, FlagALiBi), hg, the
// query head of each KV group whose rows this dispatch adds to dK and dV
// (query head kv·G + hg reads KV head kv), and the operands.
type BackKVParams struct {
	Unit
	Scale   float32 `wgsl:"scale"`
	Softcap float32 `wgsl:"softcap"`
	Flags   Flag    `wgsl:"flags"`
	HG      uint32  `wgsl:"hg"`
	Q       Tensor  `wgsl:"q"`
	K       Tensor  `wgsl:"k"`
	V       Tensor  `wgsl:"v"`
	Dout    Tensor  `wgsl:"dout"`
	LSE     Tensor  `wgsl:"lse"`
	Delta   Tensor  `wgsl:"delta"`
	DK      Tensor  `wgsl:"dk"`
	DV      Tensor  `wgsl:"dv"`
}

// BackQParams is backq.wgsl's Params: the scale, the softcap and the
// flags of the forward, and the operands.
type BackQParams struct {
	Unit
	Scale   float32 `wgsl:"scale"`
	Softcap float32 `wgsl:"softcap"`
	Flags   Flag    `wgsl:"flags"`
	Q       Tensor  `wgsl:"q"`
	K       Tensor  `wgsl:"k"`
	V       Tensor  `wgsl:"v"`
	Dout    Tensor  `wgsl:"dout"`
	LSE     Tensor  `wgsl:"lse"`
	Delta   Tensor  `wgsl:"delta"`
	DQ      Tensor  `wgsl:"dq"`
}
