package plan

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/attn-go/attn/backend"
)

// TestQuantLayoutLiteral pins the byte positions of q8 and q4 blocks by
// hand: superblocks of 256 values in 272 bytes (q8: 32 codes a block)
// and 144 (q4: 16 bytes a block), each superblock's 8 scales after its
// codes.
func TestQuantLayoutLiteral(t *testing.T) {
	for _, c := range []struct {
		t                 backend.DType
		blk, codes, scale int
	}{
		{backend.Q8, 0, 0, 256}, {backend.Q8, 7, 224, 270}, {backend.Q8, 9, 304, 530},
		{backend.Q4, 0, 0, 128}, {backend.Q4, 1, 16, 130}, {backend.Q4, 7, 112, 142},
		{backend.Q4, 8, 144, 272}, {backend.Q4, 9, 160, 274}, {backend.Q4, 17, 304, 418},
	} {
		if got := CodesByte(c.t, c.blk); got != c.codes {
			t.Errorf("CodesByte(%v, %d) = %d, want %d", c.t, c.blk, got, c.codes)
		}
		if got := ScaleByte(c.t, c.blk); got != c.scale {
			t.Errorf("ScaleByte(%v, %d) = %d, want %d", c.t, c.blk, got, c.scale)
		}
	}
	for _, c := range []struct {
		t    backend.DType
		n    int
		want uint64
	}{{backend.Q8, 32, 272}, {backend.Q8, 512, 544}, {backend.Q4, 32, 144}, {backend.Q4, 256, 144}, {backend.Q4, 288, 288}, {backend.FP8, 33, 33}} {
		if got := QuantBytes(c.t, c.n); got != c.want {
			t.Errorf("QuantBytes(%v, %d) = %d, want %d", c.t, c.n, got, c.want)
		}
	}
	if lo, hi := QuantSpan(backend.Q4, 288, 64); lo != 160 || hi != 278 {
		t.Errorf("QuantSpan(q4, 288, 64) = %d, %d, want 160, 278", lo, hi)
	}
}

// TestQuantWindowBlocked: a window of a q8 or q4 buffer starts on a
// superblock and on the alignment, holds the span of the elements asked
// for, and says how many elements its bytes hold.
func TestQuantWindowBlocked(t *testing.T) {
	rng := rand.New(rand.NewPCG(79, 4))
	for _, dt := range []backend.DType{backend.Q8, backend.Q4} {
		for _, align := range []int{4, 16, 64, 256} {
			for range 200 {
				n := 32 * (1 + rng.IntN(400))
				bufBytes := int(QuantBytes(dt, n))
				lo := 32 * rng.IntN(n/32)
				hi := lo + 32*(1+rng.IntN((n-lo)/32))
				w := QuantWindow(dt, lo, hi, align, bufBytes)
				sb := w.Start / Q8Super
				if w.Start%Q8Super != 0 || w.StartByte != sb*superBytes(dt) || w.StartByte%max(align, 16) != 0 {
					t.Fatalf("%v: QuantWindow(%d, %d, align %d) = %+v: not a superblock on the alignment", dt, lo, hi, align, w)
				}
				slo, shi := QuantSpan(dt, lo, hi-lo)
				if slo < w.StartByte || shi > w.StartByte+w.Bytes || w.StartByte+w.Bytes > bufBytes {
					t.Fatalf("%v: QuantWindow(%d, %d, align %d) = %+v misses bytes [%d, %d) of %d", dt, lo, hi, align, w, slo, shi, bufBytes)
				}
				if slack := w.Bytes - (shi - slo); slack > QuantSlack(dt, align) {
					t.Fatalf("%v: window %+v of span [%d, %d): %d bytes of slack, QuantSlack %d", dt, w, slo, shi, slack, QuantSlack(dt, align))
				}
			}
		}
		if got := QuantElems(dt, 3*superBytes(dt)+17); got != 3*Q8Super {
			t.Errorf("QuantElems(%v, 3 superblocks + 17 bytes) = %d", dt, got)
		}
	}
}

// TestPackQuantQ4 packs q4 writes into a buffer's image and reads them
// back: the spans cover exactly the written blocks' codes and scales,
// the other bytes stay as they were, and UnpackQuant gives
// DequantizeQ4's values.
func TestPackQuantQ4(t *testing.T) {
	rng := rand.New(rand.NewPCG(79, 5))
	const n = 1600
	img := make([]byte, QuantBytes(backend.Q4, n))
	for i := range img {
		img[i] = byte(rng.Uint32())
	}
	for _, w := range [][2]int{{0, n}, {32, 32}, {224, 96}, {480, 576}, {1568, 32}} {
		src := make([]float32, w[1])
		for i := range src {
			src[i] = float32(rng.NormFloat64())
		}
		codes, scales := make([]byte, w[1]/2), make([]uint16, w[1]/32)
		backend.QuantizeQ4(codes, scales, src)
		before := slices.Clone(img)
		spans := PackQuant(backend.Q4, img, 0, w[0], codes, scales)
		in := make([]bool, len(img))
		for _, sp := range spans {
			for b := sp[0]; b < sp[1]; b++ {
				in[b] = true
			}
		}
		for blk := w[0] / 32; blk < (w[0]+w[1])/32; blk++ {
			for b := CodesByte(backend.Q4, blk); b < CodesByte(backend.Q4, blk)+16; b++ {
				if !in[b] {
					t.Fatalf("write %v: byte %d of block %d's codes is in no span", w, b, blk)
				}
				in[b] = false
			}
			p := ScaleByte(backend.Q4, blk)
			if !in[p] || !in[p+1] {
				t.Fatalf("write %v: block %d's scale bytes are in no span", w, blk)
			}
			in[p], in[p+1] = false, false
		}
		for b, x := range in {
			if x || img[b] != before[b] && !inBlocks(b, w) {
				t.Fatalf("write %v: byte %d is in a span or changed outside the written blocks", w, b)
			}
		}
		got, want := make([]float32, w[1]), make([]float32, w[1])
		UnpackQuant(backend.Q4, got, img, 0, w[0])
		backend.DequantizeQ4(want, codes, scales)
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("write %v: element %d reads %g, want %g", w, w[0]+i, got[i], want[i])
			}
		}
	}
}

// inBlocks says whether byte b of a q4 image holds codes or a scale of
// the blocks of write w ([off, n]).
func inBlocks(b int, w [2]int) bool {
	for blk := w[0] / 32; blk < (w[0]+w[1])/32; blk++ {
		if c := CodesByte(backend.Q4, blk); b >= c && b < c+16 {
			return true
		}
		if p := ScaleByte(backend.Q4, blk); b == p || b == p+1 {
			return true
		}
	}
	return false
}
