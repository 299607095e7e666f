package cpu

// How Fused cuts a problem into work items: tiles of query rows and
// heads, split keys, and the items' order.

import (
	"math"
	"sort"

	"github.com/attn-go/attn/backend"
)

// minTileQ is the smallest query tile Fused picks on its own to spread a
// small problem over more threads.
const minTileQ = 16

// minSplit is the fewest keys Fused gives each split of an item's keys
// (tests lower it to split small problems).
var minSplit = 512

// plan picks the tiles and the splits for threads workers and returns
// the number of work items (each run in f.splits parts). Scratch never
// needs to be bigger than the problem (decoding with Nq = 1 gets one
// position a head); when there are fewer items than threads, smaller
// query tiles and then key splits keep every thread busy. Each row's
// result depends only on Tk and the key order (and on the splits, which
// merge exactly), not on Tq.
func (f *fused) plan(threads int) int {
	p := f.p
	f.maxQ = 0
	for b := range p.B {
		f.maxQ = max(f.maxQ, p.QRows(b))
	}
	f.rq = max(1, f.tq/f.g)
	f.rq = min(f.rq, max(f.maxQ, 1))
	f.tk = min(f.tk, max(p.Nk, 1))
	// Under a window of W keys a query tile's rows see W + Tq − 1 keys
	// between them (the Gemms' band skips what no row of a kernel block
	// sees). When that span is at most three key tiles, one key tile
	// takes it whole: each row then runs one online step a query tile,
	// not three. At B=1 H=8 D=64, W=512, N=32768 (AVX-512) a key tile of
	// the span ran faster than tiles of 256, 512 or 1024 keys.
	if band := p.Band(); band < math.MaxInt {
		if span := band + f.rq - 1; span <= 3*f.tk {
			f.tk = min(span, max(p.Nk, 1))
		}
	}
	if bm := p.Blocks; bm != nil {
		// Query tiles that divide a block mask's S (and key tiles, below),
		// so that a block that is off skips whole tiles.
		f.rq = min(f.rq, bm.Size)
		for bm.Size%f.rq != 0 {
			f.rq--
		}
	}
	if heads := p.B * p.KVHeads; heads > 0 && heads*ceilDiv(f.maxQ, f.rq) < threads {
		perHead := ceilDiv(threads, heads)
		f.rq = min(f.rq, max(ceilDiv(f.maxQ, perHead), ceilDiv(minTileQ, f.g)))
	}
	f.tq = f.rq * f.g
	f.sub = min(f.sub, f.tq)
	if p.Blocks != nil {
		// A query tile of one block's rows is one score tile: each key
		// tile is a block, read by one Gemm, not packed for sub-tiles
		// (at S = 128 on a Zen 3 it ran faster than two sub-tiles of
		// 64).
		f.sub = f.tq
	}
	f.mh = 1
	if f.decode = useDecode(f.tq, p.D, p.Dv); f.decode {
		f.bf16 = false
		if p.Band() == math.MaxInt {
			f.tk = min(f.b.decodeK, max(p.Nk, 1)) // DefaultDecodeTileK
		}
		if f.headsInterleaved() {
			// Each item takes every KV head, a short key tile at a
			// time: the heads of a key lie side by side, and a head's
			// rows alone are read at a stride that halves the
			// memory's rate (headsTileK).
			f.mh = p.KVHeads
			tile := headsTileK
			if f.k.t.Quantized() && f.v.t.Quantized() {
				tile = headsTileK8
			}
			f.tk = min(f.tk, tile)
		}
	} else if !f.bf16 && f.headsInterleaved() && f.maxQ*f.g <= gemmHeadsRows {
		// The same on the Gemms' path for few rows a head (a cascade's
		// prefix pass): there the keys' reads, not the arithmetic,
		// decide the time.
		f.mh = p.KVHeads
		f.tk = min(f.tk, gemmHeadsTileK)
	}
	if f.decode || f.bf16 {
		f.sub = f.tq // these paths take a query tile whole
	}
	if bm := p.Blocks; bm != nil {
		// Key tiles of S keys, or of a divisor of S where S is past the
		// tile.
		if bm.Size >= 16 && bm.Size < f.tk {
			f.tk = bm.Size
		} else if bm.Size >= f.tk {
			f.tk = bm.Size / ceilDiv(bm.Size, f.tk)
			for bm.Size%f.tk != 0 {
				f.tk--
			}
		}
	}
	f.splits = 1
	n := f.countItems()
	if n > 0 && n < threads {
		f.splits = min(ceilDiv(threads, n), max(1, p.Nk/minSplit))
	}
	return n
}

// headsTileK is the key tile of a decoding item that takes every KV head
// (fused.mh): its K and V rows of all heads stay in the L2 while each
// head reads its own. On a Zen 3, one thread, f16, D = 128, 8 KV heads
// side by side over 32768 keys: every head's tile of 128 keys in turn
// runs as fast as with each head's rows together, where each head's tile
// of 1024 keys in turn takes nearly twice as long a key, and tiles of 32
// keys a little longer (the commit that set it has the measurements).
const headsTileK = 128

// headsTileK8 is headsTileK where K and V are 8-bit (q8, fp8): a key's
// rows are half a half's bytes, and a tile's per-head steps (the
// softmax, P·V's digits) cost the same a tile, so twice the keys. On a
// Zen 4, 16 sequences of 8192 keys in BNHD pages (32 query heads over 8
// KV heads, D = 128; BenchmarkCacheDecodeBatch), q8 and fp8 steps ran
// faster with tiles of 256 keys than of 128, and tiles of 512 ran as 256.
const headsTileK8 = 256

// gemmHeadsRows is the most query rows a KV head may have for a call on
// the Gemms' path to take every KV head an item (fused.mh), a key tile
// of gemmHeadsTileK at a time. On a Zen 3 (BNHD, D = 128, f16 K and V)
// a cascade's prefix pass (128 rows a head over 8192 keys, 8 KV heads)
// ran faster with every KV head an item than with one, the more so at 64
// rows a head, and with key tiles of 256 than of 128 or 512; but at 2048
// rows a head (512 positions, 32 heads over 8), and in f32 prefill at
// N = 4096, one head an item was the faster (the commit that set them
// has the measurements).
const (
	gemmHeadsRows  = 128
	gemmHeadsTileK = 256
)

// headsInterleaved says whether a decoding call's items take every KV
// head (fused.mh): K's (and V's) heads lie side by side in a key's row
// (BNHD, BNHD pages, one-key pages of a BNHD cache), not packed, and K
// and V are not 8-bit values that AMX's tiles take (they need runs of
// more keys than headsTileK).
func (f *fused) headsInterleaved() bool {
	p := f.p
	return p.KVHeads > 1 && p.Packed == nil && !f.b.tiled(f.k.t) && !f.b.tiled(f.v.t) &&
		f.kr.Head < f.kr.Row && f.vr.Head < f.vr.Row
}

// tiled says whether AMX's tiles decode K or V of dtype t on this CPU
// under the backend's 8-bit setting, as its items' scratch decides it
// (none under vector, no q8 under integer).
func (b *Backend) tiled(t backend.DType) bool {
	switch t {
	case backend.Q8, backend.Q4:
		return b.t8.q8Tiles()
	case backend.FP8:
		return b.t8.fp8Tiles()
	}
	return false
}

// countItems counts the work items, B·KVHeads·⌈QRows(b)/rq⌉ summed over
// the sequences, noting the running count per batch when the sequences
// differ in length.
func (f *fused) countItems() int {
	p := f.p
	if p.Packed == nil {
		f.cum = nil
		return p.B * p.KVHeads / f.mh * ceilDiv(p.Nq, f.rq)
	}
	f.cum = grow(f.cum, p.B+1)
	f.cum[0] = 0
	for b := range p.B {
		f.cum[b+1] = f.cum[b] + p.KVHeads*ceilDiv(p.QRows(b), f.rq)
	}
	return f.cum[p.B]
}

// itemAt locates item it: batch b, KV head kvh, first position i0 and
// positions r.
func (f *fused) itemAt(it int) (b, kvh, i0, r int) {
	p := f.p
	per := ceilDiv(p.Nq, f.rq)
	base := 0
	if f.cum != nil {
		b = sort.SearchInts(f.cum, it+1) - 1
		base = f.cum[b]
		per = ceilDiv(p.QRows(b), f.rq)
	} else {
		groups := p.KVHeads / f.mh // an item's KV heads: f.mh of them
		b = it / (groups * per)
		base = b * groups * per
	}
	it -= base
	kvh, i0 = it/per*f.mh, it%per*f.rq
	return b, kvh, i0, min(f.rq, p.QRows(b)-i0)
}
