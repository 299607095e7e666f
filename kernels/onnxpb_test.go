package kernels_test

// A reader for the few protobuf messages of ONNX's node tests (onnx.proto,
// proto2): a ModelProto holding one node, and the TensorProtos of its
// inputs and outputs. It decodes the wire format with protowire and knows
// only the fields these files use, so the vendored files stay byte for
// byte as ONNX ships them and no generated onnx.pb.go is needed.

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/attn-go/attn/kernels"
)

// The TensorProto.DataType values the test data uses.
const (
	onnxFloat   = 1
	onnxInt64   = 7
	onnxBool    = 9
	onnxFloat16 = 10
)

// onnxModel is the part of a ModelProto a node test needs: its graph's one
// node and the names of the graph's inputs and outputs, which give the
// order of the test data's input_N.pb and output_N.pb.
type onnxModel struct {
	opType                string
	nodeInputs            []string // by the operator's input position; "" is an absent optional input
	nodeOutputs           []string // likewise for outputs
	ints                  map[string]int64
	floats                map[string]float32
	graphIn, graphOut     []string
	opsetVersion, opNodes int
}

// onnxTensor is a decoded TensorProto. Float data is in F32, float16
// data in F16 (its bits), int64 data in I64, bool data in Bool.
type onnxTensor struct {
	name  string
	dims  []int
	dtype int32
	F32   []float32
	F16   []uint16
	I64   []int64
	Bool  []bool
}

// floats is a FLOAT or FLOAT16 tensor's values as float32 (float16
// widened exactly).
func (t *onnxTensor) floats() []float32 {
	if t.dtype != onnxFloat16 {
		return t.F32
	}
	out := make([]float32, len(t.F16))
	for i, b := range t.F16 {
		out[i] = kernels.Float16.Decode(b)
	}
	return out
}

// wireField is one field of a message: its number and, by wire type, its
// bytes (length-delimited) or its value (varint, fixed32, fixed64).
type wireField struct {
	num   protowire.Number
	typ   protowire.Type
	bytes []byte
	val   uint64
}

// wireFields splits a message into its fields.
func wireFields(b []byte) ([]wireField, error) {
	var out []wireField
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		b = b[n:]
		f := wireField{num: num, typ: typ}
		switch typ {
		case protowire.VarintType:
			f.val, n = protowire.ConsumeVarint(b)
		case protowire.Fixed32Type:
			var v uint32
			v, n = protowire.ConsumeFixed32(b)
			f.val = uint64(v)
		case protowire.Fixed64Type:
			f.val, n = protowire.ConsumeFixed64(b)
		case protowire.BytesType:
			f.bytes, n = protowire.ConsumeBytes(b)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		if n < 0 {
			return nil, fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		out = append(out, f)
	}
	return out, nil
}

// varints reads a repeated integer field that may be packed (one
// length-delimited field) or not (one varint per element).
func varints(f wireField) ([]uint64, error) {
	if f.typ == protowire.VarintType {
		return []uint64{f.val}, nil
	}
	if f.typ != protowire.BytesType {
		return nil, fmt.Errorf("field %d: wire type %d for a repeated integer", f.num, f.typ)
	}
	var out []uint64
	for b := f.bytes; len(b) > 0; {
		v, n := protowire.ConsumeVarint(b)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		out = append(out, v)
		b = b[n:]
	}
	return out, nil
}

// parseONNXModel decodes a ModelProto with exactly one node in its graph.
//
//	ModelProto  7: graph, 8: opset_import (OperatorSetIdProto 2: version)
//	GraphProto  1: node, 11: input, 12: output (ValueInfoProto 1: name)
//	NodeProto   1: input, 2: output, 4: op_type, 5: attribute
//	AttributeProto 1: name, 2: f, 3: i, 20: type
func parseONNXModel(b []byte) (*onnxModel, error) {
	fields, err := wireFields(b)
	if err != nil {
		return nil, fmt.Errorf("ModelProto: %w", err)
	}
	m := &onnxModel{ints: map[string]int64{}, floats: map[string]float32{}}
	var graph []byte
	for _, f := range fields {
		switch {
		case f.num == 7 && f.typ == protowire.BytesType:
			graph = f.bytes
		case f.num == 8 && f.typ == protowire.BytesType:
			opset, err := wireFields(f.bytes)
			if err != nil {
				return nil, fmt.Errorf("opset_import: %w", err)
			}
			for _, o := range opset {
				if o.num == 2 && o.typ == protowire.VarintType {
					m.opsetVersion = int(o.val)
				}
			}
		}
	}
	if graph == nil {
		return nil, fmt.Errorf("ModelProto has no graph")
	}
	gf, err := wireFields(graph)
	if err != nil {
		return nil, fmt.Errorf("GraphProto: %w", err)
	}
	name := func(vi []byte) (string, error) {
		fs, err := wireFields(vi)
		if err != nil {
			return "", err
		}
		for _, f := range fs {
			if f.num == 1 && f.typ == protowire.BytesType {
				return string(f.bytes), nil
			}
		}
		return "", fmt.Errorf("ValueInfoProto has no name")
	}
	for _, f := range gf {
		if f.typ != protowire.BytesType {
			continue
		}
		switch f.num {
		case 1:
			m.opNodes++
			if err := m.parseNode(f.bytes); err != nil {
				return nil, fmt.Errorf("NodeProto: %w", err)
			}
		case 11, 12:
			n, err := name(f.bytes)
			if err != nil {
				return nil, fmt.Errorf("graph input/output: %w", err)
			}
			if f.num == 11 {
				m.graphIn = append(m.graphIn, n)
			} else {
				m.graphOut = append(m.graphOut, n)
			}
		}
	}
	if m.opNodes != 1 {
		return nil, fmt.Errorf("graph has %d nodes, want 1", m.opNodes)
	}
	return m, nil
}

func (m *onnxModel) parseNode(b []byte) error {
	fields, err := wireFields(b)
	if err != nil {
		return err
	}
	for _, f := range fields {
		if f.typ != protowire.BytesType {
			continue
		}
		switch f.num {
		case 1:
			m.nodeInputs = append(m.nodeInputs, string(f.bytes))
		case 2:
			m.nodeOutputs = append(m.nodeOutputs, string(f.bytes))
		case 4:
			m.opType = string(f.bytes)
		case 5:
			if err := m.parseAttr(f.bytes); err != nil {
				return fmt.Errorf("AttributeProto: %w", err)
			}
		}
	}
	return nil
}

// The AttributeProto.AttributeType values of the scalar attributes.
const (
	onnxAttrFloat = 1
	onnxAttrInt   = 2
)

func (m *onnxModel) parseAttr(b []byte) error {
	fields, err := wireFields(b)
	if err != nil {
		return err
	}
	var (
		name string
		typ  uint64
		f32  float32
		i64  int64
	)
	for _, f := range fields {
		switch {
		case f.num == 1 && f.typ == protowire.BytesType:
			name = string(f.bytes)
		case f.num == 2 && f.typ == protowire.Fixed32Type:
			f32 = math.Float32frombits(uint32(f.val))
		case f.num == 3 && f.typ == protowire.VarintType:
			i64 = int64(f.val)
		case f.num == 20 && f.typ == protowire.VarintType:
			typ = f.val
		}
	}
	switch typ {
	case onnxAttrFloat:
		m.floats[name] = f32
	case onnxAttrInt:
		m.ints[name] = i64
	default:
		return fmt.Errorf("attribute %q has type %d; this reader knows only FLOAT (1) and INT (2)", name, typ)
	}
	return nil
}

// parseONNXTensor decodes a TensorProto whose data is in raw_data, as
// ONNX's numpy_helper.from_array writes every tensor of the node tests:
//
//	1: dims, 2: data_type, 8: name, 9: raw_data (little-endian; a bool
//	is one byte)
//
// The typed fields (float_data, int32_data, int64_data) are refused, not
// misread.
func parseONNXTensor(b []byte) (*onnxTensor, error) {
	fields, err := wireFields(b)
	if err != nil {
		return nil, fmt.Errorf("TensorProto: %w", err)
	}
	t := &onnxTensor{}
	var raw []byte
	for _, f := range fields {
		switch f.num {
		case 1:
			ds, err := varints(f)
			if err != nil {
				return nil, fmt.Errorf("dims: %w", err)
			}
			for _, d := range ds {
				if int64(d) < 0 {
					return nil, fmt.Errorf("negative dimension %d", int64(d))
				}
				t.dims = append(t.dims, int(d))
			}
		case 2:
			t.dtype = int32(f.val)
		case 4, 5, 7:
			return nil, fmt.Errorf("TensorProto field %d: this reader takes data only from raw_data (9)", f.num)
		case 8:
			t.name = string(f.bytes)
		case 9:
			raw = f.bytes
		}
	}
	n := 1
	for _, d := range t.dims {
		n *= d
	}
	size := map[int32]int{onnxFloat: 4, onnxInt64: 8, onnxBool: 1, onnxFloat16: 2}[t.dtype]
	if size == 0 {
		return nil, fmt.Errorf("tensor %q has data type %d; this reader knows FLOAT, INT64, BOOL and FLOAT16", t.name, t.dtype)
	}
	if len(raw) != n*size {
		return nil, fmt.Errorf("tensor %q of dims %v and data type %d has %d bytes of raw_data, want %d", t.name, t.dims, t.dtype, len(raw), n*size)
	}
	for i := 0; i < n; i++ {
		switch t.dtype {
		case onnxFloat:
			t.F32 = append(t.F32, math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:])))
		case onnxInt64:
			t.I64 = append(t.I64, int64(binary.LittleEndian.Uint64(raw[8*i:])))
		case onnxBool:
			t.Bool = append(t.Bool, raw[i] != 0)
		case onnxFloat16:
			t.F16 = append(t.F16, binary.LittleEndian.Uint16(raw[2*i:]))
		}
	}
	return t, nil
}

// TestONNXTensorReader checks the reader on TensorProtos built here: the
// packed and unpacked forms of dims, and the malformed ones it must
// refuse rather than misread.
func TestONNXTensorReader(t *testing.T) {
	tensor := func(dtype int32, packed bool, raw []byte, extra ...byte) []byte {
		var b []byte
		if packed {
			b = protowire.AppendTag(b, 1, protowire.BytesType)
			b = protowire.AppendBytes(b, protowire.AppendVarint(protowire.AppendVarint(nil, 2), 3))
		} else {
			for _, d := range []uint64{2, 3} {
				b = protowire.AppendTag(b, 1, protowire.VarintType)
				b = protowire.AppendVarint(b, d)
			}
		}
		b = protowire.AppendTag(b, 2, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(dtype))
		b = protowire.AppendTag(b, 8, protowire.BytesType)
		b = protowire.AppendString(b, "x")
		b = protowire.AppendTag(b, 9, protowire.BytesType)
		b = protowire.AppendBytes(b, raw)
		return append(b, extra...)
	}
	var raw []byte
	want := []float32{1, -2, 0.5, float32(math.Inf(-1)), 3e-8, 7}
	for _, x := range want {
		raw = binary.LittleEndian.AppendUint32(raw, math.Float32bits(x))
	}
	for _, packed := range []bool{false, true} {
		got, err := parseONNXTensor(tensor(onnxFloat, packed, raw))
		if err != nil {
			t.Fatalf("packed dims %v: %v", packed, err)
		}
		if !slices.Equal(got.dims, []int{2, 3}) || !slices.Equal(got.F32, want) || got.name != "x" {
			t.Errorf("packed dims %v: got %q %v %v, want \"x\" [2 3] %v", packed, got.name, got.dims, got.F32, want)
		}
	}
	bools, err := parseONNXTensor(tensor(onnxBool, false, []byte{1, 0, 0, 1, 1, 0}))
	if err != nil || !slices.Equal(bools.Bool, []bool{true, false, false, true, true, false}) {
		t.Errorf("bool tensor: %v, %v", bools, err)
	}
	floatData := protowire.AppendBytes(protowire.AppendTag(nil, 4, protowire.BytesType), raw)
	for name, b := range map[string][]byte{
		"raw_data one value short":  tensor(onnxFloat, false, raw[:20]),
		"int64 data of float bytes": tensor(onnxInt64, false, raw),
		"unknown data type":         tensor(3, false, raw),
		"truncated":                 tensor(onnxFloat, false, raw)[:30],
		"float_data beside raw":     tensor(onnxFloat, false, raw, floatData...),
	} {
		if got, err := parseONNXTensor(b); err == nil {
			t.Errorf("%s: read as %+v, want an error", name, got)
		}
	}
}
