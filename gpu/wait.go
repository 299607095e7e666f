//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"time"

	"github.com/attn-go/attn/gpu/internal/plan"
)

// A wait for the device (wg.Pending.Wait) first spins, then sleeps
// between polls (wg's sleep.go says how). The spin is pollSpin on a
// CPU-type adapter, whose work runs on the host's threads that a
// spinning waiter would take a core from, and pollSpinHardware on a GPU:
// there a decoding step takes a fraction of a millisecond, and with the
// short spin every step would wait for a sleep's late wake-up (on an
// H100 with Go's sleeps, every step took the same time, over a
// millisecond, whatever its size, from 256 MiB of K and V down to a
// few).
const (
	pollSpin         = 200 * time.Microsecond
	pollSpinHardware = 2 * time.Millisecond
)

// spinFor is how long wait spins before it sleeps, under plan a.
func spinFor(a plan.AdapterPlan) time.Duration {
	if a.Hardware {
		return pollSpinHardware
	}
	return pollSpin
}
