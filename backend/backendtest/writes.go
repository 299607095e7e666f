package backendtest

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/attn-go/attn/backend"
)

// testConcurrentWrites: goroutines Write (and WriteBits, for the half
// dtypes) ranges of one buffer at once, ranges that meet inside stored
// words (half elements two a word, 8-bit ones four, a q8 or q4 block's
// scale beside its neighbour's), and the buffer holds what the same writes
// made in turn give, bit for bit, in every dtype the backend stores
// (Backend.Write's doc allows the writes at once). Run with -race (CI
// does).
func (s *suite) testConcurrentWrites(t *testing.T) {
	dts := []backend.DType{backend.Float32}
	if s.caps.Half {
		dts = append(dts, backend.Float16, backend.BFloat16)
	}
	if s.caps.Quant8 {
		dts = append(dts, backend.Q8, backend.FP8)
	}
	if s.caps.Quant4 {
		dts = append(dts, backend.Q4)
	}
	const workers = 4
	for _, dt := range dts {
		t.Run(dt.String(), func(t *testing.T) {
			// Ranges of 1, 3, 5 … elements (whole q8 and q4 blocks of
			// 32: one block a range, so every scale word is two ranges').
			unit := dt.Block()
			var ranges [][2]int // [off, n]
			for off, i := 0, 0; i < 64; i++ {
				n := unit * (1 + 2*(i%3))
				if unit > 1 {
					n = unit
				}
				ranges = append(ranges, [2]int{off, n})
				off += n
			}
			total := ranges[len(ranges)-1][0] + ranges[len(ranges)-1][1]
			rng := rand.New(rand.NewPCG(81, uint64(dt)))
			src := make([]float32, total)
			for i := range src {
				src[i] = float32(rng.NormFloat64())
			}
			bits := make([]uint16, total) // half bits, WriteBits's source
			for i := range bits {
				bits[i] = uint16(rng.Uint32()&0x3bff) | uint16(i%2)<<15 // finite halves of either sign
			}
			write := func(buf backend.Buffer, r [2]int, useBits bool) error {
				if useBits {
					return s.be.WriteBits(buf, r[0], bits[r[0]:r[0]+r[1]])
				}
				return s.be.Write(buf, r[0], src[r[0]:r[0]+r[1]])
			}
			for _, useBits := range []bool{false, true} {
				if useBits && !dt.Half() {
					continue
				}
				inTurn, err := s.be.Alloc(dt, total)
				if err != nil {
					t.Fatal(err)
				}
				defer inTurn.Release()
				together, err := s.be.Alloc(dt, total)
				if err != nil {
					t.Fatal(err)
				}
				defer together.Release()
				for _, r := range ranges {
					if err := write(inTurn, r, useBits); err != nil {
						t.Fatal(err)
					}
				}
				var wg sync.WaitGroup
				for g := range workers {
					wg.Go(func() {
						for i := g; i < len(ranges); i += workers {
							if err := write(together, ranges[i], useBits); err != nil {
								t.Errorf("goroutine %d: %v", g, err)
								return
							}
						}
					})
				}
				wg.Wait()
				want, got := make([]float32, total), make([]float32, total)
				if err := s.be.Read(want, inTurn, 0); err != nil {
					t.Fatal(err)
				}
				if err := s.be.Read(got, together, 0); err != nil {
					t.Fatal(err)
				}
				zeros := 0
				for i := range want {
					if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
						t.Fatalf("WriteBits %v: element %d is %g written at once, %g in turn", useBits, i, got[i], want[i])
					}
					if want[i] == 0 {
						zeros++
					}
				}
				if zeros > total/8 {
					t.Fatalf("WriteBits %v: %d of %d elements are zero: the writes did not land", useBits, zeros, total)
				}
			}
		})
	}
}
