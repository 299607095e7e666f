package cpu

import (
	"errors"
	"testing"

	"github.com/attn-go/attn/backend"
)

// TestMemoryMaxBufferLen: the largest buffer a CPU backend reports is what
// the memory available when it opened can hold, not the 64 TiB guard, and
// Alloc refuses one element more with ErrTooLarge (the backend contract)
// without trying to allocate it.
func TestMemoryMaxBufferLen(t *testing.T) {
	before, ok := AvailableMemory()
	if !ok {
		t.Skip("available memory cannot be read on this system")
	}
	be, err := New()
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	after, _ := AvailableMemory()
	// Other processes may allocate or free between the readings: the
	// backend's reading lies between them, give or take what moved.
	const slack = 256 << 20
	got := 4 * uint64(be.Caps().MaxBufferLen)
	if hi := max(before, after) + slack; got > hi {
		t.Errorf("Caps().MaxBufferLen = %d float32 (%.1f GiB), more than the %.1f GiB available",
			be.Caps().MaxBufferLen, float64(got)/(1<<30), float64(max(before, after))/(1<<30))
	}
	if lo := min(before, after); lo > slack && got < lo-slack {
		t.Errorf("Caps().MaxBufferLen = %d float32 (%.1f GiB), less than the %.1f GiB available",
			be.Caps().MaxBufferLen, float64(got)/(1<<30), float64(lo)/(1<<30))
	}
	n := be.Caps().MaxBufferLen + 1
	if _, err := be.Alloc(backend.Float32, n); !errors.Is(err, backend.ErrTooLarge) {
		t.Errorf("Alloc(MaxBufferLen+1 = %d) = %v, want ErrTooLarge", n, err)
	}
}
