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

	"google.golang.org/protobuf/encoding/protowire"
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

// onnxTensor is a decoded TensorProto. Float data is in F32, int64 data in
// I64, bool data in Bool; a float16 tensor keeps only its dims and type.
type onnxTensor struct {
	name  string
	dims  []int
	dtype int32
	F32   []float32
	I64   []int64
	Bool  []bool
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

// parseONNXTensor decodes a TensorProto.
//
//	1: dims, 2: data_type, 4: float_data, 5: int32_data (bool, float16),
//	7: int64_data, 8: name, 9: raw_data (little-endian)
func parseONNXTensor(b []byte) (*onnxTensor, error) {
	fields, err := wireFields(b)
	if err != nil {
		return nil, fmt.Errorf("TensorProto: %w", err)
	}
	t := &onnxTensor{}
	var raw []byte
	var floats []float32
	var i32s, i64s []uint64
	for _, f := range fields {
		switch f.num {
		case 1:
			ds, err := varints(f)
			if err != nil {
				return nil, fmt.Errorf("dims: %w", err)
			}
			for _, d := range ds {
				t.dims = append(t.dims, int(int64(d)))
			}
		case 2:
			t.dtype = int32(f.val)
		case 4:
			switch f.typ {
			case protowire.Fixed32Type:
				floats = append(floats, math.Float32frombits(uint32(f.val)))
			case protowire.BytesType:
				for i := 0; i+4 <= len(f.bytes); i += 4 {
					floats = append(floats, math.Float32frombits(binary.LittleEndian.Uint32(f.bytes[i:])))
				}
			}
		case 5, 7:
			vs, err := varints(f)
			if err != nil {
				return nil, fmt.Errorf("field %d: %w", f.num, err)
			}
			if f.num == 5 {
				i32s = append(i32s, vs...)
			} else {
				i64s = append(i64s, vs...)
			}
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
	switch t.dtype {
	case onnxFloat:
		if raw != nil {
			floats = nil
			for i := 0; i+4 <= len(raw); i += 4 {
				floats = append(floats, math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])))
			}
		}
		t.F32 = floats
		if len(t.F32) != n {
			return nil, fmt.Errorf("float tensor %q of dims %v holds %d values", t.name, t.dims, len(t.F32))
		}
	case onnxInt64:
		if raw != nil {
			i64s = nil
			for i := 0; i+8 <= len(raw); i += 8 {
				i64s = append(i64s, binary.LittleEndian.Uint64(raw[i:]))
			}
		}
		for _, v := range i64s {
			t.I64 = append(t.I64, int64(v))
		}
		if len(t.I64) != n {
			return nil, fmt.Errorf("int64 tensor %q of dims %v holds %d values", t.name, t.dims, len(t.I64))
		}
	case onnxBool:
		if raw != nil {
			for _, c := range raw {
				t.Bool = append(t.Bool, c != 0)
			}
		} else {
			for _, v := range i32s {
				t.Bool = append(t.Bool, v != 0)
			}
		}
		if len(t.Bool) != n {
			return nil, fmt.Errorf("bool tensor %q of dims %v holds %d values", t.name, t.dims, len(t.Bool))
		}
	case onnxFloat16:
		// Kept by type only: the cases in half precision are skipped.
	default:
		return nil, fmt.Errorf("tensor %q has data type %d; this reader knows FLOAT, INT64, BOOL and FLOAT16", t.name, t.dtype)
	}
	return t, nil
}
