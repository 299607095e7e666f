package shaders

import (
	"embed"
	"fmt"
	"github.com/attn-go/attn/backend"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"text/template"
)

var (
	workgroupSize = regexp.MustCompile(`@workgroup_size\([^)]*\)`)
	ident         = regexp.MustCompile(`\b[A-Z][A-Z0-9_]*\b`)
)

//go:embed *.wgsl lib/*.wgsl
var files embed.FS

// Access is how a kernel binds one buffer.
type Access int

// The binding kinds.
const (
	Uniform      Access = iota // the kernel's Params, var<uniform>
	Read                       // var<storage, read> array<f32> (array<u32> for a half Elem)
	ReadWrite                  // var<storage, read_write> array<f32> (array<u32> for a half Elem)
	ReadI32                    // var<storage, read> array<i32>: the variant data
	ReadU32                    // var<storage, read> array<u32>: raw words (copy8.wgsl, a table)
	ReadWriteU32               // var<storage, read_write> array<u32>: raw words (copy8.wgsl)
)

// ReadWriteAtomic binds var<storage, read_write> array<atomic<u32>>:
// counters that every invocation may add to (quant8.wgsl).
const ReadWriteAtomic = ReadWriteU32 + 1

// ReadWriteI32 binds var<storage, read_write> array<i32>: the variant
// data of a kernel that also writes words of its own beside them
// (backdelta.wgsl's rows of the LSE and δ).
const ReadWriteI32 = ReadWriteAtomic + 1

// Binding is one buffer a kernel binds, at group 0 and binding = its index
// in Kernel.Bindings.
type Binding struct {
	Name   string
	Access Access
}

// Kernel describes one WGSL kernel: its file, the types of the constants
// its source needs written in (its Spec) and of its Params uniform, its
// bindings and its entry points. Generate writes the declarations of all
// of these in front of the file's body, so the WGSL and the Go that fills
// the uniform and the bind group are generated from this one description.
type Kernel struct {
	Name string
	// Consts is the kernel's Spec type: a struct of int fields, each a
	// u32 constant of the WGSL (ScoresConsts …).
	Consts reflect.Type
	// Params is the type of the kernel's Params uniform: a struct of
	// uint32, int32 and float32 fields and of structs of them (Unit,
	// Tensor, Mask), which Generate writes as the WGSL struct Params
	// (see fields) and Encode as its bytes.
	Params   reflect.Type
	Bindings []Binding
	Entries  []string
	// Include names the files of lib/ written in after the kernel's own
	// file: WGSL shared by several kernels.
	Include []string
	// Template says the body is a text/template, executed with the
	// constants (given and derived) as its data and the functions of
	// templateFuncs, so that it can unroll loops whose trip counts are
	// constants: lavapipe's compiler does not unroll them itself, and a
	// loop both counts against its per-invocation iteration cap and keeps
	// arrays it indexes out of registers.
	Template bool
	// Vec4 maps a Read binding to a constant: when the constant is a
	// multiple of 4 the binding is declared array<vec4<f32>> instead of
	// array<f32> (array<vec2<u32>> instead of array<u32> for a half
	// Elem), and the kernel loads four elements at once (lavapipe pays per
	// load, not per element: it loads storage one invocation at a time).
	// The host then binds a window that starts and ends on a multiple of
	// four elements, and every index the kernel forms is a multiple of 4
	// divided by 4.
	Vec4 map[string]string
	// Units maps a Read binding to the derived constant that is its unit
	// (LoadUnit): a half operand whose unit is 2 is declared
	// array<vec4<u32>>, eight halves a load, and gets the unit loader
	// x_u(i), elements 4i … 4i+7 (i even), beside x_at4 and x_at.
	Units map[string]string
}

// Loaders: for each Read binding x that its Spec gives an Elem, Generate
// writes x_at(i), element i of the bound window as f32, or, when Vec4
// makes x a vector binding, x_at4(i), elements 4i … 4i+3 as a vec4<f32>;
// a kernel reads such an operand only through them, so one body serves
// every storage. For a half output binding x (pack.wgsl, copy.wgsl) it writes
// x_bits(v), v rounded to x's storage as the low 16 bits of a u32
// (lib/half.wgsl).

// templateFuncs are the functions a Template body may call: seq n is
// 0 … n−1; add, sub, mul, div, mod and min are integer arithmetic.
var templateFuncs = template.FuncMap{
	"seq": func(n int) []int {
		out := make([]int, max(n, 0))
		for i := range out {
			out[i] = i
		}
		return out
	},
	// halves n is n/2, n/4, … 1: the strides of a butterfly over n
	// lanes (n a power of two; none for n = 1).
	"halves": func(n int) []int {
		var out []int
		for w := n / 2; w >= 1; w /= 2 {
			out = append(out, w)
		}
		return out
	},
	"add": func(a, b int) int { return a + b },
	"div": func(a, b int) int { return a / b },
	"sub": func(a, b int) int { return a - b },
	"mul": func(a, b int) int { return a * b },
	"mod": func(a, b int) int { return a % b },
	"min": func(a, b int) int { return min(a, b) },
	// unroll n u is how many of a loop's n iterations (n a constant)
	// one trip of its unrolled form writes out: the largest power of two
	// at most u that divides n, 1 where u ≤ 1. See loop.
	"unroll": unrollBy,
	// loop v n trips f opens a loop over v = 0 … trips−1 (n: the WGSL
	// constant or literal it counts to) written f iterations a trip (f =
	// unroll trips u): a for loop of one iteration a trip where f = 1; a
	// for loop over v_u in steps of f where 1 < f < trips; where f =
	// trips no loop at all, a block. Each iteration's body goes between
	// "step v i trips f indent" and "done f indent" for i in seq f,
	// which open and close a block at that indent binding v for it (with
	// f = 1 the loop's own v, and nothing is written); the loop itself
	// ends with "}". A driver that cannot count the trips of a bounded
	// loop (naga's loop bounding since wgpu 25) cannot unroll it; written
	// out, the iterations need no counting, and an array indexed by v
	// stays in registers where f = trips.
	"loop": unrolledLoop,
	"step": func(v string, i, trips, f, indent int) string {
		if f <= 1 {
			return ""
		}
		pad := "\n" + strings.Repeat(" ", indent)
		c, e := unrolledAt(v, i, trips, f)
		return fmt.Sprintf("%s{ // %s = %s%s    let %s = %s;", pad, v, c, pad, v, e)
	},
	"done": unrolledDone,
	// at v i trips f is iteration i of a trip of such a loop as a WGSL
	// expression (in parentheses where it is a sum), for a body that
	// binds what it needs itself rather than in step's block.
	"at": func(v string, i, trips, f int) string {
		if f <= 1 {
			return v
		}
		_, e := unrolledAt(v, i, trips, f)
		if f < trips {
			return "(" + e + ")"
		}
		return e
	},
	// sloop, sstep and sdone are loop, step and done for a loop over x
	// = start, start + WG, … below bound (WGSL expressions; start the
	// invocation's index, below WG), trips = ⌈bound/WG⌉ of them at most
	// (a constant), f = unroll trips u a trip: with f = 1 the loop as
	// written ("for (var x = start; x < bound; x += WG) {"), else over
	// x's step n, each step's body under "if (x < bound)".
	"sloop": func(x, start, bound string, trips, f int) string {
		if f <= 1 {
			return fmt.Sprintf("for (var %s = %s; %s < %s; %s += WG) {", x, start, x, bound, x)
		}
		return unrolledLoop(x, fmt.Sprintf("%du", trips), trips, f)
	},
	"sstep": func(x, start, bound string, i, trips, f, indent int) string {
		if f <= 1 {
			return ""
		}
		pad := "\n" + strings.Repeat(" ", indent)
		c, e := unrolledAt(x, i, trips, f)
		if f < trips {
			c, e = "("+c+")", "("+e+")"
		}
		return fmt.Sprintf("%s{ // %s = %s + %s·WG%s    let %s = %s + %s * WG;%s    if (%s < %s) {", pad, x, start, c, pad, x, start, e, pad, x, bound)
	},
	"sdone": func(f, indent int) string {
		if f <= 1 {
			return ""
		}
		return "\n" + strings.Repeat(" ", indent+4) + "}" + unrolledDone(f, indent)
	},
	// lets name expr n indent binds name0 … name(n−1), each on a line of
	// its own at indent, to expr with %d replaced by the binding's index:
	// an unrolled trip's loads, written out before the trip uses them.
	"lets": func(name, expr string, n, indent int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "\n%slet %s%d = %s;", strings.Repeat(" ", indent), name, i, strings.ReplaceAll(expr, "%d", fmt.Sprint(i)))
		}
		return b.String()
	},
	// ceildiv a b is ⌈a/b⌉.
	"ceildiv": func(a, b int) int { return (a + b - 1) / b },
	// load4 buf at off n is the WGSL vec4 of elements at+off …
	// at+off+3 of buf (read by its loader buf_at), its components from
	// the nth on zero (n ≤ 4), with constant offsets.
	"load4": func(buf, at string, off, n int) string {
		var c [4]string
		for i := range c {
			c[i] = "0.0"
			if i < n {
				c[i] = fmt.Sprintf("%s_at(%s + %du)", buf, at, off+i)
			}
		}
		return "vec4<f32>(" + strings.Join(c[:], ", ") + ")"
	},
}

// unrollBy is the template function unroll.
func unrollBy(n, u int) int {
	f := 1
	for f*2 <= u && n%(f*2) == 0 {
		f *= 2
	}
	return f
}

// unrolledLoop is the template function loop.
func unrolledLoop(v, n string, trips, f int) string {
	switch {
	case f <= 1:
		return fmt.Sprintf("for (var %s = 0u; %s < %s; %s++) {", v, v, n, v)
	case f >= trips:
		return "{"
	}
	return fmt.Sprintf("for (var %s_u = 0u; %s_u < %s; %s_u += %du) {", v, v, n, v, f)
}

// unrolledAt is iteration i of a trip of an unrolled loop over v (f > 1
// of its trips a trip): its value as a comment writes it and as WGSL.
func unrolledAt(v string, i, trips, f int) (comment, expr string) {
	if f >= trips {
		return fmt.Sprint(i), fmt.Sprintf("%du", i)
	}
	return fmt.Sprintf("%s_u + %d", v, i), fmt.Sprintf("%s_u + %du", v, i)
}

// unrolledDone is the template function done.
func unrolledDone(f, indent int) string {
	if f <= 1 {
		return ""
	}
	return "\n" + strings.Repeat(" ", indent) + "}"
}

// The kernels. Every tensor a kernel reads or writes is addressed by four
// u32 fields: X_b, X_h, X_r (strides of the batch, the head and the row)
// and X_base (the element where the bound window starts), all modulo 2³²,
// so that element c of row r of head h in batch b is at
//
//	b·X_b + h·X_h + r·X_r + c − X_base
//
// in the window, computed with wrapping u32 arithmetic: the result is the
// exact offset inside the window even when the tensor's absolute offsets
// do not fit in 32 bits. Masks add X_c, the stride of the key index (0 on
// a broadcast key dimension). Go holds them as Tensor and Mask fields.
var (
	Scores = Kernel{
		Name:     "scores",
		Consts:   reflect.TypeFor[ScoresConsts](),
		Params:   reflect.TypeFor[ScoresParams](),
		Bindings: []Binding{{"P", Uniform}, {"q", Read}, {"k", Read}, {"bias", Read}, {"keep", Read}, {"vars", ReadI32}, {"s", ReadWrite}},
		Entries:  []string{"main"},
		Include:  []string{"neginf", "vars", "scoremod"},
	}
	Softmax = Kernel{
		Name:     "softmax",
		Consts:   reflect.TypeFor[SoftmaxConsts](),
		Params:   reflect.TypeFor[SoftmaxParams](),
		Bindings: []Binding{{"P", Uniform}, {"keep", Read}, {"vars", ReadI32}, {"s", ReadWrite}, {"st", ReadWrite}, {"lse", ReadWrite}},
		Entries:  []string{"stats", "normalize"},
		Include:  []string{"neginf", "vars"},
	}
	Context = Kernel{
		Name:     "context",
		Consts:   reflect.TypeFor[ContextConsts](),
		Params:   reflect.TypeFor[ContextParams](),
		Bindings: []Binding{{"P", Uniform}, {"p", Read}, {"v", Read}, {"o", ReadWrite}},
		Entries:  []string{"main"},
	}
	Fused     = withUnits(fusedKernel("fused", reflect.TypeFor[FusedConsts]()), map[string]string{"k": "KU", "v": "VU"})
	FusedLoop = Kernel{
		Name:     "fusedloop",
		Consts:   reflect.TypeFor[FusedLoopConsts](),
		Params:   reflect.TypeFor[FusedParams](),
		Bindings: fusedBindings,
		Entries:  []string{"main"},
		Include:  []string{"neginf", "vars", "scoremod", "seqs", "pages", "blocks"},
		Template: true,
	}
	FusedTile   = fusedKernel("fusedtile", reflect.TypeFor[FusedTileConsts](), "rows", "score")
	FusedDecode = withUnits(fusedKernel("fuseddecode", reflect.TypeFor[FusedDecodeConsts](), "rows", "units", "score", "decoding"), map[string]string{"k": "KU", "v": "VU"})
	LaneDecode  = withUnits(fusedKernel("lanedecode", reflect.TypeFor[LaneDecodeConsts](), "rows", "units", "score", "decoding"), map[string]string{"k": "KU", "v": "VU"})
	Merge       = Kernel{
		Name:     "merge",
		Consts:   reflect.TypeFor[MergeConsts](),
		Params:   reflect.TypeFor[MergeParams](),
		Bindings: []Binding{{"P", Uniform}, {"po", Read}, {"plse", Read}, {"vars", ReadI32}, {"o", ReadWrite}, {"lse", ReadWrite}},
		Entries:  []string{"main"},
		Include:  []string{"neginf", "seqs"},
		Template: true,
	}
	Pack = Kernel{
		Name:     "pack",
		Consts:   reflect.TypeFor[PackConsts](),
		Params:   reflect.TypeFor[PackParams](),
		Bindings: []Binding{{"P", Uniform}, {"src", Read}, {"o", ReadWrite}},
		Entries:  []string{"main"},
		Include:  []string{"half"},
	}
	Copy = Kernel{
		Name:     "copy",
		Consts:   reflect.TypeFor[CopyConsts](),
		Params:   reflect.TypeFor[CopyParams](),
		Bindings: []Binding{{"P", Uniform}, {"src", Read}, {"vars", ReadU32}, {"o", ReadWrite}},
		Entries:  []string{"main"},
		Include:  []string{"half"},
		Template: true,
	}
	Copy8 = Kernel{
		Name:     "copy8",
		Consts:   reflect.TypeFor[Copy8Consts](),
		Params:   reflect.TypeFor[CopyParams](),
		Bindings: []Binding{{"P", Uniform}, {"src", ReadU32}, {"vars", ReadU32}, {"o", ReadWriteU32}},
		Entries:  []string{"main"},
		Template: true,
	}
	Patch = Kernel{
		Name:     "patch",
		Consts:   reflect.TypeFor[PatchConsts](),
		Params:   reflect.TypeFor[PatchParams](),
		Bindings: []Binding{{"P", Uniform}, {"vars", ReadU32}, {"o", ReadWriteU32}},
		Entries:  []string{"main"},
	}
	Quant8 = Kernel{
		Name:     "quant8",
		Consts:   reflect.TypeFor[Quant8Consts](),
		Params:   reflect.TypeFor[Quant8Params](),
		Bindings: []Binding{{"P", Uniform}, {"src", ReadU32}, {"vars", ReadU32}, {"o", ReadWriteU32}, {"cnt", ReadWriteAtomic}},
		Entries:  []string{"main"},
		Include:  []string{"half"},
		Template: true,
	}
)

// Subgroups is subgroups.wgsl, which measures the subgroup sizes a
// workgroup runs in.
var Subgroups = Kernel{
	Name:     "subgroups",
	Consts:   reflect.TypeFor[SubgroupsConsts](),
	Params:   reflect.TypeFor[SubgroupsParams](),
	Bindings: []Binding{{"P", Uniform}, {"o", ReadWrite}},
	Entries:  []string{"main"},
}

// All lists every kernel.
var All = []Kernel{Scores, Softmax, Context, Fused, FusedLoop, FusedTile, FusedDecode, LaneDecode, Merge, Pack, Copy, Copy8, Patch, Quant8, Subgroups, BackDelta, BackKV, BackQ, BackBias, BackIdxKV, BackIdxQ}

// fusedKernel is a Template kernel of the fused family: fusedBindings,
// FusedParams, the lib files they all include (and more), and K and V
// bound as vec4s where D and V's rows (VA: DV, or with V from K the
// alignment of its rows in K's) are multiples of 4.
func fusedKernel(name string, consts reflect.Type, include ...string) Kernel {
	return Kernel{
		Name:     name,
		Consts:   consts,
		Params:   reflect.TypeFor[FusedParams](),
		Bindings: fusedBindings,
		Entries:  []string{"main"},
		Include:  append([]string{"neginf", "vars", "scoremod", "seqs", "pages", "blocks"}, include...),
		Template: true,
		Vec4:     map[string]string{"k": "D", "v": "VA"},
	}
}

// withUnits is k reading the bindings of units through unit loaders.
func withUnits(k Kernel, units map[string]string) Kernel {
	k.Units = units
	return k
}

// fusedBindings are fused.wgsl's, fusedloop.wgsl's, fusedtile.wgsl's and
// fuseddecode.wgsl's: the four kernels are interchangeable to the host.
var fusedBindings = []Binding{{"P", Uniform}, {"q", Read}, {"k", Read}, {"v", Read}, {"bias", Read}, {"keep", Read},
	{"vars", ReadI32}, {"o", ReadWrite}, {"lse", ReadWrite}}

// The flag bits of a kernel's flags field. Generate writes each as a
// WGSL constant (Flags) into every kernel with a flags field, and the
// kernels test the bits by those names only, so the Go that sets a bit
// and the WGSL that reads it cannot disagree.
const (
	// FlagRange hides every key outside backend.Problem.KeyRange (causal,
	// window, key lengths), from the ranges in vars. Scores applies it
	// (and FlagKeep) only for the masked stage.
	FlagRange   Flag = 1 << iota
	FlagBias         // add the bias operand
	FlagKeep         // hide keys where the keep operand is 0
	FlagLSE          // write the LSE
	FlagSoftcap      // cap the scaled scores at ±softcap
	FlagALiBi        // add −slope·|t − j| from vars
	FlagSink         // add exp(sink logit) from vars to the denominator
	// FlagPackQ: the query rows of q, o and lse are packed (backend.Packed):
	// batch b's start at the row vars gives, and it has the query count
	// vars gives (lib/seqs.wgsl).
	FlagPackQ
	FlagPackK // the key rows of k and v are packed, batch b's from the row vars gives
	FlagPaged // k and v are a paged pool read through the block table in vars (lib/pages.wgsl)
	// FlagScales: K and V are read times their KV head's scales, from
	// vars at P.scl (backend.Scales; lib/pages.wgsl's kv_scales).
	FlagScales
	// FlagBlocks: a block mask in vars at P.blk hides the keys of its
	// blocks that are off, and the fused and backward kernels skip them
	// (backend.BlockMask; lib/blocks.wgsl's block_on).
	FlagBlocks
)

// Flags names each flag bit as the WGSL constant Generate writes.
var Flags = []struct {
	Name string
	Bit  Flag
}{
	{"F_RANGE", FlagRange}, {"F_BIAS", FlagBias}, {"F_KEEP", FlagKeep}, {"F_LSE", FlagLSE},
	{"F_SOFTCAP", FlagSoftcap}, {"F_ALIBI", FlagALiBi}, {"F_SINK", FlagSink},
	{"F_PACKQ", FlagPackQ}, {"F_PACKK", FlagPackK}, {"F_PAGED", FlagPaged}, {"F_SCALES", FlagScales}, {"F_BLOCKS", FlagBlocks},
}

// Key names a specialisation, for caching compiled pipelines: the
// kernel's name and each given constant.
func (k Kernel) Key(s Spec) string {
	var b strings.Builder
	b.WriteString(k.Name)
	if reflect.TypeOf(s) != k.Consts {
		fmt.Fprintf(&b, " %T", s) // never valid, but never mistaken for a valid key
	}
	for _, c := range consts(s) {
		fmt.Fprintf(&b, " %s=%d", c.Name, c.Value)
	}
	for _, e := range elems(s) {
		if e.Elem != F32 {
			fmt.Fprintf(&b, " %s=%v", e.Binding, e.Elem)
		}
	}
	for _, m := range modes(s) {
		if m.Value != 0 {
			fmt.Fprintf(&b, " %s", strings.ToLower(m.Name))
		}
	}
	return b.String()
}

// Body is the kernel's WGSL as embedded, without the generated
// declarations: its own file, then its Include files from lib/ (WGSL
// module-scope declarations may come in any order).
func (k Kernel) Body() (string, error) {
	var out strings.Builder
	for i, path := range append([]string{k.Name + ".wgsl"}, k.Include...) {
		if i > 0 {
			path = "lib/" + path + ".wgsl"
			out.WriteString("\n")
		}
		b, err := files.ReadFile(path)
		if err != nil {
			return "", backend.Wrapf(err, "shaders: %s", k.Name)
		}
		out.Write(b)
	}
	return out.String(), nil
}

// Check says whether s specialises its kernel within the kernel's
// limits, as Generate would find: every constant in range and the
// kernel's own conditions met. Planners that choose sizes from tunable
// bounds use it to pass over the choices a kernel cannot take.
func Check(s Spec) error { return s.Kernel().validate(s) }

// validate is Check for kernel k.
func (k Kernel) validate(s Spec) error {
	if reflect.TypeOf(s) != k.Consts {
		return fmt.Errorf("shaders: %s is specialised by a %v, not a %T", k.Name, k.Consts, s)
	}
	for _, c := range consts(s) {
		if c.Value < leastConst(s, c.Name) || c.Value > 1<<24 {
			return fmt.Errorf("shaders: %s: constant %s = %d is out of range", k.Name, c.Name, c.Value)
		}
	}
	if err := s.check(); err != nil {
		return backend.Wrapf(err, "shaders: %s", k.Key(s))
	}
	return nil
}

// Generate returns the complete WGSL of kernel k specialised by s: the
// constants, the Params struct and the bindings, then the file's body.
func (k Kernel) Generate(s Spec) (string, error) {
	if err := k.validate(s); err != nil {
		return "", err
	}
	given := consts(s)
	elem := map[string]Elem{}
	for _, e := range elems(s) {
		i := slices.IndexFunc(k.Bindings, func(bd Binding) bool { return bd.Name == e.Binding })
		if i < 0 || (k.Bindings[i].Access != Read && k.Bindings[i].Access != ReadWrite) {
			return "", fmt.Errorf("shaders: %s: storage %v given for %s, which is no tensor binding", k.Name, e.Elem, e.Binding)
		}
		// The fused kernels' k and v alone read quantized elements.
		kv := k.Params == reflect.TypeFor[FusedParams]() && (e.Binding == "k" || e.Binding == "v")
		if e.Elem > Q4 || (e.Elem.Quant() && !kv) {
			return "", fmt.Errorf("shaders: %s: %s stored as %v", k.Name, e.Binding, e.Elem)
		}
		elem[e.Binding] = e.Elem
	}
	body, err := k.Body()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Code generated by package shaders from %s.wgsl (%s). DO NOT EDIT.\n\n", k.Name, k.Key(s))
	// A kernel with a given F16 = 1 enables WGSL's f16 (shader-f16), a
	// directive, which comes before every declaration.
	f16 := EnablesF16(s)
	if f16 {
		b.WriteString("enable f16;\n\n")
	}
	vals := map[string]int{}
	for _, m := range modes(s) {
		vals[m.Name] = m.Value
	}
	for _, c := range given {
		vals[c.Name] = c.Value
		if !inputOnly(s, c.Name) {
			fmt.Fprintf(&b, "const %s: u32 = %du;\n", c.Name, c.Value)
		}
	}
	for _, d := range s.derived() {
		if d.Value < 1 {
			return "", fmt.Errorf("shaders: %s: derived constant %s = %d from %s", k.Name, d.Name, d.Value, k.Key(s))
		}
		vals[d.Name] = d.Value
		fmt.Fprintf(&b, "const %s: u32 = %du;\n", d.Name, d.Value)
	}
	// KQ and VQ tell a kernel reading units (Kernel.Units) whether its k
	// and v are Q8 or Q4, whose part-block units it loads with x_p
	// (writePartLoader): template values only, no WGSL constants.
	for name := range k.Units {
		q := 0
		if elem[name].Blocked() {
			q = 1
		}
		vals[strings.ToUpper(name)+"Q"] = q
	}
	if slices.Contains(k.ParamNames(), "flags") {
		b.WriteString("\n")
		for _, f := range Flags {
			fmt.Fprintf(&b, "const %s: u32 = %du;\n", f.Name, f.Bit)
		}
	}
	if err := k.writeParams(&b); err != nil {
		return "", err
	}
	var loaders strings.Builder
	quant, q4 := false, false
	for i, bd := range k.Bindings {
		e, typed := elem[bd.Name]
		switch bd.Access {
		case Uniform:
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<uniform> %s: Params;\n", i, bd.Name)
		case Read:
			c, ok := k.Vec4[bd.Name]
			vec4 := ok && vals[c]%4 == 0
			u, ok := k.Units[bd.Name]
			wide := ok && e.Half() && vals[u] >= 2
			t := map[[2]bool]string{{false, false}: "f32", {true, false}: "vec4<f32>", {false, true}: "u32", {true, true}: "vec2<u32>"}[[2]bool{vec4, e.Half()}]
			switch {
			case f16 && e == F16 && wide:
				// WGSL's f16: columns of four halves, a unit a matrix.
				t = fmt.Sprintf("mat%dx4<f16>", vals[u])
			case f16 && e == F16 && vec4:
				t = "vec4<f16>"
			case f16 && e == F16:
				t = "f16"
			case e.Quant() || wide && vals[u] == 2:
				t = "vec4<u32>"
			case wide:
				t = fmt.Sprintf("array<vec4<u32>, %d>", vals[u]/2)
			}
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read> %s: array<%s>;\n", i, bd.Name, t)
			switch {
			case e == Q4:
				writeQuantLoaders(&loaders, bd.Name, e, vals[u])
				q4 = true
			case e.Quant():
				writeQuantLoaders(&loaders, bd.Name, e, vals[u])
				quant = true
			case wide:
				writeWideLoaders(&loaders, bd.Name, e, f16, vals[u])
			case typed:
				writeLoader(&loaders, bd.Name, e, vec4, f16)
			}
		case ReadWrite:
			t := "f32"
			if e.Half() {
				t = "u32"
				fmt.Fprintf(&loaders, "\nfn %s_bits(x: f32) -> u32 {\n    return %s_bits(x);\n}\n", bd.Name, e)
			}
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> %s: array<%s>;\n", i, bd.Name, t)
		case ReadI32:
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read> %s: array<i32>;\n", i, bd.Name)
		case ReadU32:
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read> %s: array<u32>;\n", i, bd.Name)
		case ReadWriteU32:
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> %s: array<u32>;\n", i, bd.Name)
		case ReadWriteI32:
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> %s: array<i32>;\n", i, bd.Name)
		case ReadWriteAtomic:
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> %s: array<atomic<u32>>;\n", i, bd.Name)
		}
	}
	b.WriteString(loaders.String())
	if quant {
		b.WriteString(quantWiden)
	}
	if q4 {
		b.WriteString(q4Widen)
	}
	b.WriteString("\n")
	if k.Template {
		t, err := template.New(k.Name).Funcs(templateFuncs).Option("missingkey=error").Parse(body)
		if err != nil {
			return "", backend.Wrapf(err, "shaders: %s", k.Name)
		}
		var x strings.Builder
		if err := t.Execute(&x, vals); err != nil {
			return "", backend.Wrapf(err, "shaders: %s", k.Key(s))
		}
		body = x.String()
	}
	// The workgroup size must be literal integers in this naga: write the
	// values in place of the constants' names.
	body = workgroupSize.ReplaceAllStringFunc(body, func(attr string) string {
		return ident.ReplaceAllStringFunc(attr, func(name string) string {
			if v, ok := vals[name]; ok {
				return fmt.Sprint(v)
			}
			return name
		})
	})
	b.WriteString(body)
	return b.String(), nil
}
