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

// attn's q8 gives llama.cpp's q8_0 bytes for the same float32 input:
// random rows, rows with ties at every step (x·(1/d) half-way between
// integers), all-zero and one-value blocks, subnormals and large values
// below q8's bound, quantized by backend.QuantizeQ8 and by ggml's own
// ggml_quantize_chunk (bench/peers/ggml_peer.py q8_0), compared block by
// block: the float16 scale and the 32 int8 values.
func TestQ8MatchesGGML(t *testing.T) {
	if os.Getenv("ATTN_PEERS") == "" {
		t.Skip("set ATTN_PEERS=1 after bench/peers/install.sh to run ggml")
	}
	rng := rand.New(rand.NewPCG(46, 8))
	const rows, d = 64, 128
	x := make([]float32, rows*d)
	for i := range x {
		x[i] = float32(rng.NormFloat64())
	}
	for blk := 0; blk < len(x)/backend.Q8Block; blk++ {
		b := x[blk*backend.Q8Block : (blk+1)*backend.Q8Block]
		switch blk % 8 {
		case 1: // ties: x·(1/d) half-way between integers (d = 127/127 = 1)
			for i := range b {
				b[i] = float32(i%5) - 2.5
			}
			b[0] = 127
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
				b[i] *= 8e6 / 4 // near q8's bound, 127·65520
			}
		case 6:
			for i := range b {
				b[i] *= 1e-6 // a float16-subnormal scale
			}
		}
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "x.npy")
	f, err := os.Create(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&kernels.Tensor{Shape: []int{rows, d}, Data: x}).WriteNpy(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	dst := filepath.Join(dir, "x.q8_0")
	peers, _ := filepath.Abs("peers")
	cmd := exec.Command("/usr/bin/python3", filepath.Join(peers, "ggml_peer.py"), "q8_0", src, dst)
	cmd.Dir = peers
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("ggml_peer.py q8_0: %v: %s", err, out)
	}
	ggml, err := os.ReadFile(dst)
	if err != nil {
		t.Fatal(err)
	}
	codes := make([]int8, len(x))
	scales := make([]uint16, len(x)/backend.Q8Block)
	if bad := backend.QuantizeQ8(codes, scales, x); bad >= 0 {
		t.Fatalf("QuantizeQ8 refused block %d", bad)
	}
	var ours bytes.Buffer
	for blk, sc := range scales {
		binary.Write(&ours, binary.LittleEndian, sc)
		binary.Write(&ours, binary.LittleEndian, codes[blk*backend.Q8Block:(blk+1)*backend.Q8Block])
	}
	if len(ggml) != ours.Len() {
		t.Fatalf("ggml wrote %d bytes, attn %d", len(ggml), ours.Len())
	}
	for blk := range scales {
		a, g := ours.Bytes()[blk*34:(blk+1)*34], ggml[blk*34:(blk+1)*34]
		if !bytes.Equal(a, g) {
			t.Errorf("block %d (first value %g): attn %x, ggml %x", blk, x[blk*backend.Q8Block], a, g)
		}
	}
}
