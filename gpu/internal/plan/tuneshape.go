package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/attn-go/attn/backend"
)

// TuneShape is one problem a sweep times: one sequence of N keys and NQ
// queries over Heads query heads and KVHeads KV heads, head dims D and
// DV, not causal, Q, K and V stored as DType (K and V alone for the
// quantized dtypes, as a cache stores them, q8's and q4's rows in whole
// blocks at any head dim; Q is then float32). O is
// float32 whatever DType is: the output's packing is the same work for
// every candidate.
type TuneShape struct {
	Heads, KVHeads int
	D, DV          int
	N, NQ          int
	DType          backend.DType
}

// The default shape sets: decoding is one query over 4096 and 32768
// keys, 32 query heads over 8 KV heads of 128 (a Llama-3-8B layer) in
// float32, float16 and q8; prefill is 4096 queries over as many keys, 8
// heads of 64 and of 128, in float32 and float16. These are the shapes
// docs/gpu.md's GPU runs report, so that a sweep's report reads against
// theirs.
var tuneSets = map[string][]string{
	"decode": {
		"heads=32,kvheads=8,d=128,n=4096,nq=1,dtype=f32", "heads=32,kvheads=8,d=128,n=4096,nq=1,dtype=f16", "heads=32,kvheads=8,d=128,n=4096,nq=1,dtype=q8",
		"heads=32,kvheads=8,d=128,n=32768,nq=1,dtype=f32", "heads=32,kvheads=8,d=128,n=32768,nq=1,dtype=f16", "heads=32,kvheads=8,d=128,n=32768,nq=1,dtype=q8",
	},
	"prefill": {
		"heads=8,d=64,n=4096,nq=4096,dtype=f32", "heads=8,d=64,n=4096,nq=4096,dtype=f16",
		"heads=8,d=128,n=4096,nq=4096,dtype=f32", "heads=8,d=128,n=4096,nq=4096,dtype=f16",
	},
}

// maxTuneElems bounds the elements of a shape's Q, K, V or O: a sweep
// holds each on the device and on the host.
const maxTuneElems = 1 << 32

// ParseTuneShapes reads the shapes a sweep times. Each spec is "decode"
// or "prefill" (a default set), or comma-separated name=value pairs of
// heads, kvheads, d, dv, n, nq and dtype (f32, f16, bf16, q8, fp8, q4),
// any left out taking its default: heads=32, kvheads as heads, d=128,
// dv as d, n=4096, nq=1, dtype=f32; none is both sets. A shape named
// twice is timed once. Bad sizes, names or dtypes are an error wrapping
// backend.ErrShape that names the spec.
func ParseTuneShapes(specs []string) ([]TuneShape, error) {
	if len(specs) == 0 {
		specs = []string{"decode", "prefill"}
	}
	var out []TuneShape
	seen := map[TuneShape]bool{}
	for _, spec := range specs {
		list, ok := tuneSets[strings.ToLower(strings.TrimSpace(spec))]
		if !ok {
			list = []string{spec}
		}
		for _, one := range list {
			s, err := parseTuneShape(one)
			if err != nil {
				return nil, err
			}
			if !seen[s] {
				seen[s] = true
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// parseTuneShape reads one spec of name=value pairs.
func parseTuneShape(spec string) (TuneShape, error) {
	bad := func(format string, args ...any) (TuneShape, error) {
		return TuneShape{}, backend.Errorf(backend.ErrShape, "tune shape %q: %s", spec, fmt.Sprintf(format, args...))
	}
	const names = "heads, kvheads, d, dv, n, nq, dtype"
	ints := map[string]int{}
	s := TuneShape{DType: backend.Float32}
	err := parsePairs("tune shape", spec, names, func(_ int, name, val string) error {
		if name == "dtype" {
			t, err := backend.ParseDType(val)
			s.DType = t
			return err
		}
		v, err := strconv.Atoi(val)
		if err != nil || v < 1 || v > 1<<30 {
			return fmt.Errorf("%s=%s: want a whole number from 1 to %d", name, val, 1<<30)
		}
		ints[name] = v
		return nil
	})
	if err != nil {
		return bad("%v", err)
	}
	get := func(name string, def int) int {
		if v, ok := ints[name]; ok {
			return v
		}
		return def
	}
	s.Heads = get("heads", 32)
	s.KVHeads = get("kvheads", s.Heads)
	s.D = get("d", 128)
	s.DV = get("dv", s.D)
	s.N = get("n", 4096)
	s.NQ = get("nq", 1)
	if s.Heads%s.KVHeads != 0 {
		return bad("heads=%d is not a multiple of kvheads=%d", s.Heads, s.KVHeads)
	}
	for _, e := range []struct {
		what        string
		heads, rows int
		dim         int
	}{{"Q", s.Heads, s.NQ, s.D}, {"K", s.KVHeads, s.N, s.DType.Pitch(s.D)}, {"V", s.KVHeads, s.N, s.DType.Pitch(s.DV)}, {"O", s.Heads, s.NQ, s.DV}} {
		if float64(e.heads)*float64(e.rows)*float64(e.dim) > maxTuneElems {
			return bad("%s holds %d×%d×%d elements, more than %d", e.what, e.heads, e.rows, e.dim, maxTuneElems)
		}
	}
	return s, nil
}

// String is s as ParseTuneShapes reads it, every value named.
func (s TuneShape) String() string {
	return fmt.Sprintf("heads=%d,kvheads=%d,d=%d,dv=%d,n=%d,nq=%d,dtype=%v", s.Heads, s.KVHeads, s.D, s.DV, s.N, s.NQ, s.DType)
}

// Problem is the attention problem s times: B = 1, BHND, the default
// scale.
func (s TuneShape) Problem() backend.Problem {
	return backend.Problem{B: 1, H: s.Heads, KVHeads: s.KVHeads, Nq: s.NQ, Nk: s.N, D: s.D, Dv: s.DV}
}

// QDType is the dtype of s's Q: float32 beside a quantized K and V.
func (s TuneShape) QDType() backend.DType {
	if s.DType.Quantized() {
		return backend.Float32
	}
	return s.DType
}
