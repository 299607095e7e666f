package shaders

import "reflect"

// The backward pass under an index list (backend.Indices; gpu's
// Backward): after backdelta.wgsl's δ, backidxkv.wgsl sums dK and dV a
// key an invocation over the query rows that name it, and backidxq.wgsl
// dQ a query row an invocation over the keys it names, each walking a
// list the host built (gpu/internal/plan's BackwardIndexLists) in a
// fixed order: no atomics, and no sum whose order a run can change.
// They read Q, K, V and dO stored as their Consts' Elems say, a row at
// a time (lib/backrows.wgsl: a vec4 a load where the head dim is a
// multiple of 4); what they write is float32. They read each row's LSE
// and δ in vars, as the other backward kernels do (shaders/backward.go),
// and bind at most WebGPU's default of 8 storage buffers.
var (
	BackIdxKV = Kernel{
		Name:     "backidxkv",
		Consts:   reflect.TypeFor[BackIdxKVConsts](),
		Params:   reflect.TypeFor[BackIdxKVParams](),
		Bindings: backIdxBindings("dk", "dv"),
		Entries:  []string{"main"},
		Include:  []string{"neginf", "vars", "scoremod", "seqs", "backrows", "backvars"},
		Template: true,
		Vec4:     backIdxVec4,
	}
	BackIdxQ = Kernel{
		Name:     "backidxq",
		Consts:   reflect.TypeFor[BackIdxQConsts](),
		Params:   reflect.TypeFor[BackIdxQParams](),
		Bindings: backIdxBindings("dq"),
		Entries:  []string{"main"},
		Include:  []string{"neginf", "vars", "scoremod", "seqs", "backrows", "backvars"},
		Template: true,
		Vec4:     backIdxVec4,
	}
)

// backIdxVec4: the index kernels load a row of Q and K (of dO and V) a
// vec4 at a time where D (Dv) is a multiple of 4.
var backIdxVec4 = map[string]string{"q": "D", "k": "D", "v": "DV", "dout": "DV"}

// backIdxBindings are the bindings of backidxkv and backidxq: the
// Params, the inputs both read (list, the host's lists, as raw words),
// then outs, written.
func backIdxBindings(outs ...string) []Binding {
	b := []Binding{{"P", Uniform}, {"q", Read}, {"k", Read}, {"v", Read}, {"dout", Read},
		{"vars", ReadI32}, {"list", ReadU32}}
	for _, o := range outs {
		b = append(b, Binding{o, ReadWrite})
	}
	return b
}

// BackIdxKVConsts specialises backidxkv.wgsl: WG invocations a
// workgroup, one key each, head dims D and DV (D4 = ⌈D/4⌉ and DV4 =
// ⌈DV/4⌉ derived); Q, K, V and Dout are how those operands are stored.
type BackIdxKVConsts struct {
	WG, D, DV     int
	Q, K, V, Dout Elem
	F16           bool // mode: float16 operands bound as f16 arrays (see modes)
}

// BackIdxQConsts specialises backidxq.wgsl: WG invocations a workgroup,
// one query row each; the rest as in BackIdxKVConsts.
type BackIdxQConsts struct {
	WG, D, DV     int
	Q, K, V, Dout Elem
	F16           bool // mode: float16 operands bound as f16 arrays (see modes)
}

func (BackIdxKVConsts) Kernel() *Kernel { return &BackIdxKV }
func (BackIdxQConsts) Kernel() *Kernel  { return &BackIdxQ }

func (c BackIdxKVConsts) derived() []Const {
	return []Const{{"D4", ceil4(c.D)}, {"DV4", ceil4(c.DV)}}
}
func (c BackIdxQConsts) derived() []Const {
	return []Const{{"D4", ceil4(c.D)}, {"DV4", ceil4(c.DV)}}
}

func (BackIdxKVConsts) check() error { return nil }
func (BackIdxQConsts) check() error  { return nil }

// IndexListParams are the fields both index kernels read to find a
// slot's list in the list binding (plan.IndexLists): the slot of row
// (key) x of batch b under KV head kh is kh·lh·lt + base(b) + x, lh 1
// where each KV head has its list and 0 where one list serves them all,
// lt the slots of one KV head's lists, base(b) b·Nq (b·Nk) or, packed,
// the sequence's first row; of its list an invocation walks the entries
// [e0, e1).
type IndexListParams struct {
	LH uint32 `wgsl:"lh"`
	LT uint32 `wgsl:"lt"`
	E0 uint32 `wgsl:"e0"`
	E1 uint32 `wgsl:"e1"`
}

// BackIdxHead is what both index kernels' Params begin with: the scale,
// the softcap and the flags (FlagRange, for each batch's key count,
// FlagSoftcap, FlagPackQ, FlagPackK), where the per-sequence entries
// start in vars, the lists' addressing, and the operands they read.
type BackIdxHead struct {
	Unit
	Scale   float32 `wgsl:"scale"`
	Softcap float32 `wgsl:"softcap"`
	Flags   Flag    `wgsl:"flags"`
	Seq     uint32  `wgsl:"seq"`
	IndexListParams
	Q    Tensor   `wgsl:"q"`
	K    Tensor   `wgsl:"k"`
	V    Tensor   `wgsl:"v"`
	Dout Tensor   `wgsl:"dout"`
	LD   VarsRows `wgsl:"ld"`
}

// BackIdxKVParams is backidxkv.wgsl's Params: BackIdxHead, then dK and
// dV.
type BackIdxKVParams struct {
	BackIdxHead
	DK Tensor `wgsl:"dk"`
	DV Tensor `wgsl:"dv"`
}

// BackIdxQParams is backidxq.wgsl's Params: BackIdxHead, then dQ.
type BackIdxQParams struct {
	BackIdxHead
	DQ Tensor `wgsl:"dq"`
}
