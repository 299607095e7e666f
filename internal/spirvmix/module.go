package spirvmix

import (
	"fmt"
	"strconv"
	"strings"
)

// block is one basic block: its label, its instructions (OpLabel
// excluded), its successors, and a loop header's merge and continue.
type block struct {
	label      string
	insts      []Inst
	succ       []string
	loopMerge  string
	loopCont   string
	isLoopHead bool
}

// function is one OpFunction's blocks in the order written.
type function struct {
	id     string
	blocks []*block
	byID   map[string]*block
}

// module is a parsed shader: its types, the result type of every value,
// the constants' values, its functions and its entry points.
type module struct {
	insts   []Inst
	types   map[string]typeInfo
	valType map[string]string // result id → its type id
	consts  map[string]int64  // integer constants
	extSets map[string]string // OpExtInstImport id → set name
	vars    map[string]string // OpVariable id → storage class
	used    map[string]bool   // ids some instruction takes as an operand
	funcs   []*function
	byFunc  map[string]*function
	entries []EntryPoint
}

// EntryPoint is an OpEntryPoint with its workgroup size (OpExecutionMode
// LocalSize), 0s where none is given.
type EntryPoint struct {
	Name      string `json:"name"`
	Func      string `json:"func"`
	LocalSize [3]int `json:"local_size"`
}

func newModule(insts []Inst) (*module, error) {
	m := &module{
		insts:   insts,
		types:   map[string]typeInfo{},
		valType: map[string]string{},
		consts:  map[string]int64{},
		extSets: map[string]string{},
		vars:    map[string]string{},
		used:    map[string]bool{},
		byFunc:  map[string]*function{},
	}
	var (
		fn  *function
		cur *block
	)
	for _, in := range insts {
		if in.Result != "" && hasResultType(in.Op) && len(in.Args) > 0 {
			m.valType[in.Result] = in.Args[0]
		}
		switch in.Op {
		case "OpEntryPoint":
			if len(in.Args) >= 3 {
				m.entries = append(m.entries, EntryPoint{Name: in.Args[2], Func: in.Args[1]})
			}
		case "OpExecutionMode":
			if len(in.Args) >= 5 && in.Args[1] == "LocalSize" {
				for i := range m.entries {
					if m.entries[i].Func == in.Args[0] {
						for k := range 3 {
							m.entries[i].LocalSize[k], _ = strconv.Atoi(in.Args[2+k])
						}
					}
				}
			}
		case "OpExtInstImport":
			if len(in.Args) >= 1 {
				m.extSets[in.Result] = in.Args[0]
			}
		case "OpTypeInt":
			if len(in.Args) >= 2 {
				w, _ := strconv.Atoi(in.Args[0])
				m.types[in.Result] = typeInfo{kind: "int", width: w, signed: in.Args[1] == "1"}
			}
		case "OpTypeFloat":
			if len(in.Args) >= 1 {
				w, _ := strconv.Atoi(in.Args[0])
				m.types[in.Result] = typeInfo{kind: "float", width: w}
			}
		case "OpTypeBool":
			m.types[in.Result] = typeInfo{kind: "bool", width: 32}
		case "OpTypeVector", "OpTypeMatrix":
			if len(in.Args) >= 2 {
				n, _ := strconv.Atoi(in.Args[1])
				m.types[in.Result] = typeInfo{kind: strings.ToLower(in.Op[len("OpType"):]), elem: in.Args[0], count: n}
			}
		case "OpTypeArray":
			if len(in.Args) >= 2 {
				m.types[in.Result] = typeInfo{kind: "array", elem: in.Args[0], count: int(m.consts[in.Args[1]])}
			}
		case "OpTypeRuntimeArray":
			if len(in.Args) >= 1 {
				m.types[in.Result] = typeInfo{kind: "runtimearray", elem: in.Args[0]}
			}
		case "OpTypeStruct":
			m.types[in.Result] = typeInfo{kind: "struct", members: in.Args}
		case "OpTypePointer":
			if len(in.Args) >= 2 {
				m.types[in.Result] = typeInfo{kind: "pointer", storage: in.Args[0], elem: in.Args[1]}
			}
		case "OpConstant":
			if len(in.Args) >= 2 {
				if v, err := strconv.ParseInt(in.Args[1], 0, 64); err == nil {
					m.consts[in.Result] = v
				}
			}
		case "OpVariable":
			if len(in.Args) >= 2 {
				m.vars[in.Result] = in.Args[1]
			}
		case "OpFunction":
			if fn != nil {
				return nil, fmt.Errorf("line %d: OpFunction inside function %s", in.Line, fn.id)
			}
			fn = &function{id: in.Result, byID: map[string]*block{}}
		case "OpFunctionEnd":
			if fn == nil {
				return nil, fmt.Errorf("line %d: OpFunctionEnd outside a function", in.Line)
			}
			m.funcs = append(m.funcs, fn)
			m.byFunc[fn.id] = fn
			fn, cur = nil, nil
		case "OpLabel":
			if fn == nil {
				return nil, fmt.Errorf("line %d: OpLabel outside a function", in.Line)
			}
			cur = &block{label: in.Result}
			fn.blocks = append(fn.blocks, cur)
			fn.byID[cur.label] = cur
		default:
			if cur == nil {
				// The function's parameters come before its first block;
				// nothing is counted there.
				continue
			}
			cur.insts = append(cur.insts, in)
			switch in.Op {
			case "OpLoopMerge":
				if len(in.Args) >= 2 {
					cur.isLoopHead, cur.loopMerge, cur.loopCont = true, in.Args[0], in.Args[1]
				}
			case "OpBranch":
				cur.succ = append(cur.succ, in.Args...)
			case "OpBranchConditional":
				if len(in.Args) >= 3 {
					cur.succ = append(cur.succ, in.Args[1], in.Args[2])
				}
			case "OpSwitch":
				// OpSwitch %sel %default lit %label lit %label ...
				if len(in.Args) >= 2 {
					cur.succ = append(cur.succ, in.Args[1])
					for i := 3; i < len(in.Args); i += 2 {
						cur.succ = append(cur.succ, in.Args[i])
					}
				}
			}
		}
	}
	if fn != nil {
		return nil, fmt.Errorf("function %s has no OpFunctionEnd", fn.id)
	}
	for _, in := range insts {
		for _, a := range in.Args {
			if strings.HasPrefix(a, "%") {
				m.used[a] = true
			}
		}
	}
	return m, nil
}

// lanes is how many scalars a value of type t holds: a vector's lanes, a
// matrix's columns times their lanes, 1 for a scalar.
func (m *module) lanes(t string) int {
	ti, ok := m.types[t]
	if !ok {
		return 1
	}
	switch ti.kind {
	case "vector":
		return ti.count
	case "matrix":
		return ti.count * m.lanes(ti.elem)
	}
	return 1
}

// size is the bytes of a value of type t as loaded, without padding (0
// where unknown: a runtime array, a type not seen).
func (m *module) size(t string) int {
	ti, ok := m.types[t]
	if !ok {
		return 0
	}
	switch ti.kind {
	case "int", "float":
		return ti.width / 8
	case "bool":
		return 4
	case "vector", "matrix", "array":
		return ti.count * m.size(ti.elem)
	case "struct":
		n := 0
		for _, mt := range ti.members {
			n += m.size(mt)
		}
		return n
	}
	return 0
}

// storage is the storage class a pointer value points into ("" if p is
// not a pointer the module declares).
func (m *module) storage(p string) string {
	if ti, ok := m.types[m.valType[p]]; ok && ti.kind == "pointer" {
		return ti.storage
	}
	return ""
}

// isCounterType says whether t is vec2<u32>, the type of naga's loop
// bound counter.
func (m *module) isCounterType(t string) bool {
	ti := m.types[t]
	if ti.kind != "vector" || ti.count != 2 {
		return false
	}
	e := m.types[ti.elem]
	return e.kind == "int" && e.width == 32 && !e.signed
}

// extInst names an OpExtInst's instruction when its set is GLSL.std.450
// ("" otherwise): OpExtInst %type %set Name args...
func (m *module) extInst(in Inst) string {
	if in.Op != "OpExtInst" || len(in.Args) < 3 {
		return ""
	}
	if m.extSets[in.Args[1]] != "GLSL.std.450" {
		return ""
	}
	return in.Args[2]
}
