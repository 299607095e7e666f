//go:build !amd64 || purego

package cpu

import "github.com/attn-go/attn/backend"

// Off amd64 and under -tags purego the 8-bit stores are written by the
// Go loops (backend.QuantizeQ8, backend.EncodeFP8s).

func quantQ8Vec(int, []int8, []uint16, []float32) int { return 0 }

func encodeFP8Vec(int, []uint8, []float32) int { return 0 }

func quantWriteWidth(backend.DType) int { return -1 }
