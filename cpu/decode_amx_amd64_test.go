//go:build amd64 && !purego

package cpu

import (
	"strings"
	"testing"

	"golang.org/x/sys/cpu"
)

// Every tile kernel's known-answer check passes on a CPU that runs the
// tiles, and a wrong answer injected into any one (tileFault) turns its
// format off, naming the kernel: the format then runs on the vector
// kernels, and Info's Detail says why (TestDecode8Detail).
func TestTileChecksInjected(t *testing.T) {
	for _, f := range []struct {
		name   string
		on     func() (bool, string)
		has    bool
		checks []tileCheck
	}{
		{"q8", q8TilesOn, hasTileISA() && cpu.X86.HasAMXInt8, q8Checks},
		{"fp8", fp8TilesOn, hasTileISA() && cpu.X86.HasAMXBF16, fp8Checks},
	} {
		t.Run(f.name, func(t *testing.T) {
			tilesOrSkip(t, f.on)
			if on, note := tilesOn(f.has, f.checks); !on || note != f.checks[0].kernel+", "+f.checks[1].kernel {
				t.Fatalf("tilesOn = %v, %q; want on, naming both kernels", on, note)
			}
			for _, c := range f.checks {
				tileFault = c.kernel
				on, why := tilesOn(f.has, f.checks)
				tileFault = ""
				if on || !strings.HasPrefix(why, c.kernel+" failed its known-answer check: ") {
					t.Errorf("a wrong answer in %s: tilesOn = %v, %q; want off, naming it", c.kernel, on, why)
				}
			}
		})
	}
}
