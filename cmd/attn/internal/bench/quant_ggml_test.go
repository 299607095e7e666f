package bench_test

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/kernels"
)

// attn's q8 and q4 give llama.cpp's q8_0 and q4_0 bytes for the same
// float32 input: random rows, rows with ties at every step (x·(1/d)
// half-way between integers), all-zero and one-value blocks, a block
// whose largest magnitude is positive beside one where it is negative,
// subnormals and large values below each format's bound, quantized by
// backend.QuantizeQ8 (QuantizeQ4) and by ggml's own ggml_quantize_chunk
// (bench/peers/ggml_peer.py q8_0, q4_0), compared block by block: the
// float16 scale and the 32 codes.
func TestQuantMatchesGGML(t *testing.T) {
	if os.Getenv("ATTN_PEERS") == "" {
		t.Skip("set ATTN_PEERS=1 after bench/peers/install.sh to run ggml")
	}
	for _, dt := range []backend.DType{backend.Q8, backend.Q4} {
		t.Run(dt.String(), func(t *testing.T) {
			x := ggmlRows(dt)
			ggml := ggmlBlocks(t, dt, x)
			var ours bytes.Buffer
			scales := make([]uint16, len(x)/backend.Q8Block)
			if dt == backend.Q8 {
				codes := make([]int8, len(x))
				if bad := backend.QuantizeQ8(codes, scales, x); bad >= 0 {
					t.Fatalf("QuantizeQ8 refused block %d", bad)
				}
				for blk, sc := range scales {
					binary.Write(&ours, binary.LittleEndian, sc)
					binary.Write(&ours, binary.LittleEndian, codes[blk*backend.Q8Block:(blk+1)*backend.Q8Block])
				}
			} else {
				codes := make([]uint8, len(x)/2)
				if bad := backend.QuantizeQ4(codes, scales, x); bad >= 0 {
					t.Fatalf("QuantizeQ4 refused block %d", bad)
				}
				for blk, sc := range scales {
					binary.Write(&ours, binary.LittleEndian, sc)
					ours.Write(codes[blk*16 : (blk+1)*16])
				}
			}
			if len(ggml) != ours.Len() {
				t.Fatalf("ggml wrote %d bytes, attn %d", len(ggml), ours.Len())
			}
			size := ours.Len() / len(scales)
			for blk := range scales {
				a, g := ours.Bytes()[blk*size:(blk+1)*size], ggml[blk*size:(blk+1)*size]
				if !bytes.Equal(a, g) {
					t.Errorf("block %d (first value %g): attn %x, ggml %x", blk, x[blk*backend.Q8Block], a, g)
				}
			}
		})
	}
}

// ggmlRows are TestQuantMatchesGGML's rows for dt: 64 rows of 128.
func ggmlRows(dt backend.DType) []float32 {
	rng := rand.New(rand.NewPCG(46, 8))
	const rows, d = 64, 128
	x := make([]float32, rows*d)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	large := float32(8e6 / 4) // near q8's bound, 127·65520
	if dt == backend.Q4 {
		large = 5e5 / 4 // near q4's, 8·65520
	}
	for blk := 0; blk < len(x)/backend.Q8Block; blk++ {
		b := x[blk*backend.Q8Block : (blk+1)*backend.Q8Block]
		switch blk % 9 {
		case 1: // ties: x·(1/d) half-way between integers (d = ±1)
			for i := range b {
				b[i] = float32(i%5) - 2.5
			}
			b[0] = 127
			if dt == backend.Q4 {
				b[0] = -8
			}
		case 2:
			clear(b)
		case 3:
			clear(b)
			b[7] = -3
		case 4:
			for i := range b {
				b[i] *= 1e-40 // subnormal float32
			}
		case 5:
			for i := range b {
				b[i] *= large
			}
		case 6:
			for i := range b {
				b[i] *= 1e-6 // a float16-subnormal scale
			}
		case 7: // the largest magnitude positive, and its negation capped
			b[3], b[20] = 5, -5
		}
	}
	return x
}

// ggmlBlocks is x (rows of 128) quantized to dt by ggml_peer.py.
func ggmlBlocks(t *testing.T, dt backend.DType, x []float32) []byte {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "x.npy")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&kernels.Tensor{Shape: []int{len(x) / 128, 128}, Data: x}).WriteNpy(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dst := filepath.Join(dir, "x.blocks")
	peers, _ := filepath.Abs(peersDir)
	cmd := exec.Command("/usr/bin/python3", filepath.Join(peers, "ggml_peer.py"), dt.String()+"_0", src, dst)
	cmd.Dir = peers
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ggml_peer.py %v_0: %v: %s", dt, err, out)
	}
	ggml, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	return ggml
}
