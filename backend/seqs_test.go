package backend

import (
	"errors"
	"strings"
	"testing"
)

// Packed and paged problems: every wrong list or table is ErrShape naming
// the sizes and the entry, and the staged ops refuse them with
// ErrUnsupported.
func TestValidateSeqs(t *testing.T) {
	pk := func(cuq, cuk []int, f func(p *Problem)) Problem {
		p := Problem{B: len(cuq) - 1, H: 4, KVHeads: 2, Nq: 8, Nk: 10, D: 8, Layout: BNHD, Packed: &Packed{CuQ: cuq, CuK: cuk}}
		if f != nil {
			f(&p)
		}
		return p
	}
	pg := func(size, pages, per int, table, lens []int, f func(p *Problem)) Problem {
		p := Problem{B: len(lens), H: 4, KVHeads: 2, Nq: 1, Nk: 10, D: 8,
			Variants: Variants{KVLens: lens}, Paged: &Paged{PageSize: size, Pages: pages, PerSeq: per, Table: table}}
		if f != nil {
			f(&p)
		}
		return p
	}
	for _, tt := range []struct {
		name string
		p    Problem
		want string
	}{
		{"packed", pk([]int{0, 3, 3, 11}, []int{0, 10, 12, 12}, nil), ""},
		{"packed queries, dense keys", pk([]int{0, 8, 9}, nil, nil), ""},
		{"packed BHND", pk([]int{0, 1}, nil, func(p *Problem) { p.Layout = BHND }), "layout must be BNHD"},
		{"cu_seqlens_q not from 0", pk([]int{1, 3}, nil, nil), "cu_seqlens_q starts at 1, want 0"},
		{"cu_seqlens_q decreasing", pk([]int{0, 5, 4}, nil, nil), "sequence 1 has -1 rows (5 … 4)"},
		{"cu_seqlens_q wrong count", pk([]int{0, 5, 6}, nil, func(p *Problem) { p.B = 3 }), "3 entries for B=3 sequences, want 4"},
		{"a sequence past Nq", pk([]int{0, 9}, nil, nil), "sequence 0 has 9 rows (0 … 9), want 0 … Nq=8"},
		{"cu_seqlens_k past Nk", pk([]int{0, 1}, []int{0, 11}, nil), "cu_seqlens_k: sequence 0 has 11 rows"},
		{"cu_seqlens_k and key lengths", pk([]int{0, 1}, []int{0, 2}, func(p *Problem) { p.KVLens = []int{1} }), "give one"},
		{"paged", pg(4, 5, 3, []int{4, 0, -1, 1, 2, 3}, []int{5, 10}, nil), ""},
		{"paged, unused entries anything", pg(4, 5, 3, []int{4, -7, 99, 1, 2, 3}, []int{1, 10}, nil), ""},
		{"page out of range", pg(4, 5, 3, []int{4, 0, -1, 1, 5, 3}, []int{5, 10}, nil),
			"sequence 1 block 1 (keys 4 … 7 of its 10) names page 5, want 0 … 4"},
		{"unpaged block", pg(4, 5, 3, []int{4, -1, -1, 1, 2, 3}, []int{5, 10}, nil), "sequence 0 block 1 (keys 4 … 4 of its 5) names page -1"},
		{"table too short", pg(4, 5, 3, []int{4, 0, 1}, []int{5, 10}, nil), "block table: 3 entries for B=2 sequences of 3 blocks"},
		{"Nk past the blocks", pg(4, 5, 2, []int{0, 1, 2, 3}, []int{5, 8}, nil), "Nk=10 keys but 2 blocks of 4 keys"},
		{"page size 0", pg(0, 5, 3, []int{0, 1, 2, 3, 4, 0}, []int{5, 8}, nil), "page size 0"},
		{"paged and packed keys", pg(4, 5, 3, []int{4, 0, -1, 1, 2, 3}, []int{5, 10}, func(p *Problem) {
			p.KVLens = nil
			p.Layout = BNHD
			p.Packed = &Packed{CuQ: []int{0, 1, 2}, CuK: []int{0, 5, 15}}
		}), "packed keys (cu_seqlens_k) and a paged cache both set"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.p.Validate()
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tt.want != "" && (err == nil || !errors.Is(err, ErrShape) || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("Validate = %v, want ErrShape containing %q", err, tt.want)
			case tt.want == "":
				sp := ScoresParams{Problem: tt.p}
				if err := sp.Validate(fakeBuf(1<<20), fakeBuf(1<<20), fakeBuf(1<<20)); !errors.Is(err, ErrUnsupported) {
					t.Errorf("Scores on a %s problem: %v, want ErrUnsupported", tt.name, err)
				}
			}
		})
	}
}

// The rows of packed and paged operands, by hand: packed sequence b's row
// i is row CuQ[b] + i of [total, H, D]; paged key j is row j mod size of
// page Table[b·PerSeq + j/size], in either pool layout; lengths count
// totals and pools.
func TestSeqRows(t *testing.T) {
	p := Problem{B: 2, H: 4, KVHeads: 2, Nq: 3, Nk: 6, D: 8, Dv: 5, Layout: BNHD,
		Packed: &Packed{CuQ: []int{0, 3, 5}, CuK: []int{0, 6, 10}}}.Resolved()
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if got, want := p.QRowsOf().Offset(1, 2, 1), (3+1)*4*8+2*8; got != want {
		t.Errorf("packed Q (1, 2, 1) at %d, want %d", got, want)
	}
	if got, want := p.VRowsOf().Offset(1, 1, 3), (6+3)*2*5+1*5; got != want {
		t.Errorf("packed V (1, 1, 3) at %d, want %d", got, want)
	}
	if p.QLen() != 5*4*8 || p.KLen() != 10*2*8 || p.OLen() != 5*4*5 || p.LSELen() != 4*5 {
		t.Errorf("packed lengths Q %d K %d O %d LSE %d", p.QLen(), p.KLen(), p.OLen(), p.LSELen())
	}
	if got, want := p.LSEOffset(1, 3, 1), 3*5+3+1; got != want {
		t.Errorf("packed LSE (1, 3, 1) at %d, want %d", got, want)
	}
	if p.QRows(0) != 3 || p.QRows(1) != 2 || p.KVLen(1) != 4 || p.Align(1) != 2 {
		t.Errorf("packed sequence 1: %d rows, %d keys, aligned at %d", p.QRows(1), p.KVLen(1), p.Align(1))
	}
	for _, l := range []Layout{BNHD, BHND} {
		q := Problem{B: 2, H: 2, KVHeads: 2, Nq: 1, Nk: 7, D: 3, Layout: l,
			Paged: &Paged{PageSize: 4, Pages: 5, PerSeq: 2, Table: []int{3, 1, 0, 4}}}.Resolved()
		if err := q.Validate(); err != nil {
			t.Fatal(err)
		}
		kr := q.KRowsOf()
		want := 1*4*2*3 + 2*2*3 + 1*3 // page 1, row 2, head 1 in [pages, size, heads, D]
		if l == BHND {
			want = 1*2*4*3 + 1*4*3 + 2*3 // [pages, heads, size, D]
		}
		if got := kr.Offset(0, 1, 6); got != want {
			t.Errorf("%v pool: key 6 of sequence 0, head 1, at %d, want %d", l, got, want)
		}
		if kr.Run(6) != 2 || kr.Run(4) != 4 {
			t.Errorf("%v pool: runs %d, %d, want 2, 4", l, kr.Run(6), kr.Run(4))
		}
		if q.KLen() != 5*4*2*3 {
			t.Errorf("%v pool: K of %d elements, want %d", l, q.KLen(), 5*4*2*3)
		}
	}
}
