// Package spirvmix reads spirv-dis's text of a compute shader, finds its
// loops and counts, per loop body, the instructions that decide a
// kernel's speed on a GPU: float multiply-adds, loads from device memory
// and workgroup memory, barriers, and the checks and conversions the
// WGSL compiler (naga) adds. The counts are static: one pass over each
// block of a loop's body, both arms of every branch, so they describe the
// code the driver receives, not what a run executes.
//
// It reads text, not SPIR-V's binary, so that the same disassembly a
// person reads is what is counted, and its tests run on small checked-in
// fixtures without any tool installed.
package spirvmix

import (
	"fmt"
	"strings"
)

// Inst is one instruction of the disassembly: "%r = OpX a b" or "OpX a b".
// Args are the operands as written, quoted strings unquoted.
type Inst struct {
	Result string
	Op     string
	Args   []string
	Line   int
}

// Parse splits spirv-dis text into instructions. Comments (';' to the end
// of the line, outside strings) are dropped; a quoted string may hold
// spaces, escaped quotes and newlines (an OpSource's text does).
func Parse(text string) ([]Inst, error) {
	var (
		insts []Inst
		toks  []string
		tok   strings.Builder
		inTok bool
		line  = 1
		start = 1
	)
	flushTok := func() {
		if inTok {
			toks = append(toks, tok.String())
			tok.Reset()
			inTok = false
		}
	}
	flushInst := func() error {
		flushTok()
		if len(toks) == 0 {
			return nil
		}
		in := Inst{Line: start}
		rest := toks
		if len(toks) >= 2 && toks[1] == "=" {
			if len(toks) < 3 {
				return fmt.Errorf("line %d: %q has a result but no instruction", start, toks[0])
			}
			in.Result, rest = toks[0], toks[2:]
		}
		in.Op, in.Args = rest[0], rest[1:]
		if !strings.HasPrefix(in.Op, "Op") {
			return fmt.Errorf("line %d: %q is not an instruction", start, in.Op)
		}
		insts = append(insts, in)
		toks = nil
		return nil
	}
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case c == '"':
			// A quoted string is one token, whatever it holds.
			if !inTok {
				if len(toks) == 0 {
					start = line
				}
				inTok = true
			}
			i++
			for ; i < len(text) && text[i] != '"'; i++ {
				if text[i] == '\\' && i+1 < len(text) {
					i++
				}
				if text[i] == '\n' {
					line++
				}
				tok.WriteByte(text[i])
			}
			if i == len(text) {
				return nil, fmt.Errorf("line %d: unterminated string", start)
			}
		case c == ';':
			for i < len(text) && text[i] != '\n' {
				i++
			}
			i--
		case c == '\n':
			if err := flushInst(); err != nil {
				return nil, err
			}
			line++
		case c == ' ' || c == '\t' || c == '\r':
			flushTok()
		default:
			if !inTok {
				if len(toks) == 0 {
					start = line
				}
				inTok = true
			}
			tok.WriteByte(c)
		}
	}
	if err := flushInst(); err != nil {
		return nil, err
	}
	return insts, nil
}

// typeInfo is what the counts need of an OpType*: its kind, the width of
// a scalar, the lanes of a vector (or columns of a matrix, elements of an
// array), its element type, and a pointer's storage class.
type typeInfo struct {
	kind    string // "int", "float", "bool", "vector", "matrix", "array", "runtimearray", "struct", "pointer", "other"
	width   int    // bits, of an int or float
	count   int    // lanes of a vector, columns of a matrix, elements of an array (0: unknown)
	signed  bool   // of an int
	elem    string // element type id of a vector, matrix, array; pointee of a pointer
	storage string // storage class of a pointer
	members []string
}

// hasResultType says whether op's first operand, after "%r =", is the
// result's type. Every instruction with a result has one except these.
func hasResultType(op string) bool {
	if strings.HasPrefix(op, "OpType") {
		return false
	}
	switch op {
	case "OpLabel", "OpExtInstImport", "OpString", "OpDecorationGroup":
		return false
	}
	return true
}
