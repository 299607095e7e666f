package main

// attn run's memory check: what a problem needs in host and device
// memory, compared with what is available before anything is read.

import (
	"fmt"
	"math"
	"math/big"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
	"github.com/gogpu/gputypes"
)

// memoryNeed is what attn run holds in memory at its peak, in bytes, by
// part, estimated from the headers. Float64 because B·H·Nq·Nk·4 may pass
// 2⁶⁴ for shapes whose files are small.
type memoryNeed struct {
	// inputs: Q, K, V and the bias read as float32, the mask as bools
	// and again as the float32 kernels.Attention uploads, the variant
	// files (slopes, sinks, key lengths).
	inputs float64
	// backend: the backend's buffers where they live in host memory (the
	// CPU backend, a software or integrated GPU): copies of the inputs,
	// O, the LSE and, on the staged path, the scores.
	backend float64
	// outputs: what is read back, O, the LSE, the weights and the
	// scores.
	outputs float64
	// scores: the part of backend and outputs that is B·H·Nq·Nk
	// matrices, scoresLen elements each.
	scores, scoresLen float64
}

func (m memoryNeed) total() float64 { return m.inputs + m.backend + m.outputs }

// runMemory estimates what running f on the inputs in files needs, the
// score matrix counted where the strategy forms it: staged is whether
// the call runs staged (what Strategy.Choose decides), hostBuffers
// whether the backend's buffers live in host memory.
func runMemory(f *runFlags, files map[string]*npyFile, hostBuffers, staged bool) memoryNeed {
	n := func(key string) float64 {
		if nf := files[key]; nf != nil {
			return float64(nf.n)
		}
		return 0
	}
	b, h, nq, _ := operand.Dims(files["q"].shape, f.layout)
	_, _, nk, _ := operand.Dims(files["k"].shape, f.layout)
	_, _, _, dv := operand.Dims(files["v"].shape, f.layout)
	rows := float64(b) * float64(h) * float64(nq)
	scoresLen := rows * float64(nk)
	oLen := rows * float64(dv)
	weights := f.weights != "" || f.heatmap != ""

	m := memoryNeed{scoresLen: scoresLen}
	// With a past, K and V are copied into the keys and values attention
	// reads (and -present-k, -present-v write): the past's rows and
	// theirs.
	kn, vn := n("k"), n("v")
	if files["pastk"] != nil {
		kn, vn = n("pastk")+n("k"), n("pastv")+n("v")
	}
	m.inputs = 4*(n("q")+n("k")+n("v")+n("bias")) + 5*n("mask") + 4*(n("alibi")+n("sinks")) + 8*n("kvlens")
	m.inputs += 4*(n("pastk")+n("pastv")) + 8*(n("cuq")+n("cuk")+n("table")+n("cachelens")+n("indices"))
	if files["pastk"] != nil {
		m.inputs += 4 * (kn + vn)
	}
	m.outputs = 4 * oLen
	if f.lse != "" {
		m.outputs += 4 * rows
	}
	if weights {
		m.outputs += 4 * scoresLen
		m.scores += 4 * scoresLen
	}
	if f.scores != "" {
		m.outputs += 4 * scoresLen
		m.scores += 4 * scoresLen
	}
	if hostBuffers {
		m.backend = 4 * (n("q") + kn + vn + n("bias") + n("mask") + oLen)
		if f.lse != "" {
			m.backend += 4 * rows
		}
		if staged {
			m.backend += 4 * scoresLen
			m.scores += 4 * scoresLen
		}
	}
	return m
}

// checkMemory refuses, with an error wrapping backend.ErrTooLarge, a run
// whose inputs and outputs need more memory than is available now
// (cpu.AvailableMemory: MemAvailable, lowered to the cgroup's headroom):
// reading them would only end in the kernel's OOM killer. Where the
// available memory cannot be read, nothing is refused. The strategy is
// the one kernels.Attention will run on prob (Strategy.Choose); a
// strategy that cannot run it is refused here, naming the flag.
func checkMemory(f *runFlags, files map[string]*npyFile, be backend.Backend, prob backend.Problem) error {
	strategy, err := f.strategy.Choose(be, prob, f.weights != "" || f.heatmap != "" || f.scores != "")
	if err != nil {
		return fmt.Errorf("-strategy %s: %w", f.strategy, err)
	}
	avail, ok := cpu.AvailableMemory()
	if !ok {
		return nil
	}
	info := be.Info()
	dt := info.Adapter.DeviceType
	hostBuffers := info.Kind == backend.KindCPU || dt == gputypes.DeviceTypeCPU || dt == gputypes.DeviceTypeIntegratedGPU
	m := runMemory(f, files, hostBuffers, strategy == kernels.Staged)
	need := m.total()
	if need <= float64(avail) {
		return nil
	}
	parts := fmt.Sprintf("inputs %s as float32", humanBytes(m.inputs))
	if m.backend > 0 {
		parts += fmt.Sprintf(", the %s backend's buffers %s", be.Name(), humanBytes(m.backend))
	}
	parts += fmt.Sprintf(", outputs %s", humanBytes(m.outputs))
	msg := fmt.Sprintf("inputs and outputs need %s, %s is available (%s)", humanBytes(need), humanBytes(float64(avail)), parts)
	if m.scores > 0 && need-m.scores <= float64(avail) {
		msg += fmt.Sprintf("; %s of it is B·H·Nq·Nk = %.0f-element matrices (scores, weights), which -strategy fused without -weights, -scores or -heatmap never forms",
			humanBytes(m.scores), m.scoresLen)
	}
	return backend.Errorf(backend.ErrTooLarge, "%s", msg)
}

// humanBytes prints a byte count in binary units, as sizeString does.
func humanBytes(n float64) string {
	b, _ := big.NewFloat(math.Round(n)).Int(nil)
	return sizeString(b)
}
