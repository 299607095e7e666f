package backendtest

import (
	"context"
	"math"
	"testing"

	"github.com/attn-go/attn/backend"
)

// testLayouts pins the documented layouts with hand-built problems whose
// answers are written out: Q is zero, so a row's weights are uniform
// over the keys it sees, and V's values name their key, so an output
// says which keys the backend read. A change of a layout (the index
// list's [B, Heads, Nq, PerRow], a packed list's [Heads, CuQ[B], PerRow], a block
// mask's row-major blocks, a q8 row's padding to whole blocks) fails
// here whatever helper moved with it.
func (s *suite) testLayouts(t *testing.T) {
	if !s.caps.Fused {
		t.Skip("no Fused")
	}
	if s.caps.Indices {
		t.Run("IndexList", s.testLayoutIndexList)
		t.Run("PackedIndexList", s.testLayoutPackedIndexList)
	}
	if s.caps.Blocks {
		t.Run("BlockMaskRagged", s.testLayoutBlockMask)
	}
	if s.caps.Quant8 {
		t.Run("Q8PaddedRows", s.testLayoutQ8Padded)
	}
}

// fusedLiteral runs p on float32 Q and O, K and V stored as kv, and
// returns O.
func (s *suite) fusedLiteral(t *testing.T, p backend.Problem, kv backend.DType, q, k, v []float32, olen int) []float32 {
	t.Helper()
	ses := &session{be: s.be}
	defer ses.release()
	bufs := make([]backend.Buffer, 4)
	for i, x := range []struct {
		dt   backend.DType
		data []float32
	}{{backend.Float32, q}, {kv, k}, {kv, v}, {backend.Float32, make([]float32, olen)}} {
		b, err := ses.alloc("operand", x.dt, len(x.data))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.be.Write(b, 0, x.data); err != nil {
			t.Fatal(err)
		}
		bufs[i] = b
	}
	if err := s.be.Fused(context.Background(), backend.FusedParams{Problem: p}, bufs[0], bufs[1], bufs[2], bufs[3], nil); err != nil {
		t.Fatal(err)
	}
	o := make([]float32, olen)
	if err := s.be.Read(o, bufs[3], 0); err != nil {
		t.Fatal(err)
	}
	return o
}

// wantLiteral compares got with the written-out want within tol.
func wantLiteral(t *testing.T, got, want []float32, tol float64) {
	t.Helper()
	for i := range want {
		if Exceeds(math.Abs(float64(got[i]-want[i])), tol) {
			t.Fatalf("O = %v,\nwant %v (element %d)", got, want, i)
		}
	}
}

// An index list of one key a row, B = 2, Heads = KVHeads = 2, H = 4
// (two query heads a KV head), Nq = 2, BHND, D = Dv = 1: V's key j of
// KV head g in batch b holds 100b + 10g + j, so row i of head h outputs
// the key its list names for KV head h/2.
func (s *suite) testLayoutIndexList(t *testing.T) {
	p := backend.Problem{B: 2, H: 4, KVHeads: 2, Nq: 2, Nk: 4, D: 1, Dv: 1, Scale: 1}
	// [B, Heads, Nq, PerRow]: b0 g0 {3, 1}, b0 g1 {0, 2}, b1 g0 {2, 3}, b1 g1 {1, 0}.
	p.Indices = &backend.Indices{Heads: 2, PerRow: 1, Idx: []int32{3, 1, 0, 2, 2, 3, 1, 0}}
	v := make([]float32, 2*2*4)
	for b := range 2 {
		for g := range 2 {
			for j := range 4 {
				v[(b*2+g)*4+j] = float32(100*b + 10*g + j)
			}
		}
	}
	got := s.fusedLiteral(t, p, backend.Float32, make([]float32, 2*4*2), make([]float32, 16), v, 2*4*2)
	wantLiteral(t, got, []float32{3, 1, 3, 1, 10, 12, 10, 12, 102, 103, 102, 103, 111, 110, 111, 110}, 0)
}

// A packed index list: two sequences of 1 and 2 query rows (CuQ = {0,
// 1, 3}), K and V dense BNHD (4 keys, 2 KV heads, H = 2), one key a row
// in [Heads, CuQ[B], PerRow]: head 0 {2, 0, 3}, head 1 {1, 3, 0}. V's key j of
// KV head g in batch b holds 100b + 10g + j; O is packed [3, H, 1].
func (s *suite) testLayoutPackedIndexList(t *testing.T) {
	p := backend.Problem{B: 2, H: 2, KVHeads: 2, Nq: 2, Nk: 4, D: 1, Dv: 1, Scale: 1, Layout: backend.BNHD,
		Packed: &backend.Packed{CuQ: []int{0, 1, 3}}}
	p.Indices = &backend.Indices{Heads: 2, PerRow: 1, Idx: []int32{2, 0, 3, 1, 3, 0}}
	v := make([]float32, 2*4*2)
	for b := range 2 {
		for j := range 4 {
			for g := range 2 {
				v[(b*4+j)*2+g] = float32(100*b + 10*g + j)
			}
		}
	}
	got := s.fusedLiteral(t, p, backend.Float32, make([]float32, 3*2), make([]float32, 16), v, 3*2)
	wantLiteral(t, got, []float32{2, 11, 100, 113, 103, 110}, 0)
}

// A block mask of blocks of 2 over Nq = 3 and Nk = 5, so the last block
// of each axis is partial: blocks [1, 1, 2, 3], row block 0 keeps key
// block 1 (keys 2, 3), row block 1 keeps key blocks 0 and 2 (keys 0, 1,
// 4). V's key j holds j, so a row outputs the mean of its keys.
func (s *suite) testLayoutBlockMask(t *testing.T) {
	p := backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 3, Nk: 5, D: 1, Dv: 1, Scale: 1}
	p.Blocks = &backend.BlockMask{Size: 2, Shape: [4]int{1, 1, 2, 3}, Keep: []bool{false, true, false, true, false, true}}
	got := s.fusedLiteral(t, p, backend.Float32, make([]float32, 3), make([]float32, 5), []float32{0, 1, 2, 3, 4}, 3)
	wantLiteral(t, got, []float32{2.5, 2.5, 5.0 / 3}, 1e-6)
}

// q8 rows of D = Dv = 40 lie at a pitch of 64 values (whole blocks of
// 32, the padding zeros): key 1's row starts at element 64. Key 0 is
// zeros and key 1's K has 127 in its first column, so with Q's first
// column 10 key 1's score is 10·127/√40 above key 0's and its weight is
// 1 (key 0's underflows to 0). V's key 1 is 127 in its first block and
// 63.5 in its second (with the padding: scales 1 and 0.5, codes 127, all
// exact), which the output must be.
func (s *suite) testLayoutQ8Padded(t *testing.T) {
	const d, pitch = 40, 64
	p := backend.Problem{B: 1, H: 1, KVHeads: 1, Nq: 1, Nk: 2, D: d, Dv: d}
	q := make([]float32, d)
	q[0] = 10
	k, v := make([]float32, 2*pitch), make([]float32, 2*pitch)
	k[pitch] = 127
	for c := range d {
		v[c] = 1 // key 0, never seen
		v[pitch+c] = 127
		if c >= 32 {
			v[pitch+c] = 63.5
		}
	}
	got := s.fusedLiteral(t, p, backend.Q8, q, k, v, d)
	want := make([]float32, d)
	for c := range want {
		want[c] = 127
		if c >= 32 {
			want[c] = 63.5
		}
	}
	wantLiteral(t, got, want, 0)
}
