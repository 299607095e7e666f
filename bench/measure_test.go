package bench

import (
	"context"
	"testing"

	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// A point measured on its own (as in a child process) drops each host
// input once it is uploaded, so the process holds Q, K and V once; a
// shared one keeps them for the next backend and the peers. Both check
// the same sampled rows.
func TestMeasureConsumesInputs(t *testing.T) {
	be, err := cpu.New()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	sh := Shape{B: 1, H: 2, KVHeads: 1, N: 200, D: 24}
	for _, consume := range []bool{false, true} {
		in := newInputs(sh.Problem(), 3, 5)
		in.consume = consume
		pt := measureAttn(context.Background(), be, kernels.Fused, in, &Config{Budget: 0, MinRuns: 1})
		if pt.Status != StatusOK || pt.MaxErr == nil || *pt.MaxErr > 1e-5 || pt.CheckedRows != 5 {
			t.Fatalf("consume=%v: status %s (%s), max err %v, %d rows checked", consume, pt.Status, pt.Error, pt.MaxErr, pt.CheckedRows)
		}
		if kept := in.q != nil && in.k != nil && in.v != nil; kept == consume {
			t.Errorf("consume=%v: inputs kept = %v", consume, kept)
		}
	}
}
