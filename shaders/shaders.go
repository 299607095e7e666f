package shaders

import (
	"embed"
	"fmt"
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
	Uniform   Access = iota // the kernel's Params, var<uniform>
	Read                    // var<storage, read> array<f32>
	ReadWrite               // var<storage, read_write> array<f32>
	ReadI32                 // var<storage, read> array<i32>: the variant data
)

// Binding is one buffer a kernel binds, at group 0 and binding = its index
// in Kernel.Bindings.
type Binding struct {
	Name   string
	Access Access
}

// Kernel describes one WGSL kernel: its file, the constants its source
// needs written in, the u32 fields of its Params uniform, its bindings and
// its entry points. Generate writes the declarations of all of these in
// front of the file's body, so the WGSL and the Go that fills the uniform
// and the bind group are generated from this one description.
type Kernel struct {
	Name     string
	Consts   []string // each a u32 constant, in the order Spec must give them
	Params   []string // Params fields, each u32 (an f32 travels as its bits)
	Bindings []Binding
	Entries  []string
	// Include names the files of lib/ written in after the kernel's own
	// file: WGSL shared by several kernels.
	Include []string
	// Derived are constants computed from Consts and written in after
	// them: this naga accepts no expressions in array sizes or workgroup
	// sizes, so products are precomputed here.
	Derived []Derived
	// Check refuses constants that are each in range but do not work
	// together (a tile the register block does not divide, say), which
	// would compile into a kernel that silently computes the wrong thing.
	Check func(c map[string]int) error
	// Template says the body is a text/template, executed with the
	// constants (given and derived) as its data and the functions of
	// templateFuncs, so that it can unroll loops whose trip counts are
	// constants: lavapipe's compiler does not unroll them itself, and a
	// loop both counts against its per-invocation iteration cap and keeps
	// arrays it indexes out of registers.
	Template bool
	// Vec4 maps a Read binding to a constant: when the constant is a
	// multiple of 4 the binding is declared array<vec4<f32>> instead of
	// array<f32>, and the kernel loads four elements at once (lavapipe
	// pays per load, not per element: it loads storage one invocation at
	// a time). The host then binds a window that starts and ends on a
	// multiple of 16 bytes, and every index the kernel forms is a
	// multiple of 4 divided by 4.
	Vec4 map[string]string
}

// templateFuncs are the functions a Template body may call: seq n is
// 0 … n−1; add, sub, mul, mod and min are integer arithmetic.
var templateFuncs = template.FuncMap{
	"seq": func(n int) []int {
		out := make([]int, max(n, 0))
		for i := range out {
			out[i] = i
		}
		return out
	},
	"add": func(a, b int) int { return a + b },
	"sub": func(a, b int) int { return a - b },
	"mul": func(a, b int) int { return a * b },
	"mod": func(a, b int) int { return a % b },
	"min": func(a, b int) int { return min(a, b) },
	// load4 buf at off n is the WGSL vec4 of buf[at+off] … buf[at+off+3],
	// its components from the nth on zero (n ≤ 4), with constant offsets.
	"load4": func(buf, at string, off, n int) string {
		var c [4]string
		for i := range c {
			c[i] = "0.0"
			if i < n {
				c[i] = fmt.Sprintf("%s[%s + %du]", buf, at, off+i)
			}
		}
		return "vec4<f32>(" + strings.Join(c[:], ", ") + ")"
	},
}

// Derived is a constant computed from a kernel's other constants.
type Derived struct {
	Name string
	F    func(c map[string]int) int
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
// a broadcast key dimension).
var (
	Scores = Kernel{
		Name:   "scores",
		Consts: []string{"TM", "TN", "TD", "RM", "RN"},
		Params: cat(unitParams, []string{"d0", "d1", "first", "last", "scale", "softcap", "flags"},
			tensorParams("q"), tensorParams("k"), tensorParams("s"), maskParams("bias"), maskParams("keep")),
		Bindings: []Binding{{"P", Uniform}, {"q", Read}, {"k", Read}, {"bias", Read}, {"keep", Read}, {"vars", ReadI32}, {"s", ReadWrite}},
		Entries:  []string{"main"},
		Include:  []string{"neginf", "vars", "scoremod"},
		Derived: []Derived{
			{"QS", func(c map[string]int) int { return c["TM"] * c["TD"] }},
			{"KS", func(c map[string]int) int { return c["TN"] * c["TD"] }},
			{"WX", func(c map[string]int) int { return c["TN"] / c["RN"] }},
			{"WY", func(c map[string]int) int { return c["TM"] / c["RM"] }},
			{"NT", func(c map[string]int) int { return c["TN"] / c["RN"] * (c["TM"] / c["RM"]) }},
			{"RR", func(c map[string]int) int { return c["RM"] * c["RN"] }},
		},
		Check: tileCheck("TD"),
	}
	Softmax = Kernel{
		Name:   "softmax",
		Consts: []string{"WG", "PER"},
		Params: cat(unitParams, []string{"nc", "flags"},
			tensorParams("s"), tensorParams("st"), tensorParams("lse"), maskParams("keep")),
		Bindings: []Binding{{"P", Uniform}, {"keep", Read}, {"vars", ReadI32}, {"s", ReadWrite}, {"st", ReadWrite}, {"lse", ReadWrite}},
		Entries:  []string{"stats", "normalize"},
		Include:  []string{"neginf", "vars"},
		Derived: []Derived{
			{"CW", func(c map[string]int) int { return c["WG"] * c["PER"] }},
		},
		Check: func(c map[string]int) error {
			if wg := c["WG"]; wg&(wg-1) != 0 {
				return fmt.Errorf("WG = %d is not a power of two (the tree reduction halves it)", wg)
			}
			return nil
		},
	}
	Context = Kernel{
		Name:   "context",
		Consts: []string{"TM", "TN", "TJ", "RM", "RN"},
		Params: cat(unitParams, []string{"Dv", "first"},
			tensorParams("p"), tensorParams("v"), tensorParams("o")),
		Bindings: []Binding{{"P", Uniform}, {"p", Read}, {"v", Read}, {"o", ReadWrite}},
		Entries:  []string{"main"},
		Derived: []Derived{
			{"PS", func(c map[string]int) int { return c["TM"] * c["TJ"] }},
			{"VS", func(c map[string]int) int { return c["TJ"] * c["TN"] }},
			{"WX", func(c map[string]int) int { return c["TN"] / c["RN"] }},
			{"WY", func(c map[string]int) int { return c["TM"] / c["RM"] }},
			{"NT", func(c map[string]int) int { return c["TN"] / c["RN"] * (c["TM"] / c["RM"]) }},
			{"RR", func(c map[string]int) int { return c["RM"] * c["RN"] }},
		},
		Check: tileCheck("TJ"),
	}
	Fused = Kernel{
		Name:     "fused",
		Consts:   []string{"WG", "R", "D", "DV", "D4", "DV4"},
		Params:   fusedParams,
		Bindings: fusedBindings,
		Entries:  []string{"main"},
		Include:  []string{"neginf", "vars", "scoremod"},
		Template: true,
		Vec4:     map[string]string{"k": "D", "v": "DV"},
		Check:    fusedCheck,
	}
	FusedLoop = Kernel{
		Name:     "fusedloop",
		Consts:   []string{"WG", "TK", "D", "DV", "D4", "DV4"},
		Params:   fusedParams,
		Bindings: fusedBindings,
		Entries:  []string{"main"},
		Include:  []string{"neginf", "vars", "scoremod"},
		Derived: []Derived{
			{"KS", func(c map[string]int) int { return c["TK"] * c["D4"] }},
			{"VS", func(c map[string]int) int { return c["TK"] * c["DV4"] }},
		},
		Check: fusedCheck,
	}
	Merge = Kernel{
		Name:   "merge",
		Consts: []string{"WG"},
		Params: cat(unitParams, []string{"Dv"},
			tensorParams("o"), tensorParams("lse"), tensorParams("po"), tensorParams("plse")),
		Bindings: []Binding{{"P", Uniform}, {"po", Read}, {"plse", Read}, {"o", ReadWrite}, {"lse", ReadWrite}},
		Entries:  []string{"main"},
		Include:  []string{"neginf"},
	}
)

// All lists every kernel.
var All = []Kernel{Scores, Softmax, Context, Fused, FusedLoop, Merge}

// fusedParams and fusedBindings are fused.wgsl's and fusedloop.wgsl's:
// the two kernels are interchangeable to the host.
var fusedBindings = []Binding{{"P", Uniform}, {"q", Read}, {"k", Read}, {"v", Read}, {"bias", Read}, {"keep", Read},
	{"vars", ReadI32}, {"o", ReadWrite}, {"lse", ReadWrite}}

var fusedParams = cat(unitParams, []string{"scale", "softcap", "flags"},
	tensorParams("q"), tensorParams("k"), tensorParams("v"), tensorParams("o"), tensorParams("lse"),
	maskParams("bias"), maskParams("keep"))

// fusedCheck refuses D4, DV4 other than ⌈D/4⌉, ⌈DV/4⌉: the vec4 loads
// would stop short of the row or read into the next one.
func fusedCheck(c map[string]int) error {
	if c["D4"] != (c["D"]+3)/4 || c["DV4"] != (c["DV"]+3)/4 {
		return fmt.Errorf("D4 = %d and DV4 = %d must be ⌈D/4⌉ = %d and ⌈DV/4⌉ = %d", c["D4"], c["DV4"], (c["D"]+3)/4, (c["DV"]+3)/4)
	}
	return nil
}

// unitParams locate a dispatch's share of the problem: heads bh0… of the
// flattened b·H+h index (count from the grid), query rows i0…i1−1 and keys
// j0…j1−1, with H heads, G query heads per KV head, Nq queries and Nk
// keys in the whole problem.
var unitParams = []string{"H", "G", "Nq", "Nk", "bh0", "i0", "i1", "j0", "j1"}

// The flag bits of a kernel's flags field. Generate writes each as a
// WGSL constant (Flags) into every kernel with a flags field, and the
// kernels test the bits by those names only, so the Go that sets a bit
// and the WGSL that reads it cannot disagree.
const (
	// FlagRange hides every key outside backend.Problem.KeyRange (causal,
	// window, key lengths), from the ranges in vars. Scores applies it
	// (and FlagKeep) only for the masked stage.
	FlagRange   = 1 << iota
	FlagBias    // add the bias operand
	FlagKeep    // hide keys where the keep operand is 0
	FlagLSE     // write the LSE
	FlagSoftcap // cap the scaled scores at ±softcap
	FlagALiBi   // add −slope·|t − j| from vars
	FlagSink    // add exp(sink logit) from vars to the denominator
)

// Flags names each flag bit as the WGSL constant Generate writes.
var Flags = []struct {
	Name string
	Bit  int
}{
	{"F_RANGE", FlagRange}, {"F_BIAS", FlagBias}, {"F_KEEP", FlagKeep}, {"F_LSE", FlagLSE},
	{"F_SOFTCAP", FlagSoftcap}, {"F_ALIBI", FlagALiBi}, {"F_SINK", FlagSink},
}

// tileCheck checks a register-tiled kernel: each register block must
// divide its tile, or the tile's last rows or columns are never written.
func tileCheck(inner string) func(c map[string]int) error {
	return func(c map[string]int) error {
		if c["TM"]%c["RM"] != 0 || c["TN"]%c["RN"] != 0 {
			return fmt.Errorf("register block %d×%d does not divide tile %d×%d", c["RM"], c["RN"], c["TM"], c["TN"])
		}
		if c[inner] > c["TM"]*c["TN"] {
			return fmt.Errorf("%s = %d is larger than the tile", inner, c[inner])
		}
		return nil
	}
}

func tensorParams(x string) []string {
	return []string{x + "_b", x + "_h", x + "_r", x + "_base"}
}

func maskParams(x string) []string {
	return []string{x + "_b", x + "_h", x + "_r", x + "_c", x + "_base"}
}

func cat(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// Spec is the values of a kernel's constants, in Kernel.Consts order.
type Spec []int

// Key names a specialisation, for caching compiled pipelines.
func (k Kernel) Key(s Spec) string {
	var b strings.Builder
	b.WriteString(k.Name)
	for i, v := range s {
		if i < len(k.Consts) {
			fmt.Fprintf(&b, " %s=%d", k.Consts[i], v)
		} else {
			fmt.Fprintf(&b, " ?=%d", v) // never valid, but never mistaken for a valid key
		}
	}
	return b.String()
}

// ParamIndex is the position of field name in the Params uniform, or −1.
func (k Kernel) ParamIndex(name string) int { return slices.Index(k.Params, name) }

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
			return "", fmt.Errorf("shaders: %s: %w", k.Name, err)
		}
		out.Write(b)
	}
	return out.String(), nil
}

// Generate returns the complete WGSL of kernel k specialised by s: the
// constants, the Params struct and the bindings, then the file's body.
func (k Kernel) Generate(s Spec) (string, error) {
	if len(s) != len(k.Consts) {
		return "", fmt.Errorf("shaders: %s needs %d constants (%s), got %d", k.Name, len(k.Consts), strings.Join(k.Consts, ", "), len(s))
	}
	for i, v := range s {
		if v < 1 || v > 1<<24 {
			return "", fmt.Errorf("shaders: %s: constant %s = %d is out of range", k.Name, k.Consts[i], v)
		}
	}
	body, err := k.Body()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "// Code generated by package shaders from %s.wgsl (%s). DO NOT EDIT.\n\n", k.Name, k.Key(s))
	vals := map[string]int{}
	for i, c := range k.Consts {
		vals[c] = s[i]
		fmt.Fprintf(&b, "const %s: u32 = %du;\n", c, s[i])
	}
	if k.Check != nil {
		if err := k.Check(vals); err != nil {
			return "", fmt.Errorf("shaders: %s: %w", k.Key(s), err)
		}
	}
	for _, d := range k.Derived {
		v := d.F(vals)
		if v < 1 {
			return "", fmt.Errorf("shaders: %s: derived constant %s = %d from %s", k.Name, d.Name, v, k.Key(s))
		}
		vals[d.Name] = v
		fmt.Fprintf(&b, "const %s: u32 = %du;\n", d.Name, v)
	}
	if slices.Contains(k.Params, "flags") {
		b.WriteString("\n")
		for _, f := range Flags {
			fmt.Fprintf(&b, "const %s: u32 = %du;\n", f.Name, f.Bit)
		}
	}
	b.WriteString("\nstruct Params {\n")
	for _, f := range k.Params {
		fmt.Fprintf(&b, "    %s: u32,\n", f)
	}
	b.WriteString("}\n\n")
	for i, bd := range k.Bindings {
		switch bd.Access {
		case Uniform:
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<uniform> %s: Params;\n", i, bd.Name)
		case Read:
			elem := "f32"
			if c, ok := k.Vec4[bd.Name]; ok && vals[c]%4 == 0 {
				elem = "vec4<f32>"
			}
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read> %s: array<%s>;\n", i, bd.Name, elem)
		case ReadWrite:
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read_write> %s: array<f32>;\n", i, bd.Name)
		case ReadI32:
			fmt.Fprintf(&b, "@group(0) @binding(%d) var<storage, read> %s: array<i32>;\n", i, bd.Name)
		}
	}
	b.WriteString("\n")
	if k.Template {
		t, err := template.New(k.Name).Funcs(templateFuncs).Option("missingkey=error").Parse(body)
		if err != nil {
			return "", fmt.Errorf("shaders: %s: %w", k.Name, err)
		}
		var x strings.Builder
		if err := t.Execute(&x, vals); err != nil {
			return "", fmt.Errorf("shaders: %s: %w", k.Key(s), err)
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
