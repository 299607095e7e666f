//go:build !(amd64 || arm64) || purego

package cpu

import "github.com/attn-go/attn/backend"

func hasDecode() bool { return false }

func decodeStep() int { return 4 }

func dotRows4([]float32, int, rawRows, int, int, []float32, int, float32) int { return 0 }

func axpyRows4([]float32, int, rawRows, int, int, []float32, int) bool { return false }

func hasDecodeIdx(backend.DType) bool { return false }

func dotRows4Idx([]float32, int, store, []int, int, int, []float32, int, float32) int { return 0 }

func axpyRows4Idx([]float32, int, store, []int, int, int, []float32, int) {}

var decodeIdx = false

// decodeDetail names the decoding path, for Info's Detail.
func decodeDetail() string { return "decoding in Go" }
