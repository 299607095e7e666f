package sgemm

import (
	"errors"
	"fmt"

	"github.com/attn-go/attn/backend"
)

// AMXProbe measures AMX's tiles at their peak: four independent
// TDPBF16PS a round, back to back, on tiles loaded once (A's two 16×32
// bfloat16 tiles by B's two 32×16 into C's four 16×16 float32 ones, as
// amxBF16's blocks use them), nothing else in the loop, so that a round
// takes the tile unit's issue rate (one TDPBF16PS every 16 cycles on
// Sapphire Rapids) and nothing of memory. Each goroutine that times it
// needs its own probe.
type AMXProbe struct {
	a, b []uint16
	c    []float32
}

const (
	// AMXProbeFLOPs is the float32 operations of one round: four
	// TDPBF16PS, each 16×16 sums of 32 products (a multiply and an add).
	AMXProbeFLOPs = 4 * 16 * 16 * 32 * 2
	// AMXProbeKernel names the probe's loop.
	AMXProbeKernel = "TDPBF16PS, 4 tiles"

	// amxProbeA and amxProbeB are the bfloat16s of A's and B's two
	// tiles.
	amxProbeA = 2 * 16 * 32
	amxProbeB = 16 * 64
	// amxProbeOne is bfloat16's 2⁻⁸, every operand: a round adds 32
	// products of 2⁻¹⁶ to each sum, 2⁻¹¹, so n rounds sum to n·2⁻¹¹
	// exactly for every n up to 2²⁴.
	amxProbeOne = 0x3b80
)

// NewAMXProbe is a probe of this CPU's tiles, or why there is none: no
// AMX-BF16 in this build or CPU, the kernel's refusal, or a failed
// known-answer check (three rounds).
func NewAMXProbe() (*AMXProbe, error) {
	if !amxCPU || amxPeakLoop == nil {
		return nil, errors.New("this build and CPU have no AMX-BF16 (amd64 with AMX-TILE, AMX-BF16 and AVX512_BF16)")
	}
	if err := amxGranted(); err != nil {
		return nil, backend.Wrapf(err, "refused")
	}
	p := &AMXProbe{a: make([]uint16, amxProbeA), b: make([]uint16, amxProbeB), c: make([]float32, amxRows*amxRows)}
	for i := range p.a {
		p.a[i] = amxProbeOne
	}
	for i := range p.b {
		p.b[i] = amxProbeOne
	}
	if err := p.Check(3); err != nil {
		return nil, err
	}
	return p, nil
}

// Run runs rounds rounds of the probe, AMXProbeFLOPs each.
func (p *AMXProbe) Run(rounds int) { amxPeakLoop(rounds, p.a, p.b, p.c) }

// Check runs rounds rounds (at most 2²⁴) and checks every sum.
func (p *AMXProbe) Check(rounds int) error {
	if rounds < 0 || rounds > 1<<24 {
		return fmt.Errorf("sgemm: AMX probe of %d rounds: want 0 to 2²⁴", rounds)
	}
	clear(p.c)
	p.Run(rounds)
	want := float32(rounds) * 0x1p-11
	for i, v := range p.c {
		if v != want {
			return fmt.Errorf("sgemm: AMX probe: sum %d of %d rounds is %g, want %g", i, rounds, v, want)
		}
	}
	return nil
}
