package spirvmix

import (
	"fmt"
	"slices"
	"strings"
)

// Counts is the static instruction mix of some blocks: each instruction
// counted once, whichever way the branches go.
type Counts struct {
	// Instrs counts every instruction but labels, merge declarations,
	// variable declarations and unconditional branches. It includes naga's loads and stores of
	// function-local variables, which the driver keeps in registers.
	Instrs int `json:"instrs"`
	// FMA counts float multiply-add work a lane at a time: each lane of
	// OpFAdd, OpFSub, OpFMul, OpVectorTimesScalar and GLSL's Fma counts
	// one, an OpDot one for each lane of its operands.
	FMA int `json:"fma"`
	// GlobalLoads and GlobalLoadBytes: OpLoads from StorageBuffer memory
	// and the bytes of the values they load; GlobalStores likewise.
	GlobalLoads      int `json:"global_loads"`
	GlobalLoadBytes  int `json:"global_load_bytes"`
	GlobalStores     int `json:"global_stores"`
	GlobalStoreBytes int `json:"global_store_bytes"`
	// UniformLoads: OpLoads from Uniform memory (a kernel's parameters).
	UniformLoads int `json:"uniform_loads"`
	// WorkgroupLoads and WorkgroupStores: OpLoad and OpStore of
	// Workgroup memory.
	WorkgroupLoads  int `json:"workgroup_loads"`
	WorkgroupStores int `json:"workgroup_stores"`
	// DeadLoads: OpLoads from storage, uniform or workgroup memory whose
	// result no instruction uses, which a driver drops: not counted as
	// loads (gogpu/naga writes a load again at each use of a let bound
	// to one, and one of an element before a store to it).
	DeadLoads int `json:"dead_loads,omitempty"`
	// Barriers: OpControlBarrier.
	Barriers int `json:"barriers"`
	// Subgroup: OpGroupNonUniform* (subgroupShuffleXor, subgroupMax …),
	// an operation a count whatever its lanes.
	Subgroup int `json:"subgroup,omitempty"`
	// Counters: naga's loop-bounding counters (a vec2<u32> loaded,
	// compared with zero, stepped and stored back every iteration), and
	// CounterInstrs the instructions they take.
	Counters      int `json:"counters"`
	CounterInstrs int `json:"counter_instrs"`
	// Clamps: GLSL UMin or SMin whose result indexes an access chain or a
	// vector: naga's bounds checks. UMins counts every UMin, clamp or not.
	Clamps int `json:"clamps"`
	UMins  int `json:"umins"`
	// ClampedIn counts the clamps by the storage class of the array
	// they index ("vector" for a vector's lane).
	ClampedIn map[string]int `json:"clamped_in,omitempty"`
	// Conversions: OpFConvert, OpConvert*, OpUConvert, OpSConvert and
	// GLSL's pack and unpack instructions (f16 pairs, 8-bit quads), an
	// instruction a count whatever its lanes.
	Conversions int `json:"conversions"`
	// Calls: OpFunctionCall. In a loop's counts each callee's own counts
	// are added once for each call.
	Calls int `json:"calls"`
}

func (c *Counts) add(o Counts) {
	c.Instrs += o.Instrs
	c.FMA += o.FMA
	c.GlobalLoads += o.GlobalLoads
	c.GlobalLoadBytes += o.GlobalLoadBytes
	c.GlobalStores += o.GlobalStores
	c.GlobalStoreBytes += o.GlobalStoreBytes
	c.UniformLoads += o.UniformLoads
	c.WorkgroupLoads += o.WorkgroupLoads
	c.WorkgroupStores += o.WorkgroupStores
	c.DeadLoads += o.DeadLoads
	c.Barriers += o.Barriers
	c.Subgroup += o.Subgroup
	c.Counters += o.Counters
	c.CounterInstrs += o.CounterInstrs
	c.Clamps += o.Clamps
	for k, v := range o.ClampedIn {
		if c.ClampedIn == nil {
			c.ClampedIn = map[string]int{}
		}
		c.ClampedIn[k] += v
	}
	c.UMins += o.UMins
	c.Conversions += o.Conversions
	c.Calls += o.Calls
}

// Loop is one loop of a function (an OpLoopMerge header and the blocks
// reachable from it before its merge block). Counts covers its own
// blocks, not those of the loops nested in it, plus each callee of a
// call in them once: one iteration's code, read statically.
type Loop struct {
	// Name is L1, L2, … in the order the headers are written.
	Name   string `json:"name"`
	Header string `json:"header"`
	Func   string `json:"func"`
	// Parent is the Name of the loop it is nested in ("" at the top of
	// its function); Depth is 1 at the top.
	Parent string `json:"parent,omitempty"`
	Depth  int    `json:"depth"`
	// Inner says no loop is nested in it.
	Inner  bool   `json:"inner"`
	Blocks int    `json:"blocks"`
	Counts Counts `json:"counts"`
}

// Report is a module's mix: its entry points, the whole module's static
// counts (every block of every function once, calls not expanded) and
// its loops, the innermost of each nest first.
type Report struct {
	Entries []EntryPoint `json:"entry_points"`
	Funcs   int          `json:"functions"`
	Module  Counts       `json:"module"`
	// FAddFMul is the module's OpFAdd and OpFMul instructions (not lanes).
	FAddFMul int    `json:"fadd_fmul"`
	Loops    []Loop `json:"loops"`
}

// Analyze parses spirv-dis text and counts its mix.
func Analyze(text string) (*Report, error) {
	insts, err := Parse(text)
	if err != nil {
		return nil, err
	}
	m, err := newModule(insts)
	if err != nil {
		return nil, err
	}
	return m.report()
}

// conversionOps are the core conversions; conversionExt the GLSL.std.450
// ones (by prefix: Pack*, Unpack*).
var conversionOps = map[string]bool{
	"OpFConvert": true, "OpConvertFToU": true, "OpConvertFToS": true,
	"OpConvertSToF": true, "OpConvertUToF": true, "OpUConvert": true,
	"OpSConvert": true, "OpQuantizeToF16": true,
}

// uncounted are instructions that are structure or declarations, not
// work.
var uncounted = map[string]bool{
	"OpLoopMerge": true, "OpSelectionMerge": true, "OpBranch": true,
	"OpLine": true, "OpNoLine": true, "OpVariable": true,
}

// indexUses is every id a function uses as an index, of an access chain
// (after its base) or a dynamic vector extract or insert, with the
// storage class of the array it indexes ("vector" for a vector's lane).
func (m *module) indexUses(f *function) map[string]string {
	uses := map[string]string{}
	use := func(id, class string) {
		if _, ok := uses[id]; !ok {
			uses[id] = class
		}
	}
	for _, b := range f.blocks {
		for _, in := range b.insts {
			switch in.Op {
			case "OpAccessChain", "OpInBoundsAccessChain", "OpPtrAccessChain", "OpInBoundsPtrAccessChain":
				if len(in.Args) > 2 {
					class := m.types[in.Args[0]].storage
					for _, a := range in.Args[2:] {
						use(a, class)
					}
				}
			case "OpVectorExtractDynamic":
				if len(in.Args) > 2 {
					use(in.Args[2], "vector")
				}
			case "OpVectorInsertDynamic":
				if len(in.Args) > 3 {
					use(in.Args[3], "vector")
				}
			}
		}
	}
	return uses
}

// count is one instruction's share of the mix (its counter share is
// found per loop, by counters).
func (m *module) count(in Inst, index map[string]string) Counts {
	var c Counts
	if uncounted[in.Op] {
		return c
	}
	c.Instrs = 1
	resType := ""
	if len(in.Args) > 0 {
		resType = in.Args[0]
	}
	switch in.Op {
	case "OpFAdd", "OpFSub", "OpFMul", "OpVectorTimesScalar":
		c.FMA = m.lanes(resType)
	case "OpDot":
		if len(in.Args) > 1 {
			c.FMA = m.lanes(m.valType[in.Args[1]])
		}
	case "OpLoad":
		if len(in.Args) > 1 {
			if class := m.storage(in.Args[1]); !m.used[in.Result] && (class == "StorageBuffer" || class == "Uniform" || class == "Workgroup") {
				c.DeadLoads = 1
				break
			}
			switch m.storage(in.Args[1]) {
			case "StorageBuffer":
				c.GlobalLoads, c.GlobalLoadBytes = 1, m.size(resType)
			case "Uniform":
				c.UniformLoads = 1
			case "Workgroup":
				c.WorkgroupLoads = 1
			}
		}
	case "OpStore":
		if len(in.Args) > 1 {
			switch m.storage(in.Args[0]) {
			case "StorageBuffer":
				c.GlobalStores, c.GlobalStoreBytes = 1, m.size(m.valType[in.Args[1]])
			case "Workgroup":
				c.WorkgroupStores = 1
			}
		}
	case "OpControlBarrier":
		c.Barriers = 1
	case "OpFunctionCall":
		c.Calls = 1
	case "OpExtInst":
		switch name := m.extInst(in); {
		case name == "Fma":
			c.FMA = m.lanes(resType)
		case name == "UMin" || name == "SMin":
			if name == "UMin" {
				c.UMins = 1
			}
			if class, ok := index[in.Result]; ok {
				c.Clamps = 1
				c.ClampedIn = map[string]int{class: 1}
			}
		case strings.HasPrefix(name, "Pack") || strings.HasPrefix(name, "Unpack"):
			c.Conversions = 1
		}
	default:
		if conversionOps[in.Op] {
			c.Conversions = 1
		}
		if strings.HasPrefix(in.Op, "OpGroupNonUniform") {
			c.Subgroup = 1
		}
	}
	return c
}

// blockCounts sums the mix of a block's instructions.
func (m *module) blockCounts(b *block, index map[string]string) Counts {
	var c Counts
	for _, in := range b.insts {
		c.add(m.count(in, index))
	}
	return c
}

// body is the blocks of the loop headed by h: those reachable from h
// without passing its merge block. In the structured control flow a WGSL
// compiler writes, a loop is left only through its merge (a break), a
// return, or the back edge to h.
func body(f *function, h *block) map[string]bool {
	in := map[string]bool{h.label: true}
	work := []*block{h}
	for len(work) > 0 {
		b := work[len(work)-1]
		work = work[:len(work)-1]
		for _, s := range b.succ {
			if s == h.loopMerge || in[s] {
				continue
			}
			if nb := f.byID[s]; nb != nil {
				in[s] = true
				work = append(work, nb)
			}
		}
	}
	return in
}

// counters finds naga's loop-bounding counters among insts, the
// instructions of loop h's own blocks: an OpLoad of a Function variable
// of type vec2<u32> whose value, through the instructions that use it,
// reaches an OpAll and a conditional branch to h's merge block. It
// returns how many and the instructions they take (the load, the test,
// the step and the store back).
func (m *module) counters(insts []Inst, merge string) (n, instrs int) {
	users := map[string][]int{}
	for i, in := range insts {
		for _, a := range in.Args {
			if strings.HasPrefix(a, "%") {
				users[a] = append(users[a], i)
			}
		}
	}
	for i, in := range insts {
		if in.Op != "OpLoad" || len(in.Args) < 2 || !m.isCounterType(in.Args[0]) || m.vars[in.Args[1]] != "Function" {
			continue
		}
		slice := map[int]bool{i: true}
		work := []string{in.Result}
		for len(work) > 0 {
			id := work[len(work)-1]
			work = work[:len(work)-1]
			for _, u := range users[id] {
				if slice[u] {
					continue
				}
				slice[u] = true
				if r := insts[u].Result; r != "" {
					work = append(work, r)
				}
			}
		}
		var all, exits bool
		for j := range slice {
			switch insts[j].Op {
			case "OpAll":
				all = true
			case "OpBranchConditional":
				exits = exits || slices.Contains(insts[j].Args[1:], merge)
			}
		}
		if all && exits {
			n++
			instrs += len(slice)
		}
	}
	return n, instrs
}

// funcTotal is the static mix of every block of f, each call's callee's
// total added once a call (visiting guards against a recursion SPIR-V
// forbids anyway).
func (m *module) funcTotal(f *function, memo map[string]*Counts, visiting map[string]bool) Counts {
	if c, ok := memo[f.id]; ok {
		return *c
	}
	visiting[f.id] = true
	defer delete(visiting, f.id)
	index := m.indexUses(f)
	var c Counts
	for _, b := range f.blocks {
		c.add(m.blockCounts(b, index))
		c.add(m.callees(b.insts, memo, visiting))
	}
	for _, h := range f.blocks {
		if h.isLoopHead {
			n, k := m.counters(ownInsts(f, h, nil), h.loopMerge)
			c.Counters += n
			c.CounterInstrs += k
		}
	}
	memo[f.id] = &c
	return c
}

// callees sums, for each OpFunctionCall among insts, its callee's total.
func (m *module) callees(insts []Inst, memo map[string]*Counts, visiting map[string]bool) Counts {
	var c Counts
	for _, in := range insts {
		if in.Op != "OpFunctionCall" || len(in.Args) < 2 {
			continue
		}
		if g := m.byFunc[in.Args[1]]; g != nil && !visiting[g.id] {
			c.add(m.funcTotal(g, memo, visiting))
		}
	}
	return c
}

// ownInsts is the instructions of the blocks of h's loop that are not in
// a loop nested in it (nested: the blocks of those loops; nil to take
// them all).
func ownInsts(f *function, h *block, nested map[string]bool) []Inst {
	in := body(f, h)
	var out []Inst
	for _, b := range f.blocks {
		if in[b.label] && !nested[b.label] {
			out = append(out, b.insts...)
		}
	}
	return out
}

func (m *module) report() (*Report, error) {
	r := &Report{Entries: m.entries, Funcs: len(m.funcs)}
	for _, in := range m.insts {
		if in.Op == "OpFAdd" || in.Op == "OpFMul" {
			r.FAddFMul++
		}
	}
	memo := map[string]*Counts{}
	type loopInfo struct {
		Loop
		head   *block
		blocks map[string]bool
		kids   []int
	}
	for _, f := range m.funcs {
		index := m.indexUses(f)
		for _, b := range f.blocks {
			r.Module.add(m.blockCounts(b, index))
		}
		// The loops of f, in the order their headers are written.
		var loops []*loopInfo
		for _, h := range f.blocks {
			if h.isLoopHead {
				if f.byID[h.loopMerge] == nil {
					return nil, fmt.Errorf("loop %s of function %s: merge block %s not found", h.label, f.id, h.loopMerge)
				}
				loops = append(loops, &loopInfo{Loop: Loop{Header: h.label, Func: f.id}, head: h, blocks: body(f, h)})
			}
		}
		// A loop's parent is the smallest other loop whose body holds its
		// header.
		parent := make([]int, len(loops))
		for i, l := range loops {
			parent[i] = -1
			for j, o := range loops {
				if i != j && o.blocks[l.Header] && (parent[i] < 0 || len(o.blocks) < len(loops[parent[i]].blocks)) {
					parent[i] = j
				}
			}
		}
		for i := range loops {
			if p := parent[i]; p >= 0 {
				loops[p].kids = append(loops[p].kids, i)
			}
		}
		base := len(r.Loops)
		for i, l := range loops {
			l.Name = fmt.Sprintf("L%d", base+i+1)
		}
		for i, l := range loops {
			l.Depth = 1
			for p := parent[i]; p >= 0; p = parent[p] {
				l.Depth++
			}
			if parent[i] >= 0 {
				l.Parent = loops[parent[i]].Name
			}
			l.Inner = len(l.kids) == 0
			nested := map[string]bool{}
			for _, k := range l.kids {
				for b := range loops[k].blocks {
					nested[b] = true
				}
			}
			for b := range l.blocks {
				if !nested[b] {
					l.Blocks++
					l.Counts.add(m.blockCounts(f.byID[b], index))
				}
			}
			own := ownInsts(f, l.head, nested)
			l.Counts.add(m.callees(own, memo, map[string]bool{f.id: true}))
			n, k := m.counters(own, l.head.loopMerge)
			l.Counts.Counters += n
			l.Counts.CounterInstrs += k
			r.Module.Counters += n
			r.Module.CounterInstrs += k
		}
		// Innermost first: each nest in post-order, nests in written
		// order.
		var visit func(i int)
		visit = func(i int) {
			for _, k := range loops[i].kids {
				visit(k)
			}
			r.Loops = append(r.Loops, loops[i].Loop)
		}
		for i := range loops {
			if parent[i] < 0 {
				visit(i)
			}
		}
	}
	return r, nil
}
