package shaders

// The kernels' Params: the uniform structs the host encodes (Encode) in
// the layout WGSL gives them (writeParams), field by field.

import (
	"encoding/binary"
	"fmt"
	"github.com/attn-go/attn/backend"
	"reflect"
	"strings"
	"sync"
	"unsafe"
)

// Flag is a set of the flag bits of a kernel's flags field.
type Flag uint32

// Unit locates a dispatch's share of the problem: heads bh0… of the
// flattened b·H+h index (count from the grid), query rows i0…i1−1 and keys
// j0…j1−1, with H heads, G query heads per KV head, Nq queries and Nk keys
// in the whole problem. Every kernel's Params starts with it.
type Unit struct {
	H, G, Nq, Nk uint32
	BH0          uint32 `wgsl:"bh0"`
	I0           uint32 `wgsl:"i0"`
	I1           uint32 `wgsl:"i1"`
	J0           uint32 `wgsl:"j0"`
	J1           uint32 `wgsl:"j1"`
}

// Tensor addresses one tensor operand x as the fields x_b, x_h, x_r and
// x_base (see Kernel).
type Tensor struct {
	B    uint32 `wgsl:"b"`
	H    uint32 `wgsl:"h"`
	R    uint32 `wgsl:"r"`
	Base uint32 `wgsl:"base"`
}

// Mask addresses a mask operand x as x_b, x_h, x_r, x_c and x_base: a
// Tensor with the stride of the key index.
type Mask struct {
	B    uint32 `wgsl:"b"`
	H    uint32 `wgsl:"h"`
	R    uint32 `wgsl:"r"`
	C    uint32 `wgsl:"c"`
	Base uint32 `wgsl:"base"`
}

// ScoresParams is scores.wgsl's Params: head-dim elements [d0, d1) of
// this dispatch, whether it is the first (it starts the sums) and the last
// (it carries them through the stage's steps), the scale, the softcap and
// the flags of the stage.
type ScoresParams struct {
	Unit
	D0      uint32  `wgsl:"d0"`
	D1      uint32  `wgsl:"d1"`
	First   uint32  `wgsl:"first"`
	Last    uint32  `wgsl:"last"`
	Scale   float32 `wgsl:"scale"`
	Softcap float32 `wgsl:"softcap"`
	Flags   Flag    `wgsl:"flags"`
	Q       Tensor  `wgsl:"q"`
	K       Tensor  `wgsl:"k"`
	S       Tensor  `wgsl:"s"`
	Bias    Mask    `wgsl:"bias"`
	Keep    Mask    `wgsl:"keep"`
}

// SoftmaxParams is softmax.wgsl's Params: nc chunks a row, the flags, the
// scores, the per-chunk statistics, the LSE and the keep-mask.
type SoftmaxParams struct {
	Unit
	NC    uint32 `wgsl:"nc"`
	Flags Flag   `wgsl:"flags"`
	S     Tensor `wgsl:"s"`
	St    Tensor `wgsl:"st"`
	LSE   Tensor `wgsl:"lse"`
	Keep  Mask   `wgsl:"keep"`
}

// ContextParams is context.wgsl's Params: the value head dim, whether
// this dispatch is the first over the keys (it writes O rather than adding
// to it), the weights, the values and the output.
type ContextParams struct {
	Unit
	Dv    uint32
	First uint32 `wgsl:"first"`
	P     Tensor `wgsl:"p"`
	V     Tensor `wgsl:"v"`
	O     Tensor `wgsl:"o"`
}

// FusedParams is the Params of fused.wgsl, fusedloop.wgsl and
// fuseddecode.wgsl (the three are interchangeable to the host). The unit's keys [j0, j1) are cut into
// splits of sk keys, one for each z of the grid, whose results go
// side by side: split z writes its O z·o_z and its LSE z·lse_z elements
// past split 0's. Seq and Table are where the per-sequence entries and
// the block table start in vars, Page and PerSeq the paged cache's page
// size and blocks a sequence (lib/seqs.wgsl, lib/pages.wgsl); Scl where
// the KV heads' scales of K and V start in vars (under FlagScales,
// lib/pages.wgsl's kv_scales); Blk, BlkSize and Blocks a block mask
// (under FlagBlocks).
type FusedParams struct {
	Unit
	Scale   float32 `wgsl:"scale"`
	Softcap float32 `wgsl:"softcap"`
	Flags   Flag    `wgsl:"flags"`
	SK      uint32  `wgsl:"sk"`
	OZ      uint32  `wgsl:"o_z"`
	LSEZ    uint32  `wgsl:"lse_z"`
	Seq     uint32  `wgsl:"seq"`
	Table   uint32  `wgsl:"table"`
	Page    uint32  `wgsl:"page"`
	PerSeq  uint32  `wgsl:"per_seq"`
	Scl     uint32  `wgsl:"scl"`
	Q       Tensor  `wgsl:"q"`
	K       Tensor  `wgsl:"k"`
	V       Tensor  `wgsl:"v"`
	O       Tensor  `wgsl:"o"`
	LSE     Tensor  `wgsl:"lse"`
	Bias    Mask    `wgsl:"bias"`
	Keep    Mask    `wgsl:"keep"`
	BlockMaskParams
}

// BlockMaskParams are the Params fields of a block mask (under
// FlagBlocks; lib/blocks.wgsl's block_on), the last of FusedParams and of
// the backward kernels' Params: Blk is where its entries start in vars
// (one i32 a block, nonzero on), BlkSize its block's rows and keys, and
// BlkB, BlkH, BlkR and BlkC its strides over [B, H, query blocks, key
// blocks].
type BlockMaskParams struct {
	Blk     uint32 `wgsl:"blk"`
	BlkSize uint32 `wgsl:"blk_size"`
	BlkB    uint32 `wgsl:"blk_b"`
	BlkH    uint32 `wgsl:"blk_h"`
	BlkR    uint32 `wgsl:"blk_r"`
	BlkC    uint32 `wgsl:"blk_c"`
}

// PackParams is pack.wgsl's Params: the dispatch's nw words, the
// elements [lo, hi) of them to write (counted from the first word's low
// half; the others keep what the word holds), and where in the bound
// windows the first word's elements are (src_off, in elements of src,
// modulo 2³²) and the first word is (o_off, in words of o). pack works on
// a flat range of elements, so it has no Unit.
type PackParams struct {
	NW     uint32 `wgsl:"nw"`
	Lo     uint32 `wgsl:"lo"`
	Hi     uint32 `wgsl:"hi"`
	SrcOff uint32 `wgsl:"src_off"`
	OOff   uint32 `wgsl:"o_off"`
}

// CopyParams is copy.wgsl's and copy8.wgsl's Params: the dispatch's n
// ranges, entries first … first+n−1 of its table (the vars binding, u32
// words: four an entry for copy.wgsl, o_off, src_off, lo, hi; five for
// copy8.wgsl, o_word, nw, d0, s0, n; as each says).
type CopyParams struct {
	N     uint32 `wgsl:"n"`
	First uint32 `wgsl:"first"`
}

// MergeParams is merge.wgsl's Params: the value head dim, the flags
// (FlagPackQ only), where the per-sequence entries start in vars, the
// number of partial results (parts) side by side in po and plse, p_z and
// plse_z elements apart, whether (o, lse) starts empty (init: the parts
// are the row's first keys) or holds a running result they fold into, the
// running result (o, lse) and the partial ones (po, plse).
type MergeParams struct {
	Unit
	Dv    uint32
	Flags Flag   `wgsl:"flags"`
	Seq   uint32 `wgsl:"seq"`
	Parts uint32 `wgsl:"parts"`
	Init  uint32 `wgsl:"init"`
	PZ    uint32 `wgsl:"po_z"`
	PLSEZ uint32 `wgsl:"plse_z"`
	O     Tensor `wgsl:"o"`
	LSE   Tensor `wgsl:"lse"`
	PO    Tensor `wgsl:"po"`
	PLSE  Tensor `wgsl:"plse"`
}

// Field is one field of a Params uniform as WGSL lays it out: its name,
// its WGSL type (u32, i32 or f32) and its byte offset, which is the Go
// struct's offset too (every field is a 4-byte scalar, so neither has
// padding).
type Field struct {
	Name   string
	Type   string
	Offset uintptr
}

// wgslType is the WGSL scalar of a Go kind, or "".
func wgslType(k reflect.Kind) string {
	switch k {
	case reflect.Uint32:
		return "u32"
	case reflect.Int32:
		return "i32"
	case reflect.Float32:
		return "f32"
	}
	return ""
}

// fields flattens a Params struct type: a field's WGSL name is its wgsl
// tag, or its Go name without one; the fields of a nested struct are
// prefix_name after the struct field's name, those of an embedded one
// keep their names.
func fields(t reflect.Type) ([]Field, error) {
	var out []Field
	var walk func(t reflect.Type, prefix string, base uintptr) error
	walk = func(t reflect.Type, prefix string, base uintptr) error {
		for i := range t.NumField() {
			f := t.Field(i)
			name := f.Tag.Get("wgsl")
			if name == "" {
				name = f.Name
			}
			if prefix != "" {
				name = prefix + "_" + name
			}
			if f.Type.Kind() == reflect.Struct {
				p := name
				if f.Anonymous {
					p = prefix
				}
				if err := walk(f.Type, p, base+f.Offset); err != nil {
					return err
				}
				continue
			}
			w := wgslType(f.Type.Kind())
			if w == "" || !f.IsExported() {
				return fmt.Errorf("field %s of %v is %v: a Params field is an exported uint32, int32 or float32", f.Name, t, f.Type)
			}
			out = append(out, Field{name, w, base + f.Offset})
		}
		return nil
	}
	if t == nil || t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("Params type %v is not a struct", t)
	}
	return out, walk(t, "", 0)
}

// ParamFields lists the fields of k's Params uniform in order.
func (k Kernel) ParamFields() ([]Field, error) {
	fs, err := fields(k.Params)
	if err != nil {
		return nil, backend.Wrapf(err, "shaders: %s", k.Name)
	}
	return fs, nil
}

// ParamNames lists the WGSL names of k's Params fields in order.
func (k Kernel) ParamNames() []string {
	fs, _ := k.ParamFields()
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return names
}

// Encode returns the bytes of p, which must be a value of k's Params
// type, as the uniform buffer holds them (little-endian, in field order;
// the caller pads the struct to 16 bytes). On a little-endian host a
// Params value is already laid out so in memory (flat), and Encode
// copies it, faster than encoding/binary's walk over its fields, which
// it takes otherwise.
func (k Kernel) Encode(p any) ([]byte, error) {
	t := reflect.TypeOf(p)
	if t != k.Params {
		return nil, fmt.Errorf("shaders: %s: Params of type %v, want %v", k.Name, t, k.Params)
	}
	if !flat(t) {
		return binary.Append(nil, binary.LittleEndian, p)
	}
	v := reflect.New(t)
	v.Elem().Set(reflect.ValueOf(p))
	return append([]byte(nil), unsafe.Slice((*byte)(v.UnsafePointer()), t.Size())...), nil
}

// flatTypes caches flat's answers, by reflect.Type.
var flatTypes sync.Map

// flat reports whether a value of Params type t lies in memory as
// Encode writes it: on a little-endian host, every field a 4-byte
// scalar (fields checks) at 4·i bytes for its index i, and nothing else.
func flat(t reflect.Type) bool {
	if v, ok := flatTypes.Load(t); ok {
		return v.(bool)
	}
	fs, err := fields(t)
	ok := err == nil && binary.NativeEndian.Uint16([]byte{1, 0}) == 1 && t.Size() == uintptr(4*len(fs))
	for i, f := range fs {
		ok = ok && f.Offset == uintptr(4*i)
	}
	flatTypes.Store(t, ok)
	return ok
}

// writeParams writes the WGSL struct Params of k.
func (k Kernel) writeParams(b *strings.Builder) error {
	fs, err := k.ParamFields()
	if err != nil {
		return err
	}
	b.WriteString("\nstruct Params {\n")
	for _, f := range fs {
		fmt.Fprintf(b, "    %s: %s,\n", f.Name, f.Type)
	}
	b.WriteString("}\n\n")
	return nil
}
