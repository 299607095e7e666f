package main

import (
	"context"
	"fmt"
	"math"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
)

// seqFiles are attn run's integer files of packed sequences and paged
// caches: each flag, its key in the files map and the rank its file has.
var seqFiles = []struct {
	key, flag string
	rank      int
	want      string
}{
	{"cuq", "-cu-seqlens-q", 1, "a vector of B+1 int32 or int64 row offsets into Q, from 0 to its total rows"},
	{"cuk", "-cu-seqlens-k", 1, "a vector of B+1 int32 or int64 row offsets into K and V, from 0 to their total rows"},
	{"table", "-block-table", 2, "a matrix [B, blocks] of int32 or int64 page numbers, a row per sequence"},
	{"cachelens", "-cache-lens", 1, "a vector of B int32 or int64 cache lengths, one per sequence"},
	{"indices", "-indices", 0, "int32 or int64 key positions [B, Heads, Nq, K] ([Heads, Nq, K] or [Nq, K] for a query of rank 3 or 2, [Heads, total, K] packed), −1 for none"},
}

// packed and paged report whether the flags pack the sequences or page
// the keys.
func (f *runFlags) packed() bool { return f.cuQ != "" }
func (f *runFlags) paged() bool  { return f.table != "" }

// checkSeqFlags validates the flags of packed sequences, paged caches and
// a past on their own, before any file is opened, and picks the layout
// they imply (bnhd) when -layout is not given.
func (f *runFlags) checkSeqFlags() error {
	seqs := f.packed() || f.paged()
	switch {
	case f.cuK != "" && !f.packed():
		return usagef("-cu-seqlens-k packs the keys of packed queries; give -cu-seqlens-q too")
	case f.cuK != "" && f.paged():
		return usagef("-cu-seqlens-k (packed keys) and -block-table (a paged cache) both give the keys; give one")
	case f.cacheLens != "" && !f.paged():
		return usagef("-cache-lens gives a paged cache's lengths; give -block-table too (dense keys take -kv-lens)")
	case f.kvLens != "" && f.paged():
		return usagef("-kv-lens with -block-table: a paged cache's key lengths are -cache-lens")
	case f.kvLens != "" && f.cuK != "":
		return usagef("-kv-lens with -cu-seqlens-k: packed keys' lengths are their cu_seqlens")
	case (f.pastK == "") != (f.pastV == ""):
		return usagef("-past-k and -past-v come together")
	case f.pastK != "" && seqs:
		return usagef("-past-k and -past-v extend dense K and V; with -cu-seqlens-q or -block-table give the keys packed or paged")
	case (f.presentK != "" || f.presentV != "") && seqs:
		return usagef("-present-k and -present-v write dense K and V with the past; packed and paged keys have no present")
	case f.packed() && f.layoutSet && f.layout != kernels.BNHD:
		return usagef("-layout %s: packed sequences (-cu-seqlens-q) are [total, H, D] rows, the bnhd layout (its default with -cu-seqlens-q)", layoutName(f.layout))
	}
	if seqs {
		for _, o := range []struct{ flag, path string }{{"-weights", f.weights}, {"-scores", f.scores}, {"-heatmap", f.heatmap}} {
			if o.path != "" {
				return usagef("%s needs the staged strategy, which takes no packed sequences or paged caches (they run fused)", o.flag)
			}
		}
		if f.strategy == kernels.Staged {
			return usagef("-strategy staged takes no packed sequences or paged caches; they run fused (-strategy auto or fused)")
		}
		if !f.layoutSet {
			f.layout = kernels.BNHD
		}
	}
	return nil
}

func layoutName(l kernels.Layout) string {
	if l == kernels.BNHD {
		return "bnhd"
	}
	return "bhnd"
}

// checkSeqHeader refuses the integer file of key ("cuq", "cuk", "table",
// "cachelens") when its type or rank cannot hold what its flag gives.
func checkSeqHeader(key string, nf *npyFile) error {
	for _, sf := range seqFiles {
		if sf.key != key {
			continue
		}
		if t := nf.dtype; t.kind != 'i' || (t.size != 4 && t.size != 8) {
			return fmt.Errorf("%s %s: dtype %s (%s); want %s", sf.flag, nf.path, t.name(), t.descr, sf.want)
		}
		if r := len(nf.shape); r != sf.rank && (sf.rank != 0 || r < 2 || r > 4) {
			return fmt.Errorf("%s %s has shape %s; want %s", sf.flag, nf.path, operand.NpyShape(nf.shape), sf.want)
		}
	}
	return nil
}

// seqOptions reads the integer files among files into opts: cu_seqlens,
// the block table (a row per sequence) and the cache lengths (KVLens).
// They are small next to Q, K and V and are read before them, since the
// shapes are checked against them (kernels.Shapes.Check).
func seqOptions(ctx context.Context, files map[string]*npyFile, opts *kernels.Options) error {
	for _, sf := range seqFiles {
		nf := files[sf.key]
		if nf == nil {
			continue
		}
		vals, err := nf.readInts(ctx)
		if err != nil {
			return err
		}
		switch sf.key {
		case "cuq":
			opts.CuSeqlensQ = vals
		case "cuk":
			opts.CuSeqlensK = vals
		case "cachelens":
			opts.KVLens = vals
		case "indices":
			ix := &kernels.Indices{Heads: 1, PerRow: nf.shape[len(nf.shape)-1], Idx: make([]int32, len(vals))}
			if len(nf.shape) >= 3 {
				ix.Heads = nf.shape[len(nf.shape)-3]
			}
			for i, j := range vals {
				if j < -1 || j > math.MaxInt32 {
					return backend.Errorf(backend.ErrShape, "-indices %s: element %s is %d: want −1 (none) or a key position", nf.path, indexString(i, nf.shape), j)
				}
				ix.Idx[i] = int32(j)
			}
			opts.Indices = ix
		case "table":
			rows, per := nf.shape[0], nf.shape[1]
			opts.BlockTable = make([][]int, rows)
			for b := range rows {
				opts.BlockTable[b] = vals[b*per : (b+1)*per]
			}
		}
	}
	return nil
}

// seqNames sets the names kernels' errors give the integer files among
// files: the flag and the path.
func seqNames(files map[string]*npyFile, names *kernels.OperandNames) {
	for _, sf := range seqFiles {
		nf := files[sf.key]
		if nf == nil {
			continue
		}
		name := sf.flag + " " + nf.path
		switch sf.key {
		case "cuq":
			names.CuSeqlensQ = name
		case "cuk":
			names.CuSeqlensK = name
		case "table":
			names.BlockTable = name
		case "cachelens":
			names.KVLens = name
		}
	}
}

// presentShapes checks the headers of -past-k and -past-v against K and
// V (one rank; the same batch, heads and head dim in the layout; one
// past length) and returns the shapes of the keys and values attention
// reads, the past's rows then the new ones, and the past's length.
func presentShapes(pk, pv, k, v *npyFile, layout kernels.Layout) (ks, vs []int, past int, err error) {
	for _, p := range []struct {
		flag     string
		past, in *npyFile
	}{{"-past-k", pk, k}, {"-past-v", pv, v}} {
		if len(p.past.shape) != len(p.in.shape) {
			return nil, nil, 0, backend.Errorf(backend.ErrShape, "%s %s has rank %d (shape %s) but %s has rank %d: a past has its keys' rank",
				p.flag, p.past.path, len(p.past.shape), operand.NpyShape(p.past.shape), p.in.path, len(p.in.shape))
		}
		if len(p.in.shape) < 2 || len(p.in.shape) > 4 {
			return nil, nil, 0, nil // kernels refuses the rank, naming the file
		}
		pb, ph, _, pd := operand.Dims(p.past.shape, layout)
		b, h, _, d := operand.Dims(p.in.shape, layout)
		if pb != b || ph != h || pd != d {
			return nil, nil, 0, backend.Errorf(backend.ErrShape, "%s %s of shape %s (B=%d H=%d D=%d, %s) does not extend %s of shape %s (B=%d H=%d D=%d)",
				p.flag, p.past.path, operand.NpyShape(p.past.shape), pb, ph, pd, layoutName(layout), p.in.path, operand.NpyShape(p.in.shape), b, h, d)
		}
	}
	_, _, pkn, _ := operand.Dims(pk.shape, layout)
	_, _, pvn, _ := operand.Dims(pv.shape, layout)
	if pkn != pvn {
		return nil, nil, 0, backend.Errorf(backend.ErrShape, "the pasts differ in length: -past-k %s has %d keys, -past-v %s %d values", pk.path, pkn, pv.path, pvn)
	}
	grow := func(shape []int) []int {
		out := append([]int(nil), shape...)
		axis := len(out) - 2 // [N, D], [H, N, D], [B, H, N, D]
		if layout == kernels.BNHD && len(out) > 2 {
			axis = len(out) - 3 // [N, H, D], [B, N, H, D]
		}
		out[axis] += pkn
		return out
	}
	return grow(k.shape), grow(v.shape), pkn, nil
}
