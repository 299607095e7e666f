//go:build !(amd64 || arm64) || purego

package cpu

import "github.com/attn-go/attn/backend"

// Off amd64 and arm64 and under -tags purego the conversions are the Go
// loops.

func widenVec(backend.DType, []float32, []uint16) int { return 0 }

func narrowVec(backend.DType, []uint16, []float32) int { return 0 }
