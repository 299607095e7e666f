//go:build !amd64 || purego

package sgemm

import "errors"

// amxCPU is false off amd64 and under -tags purego: no tiles.
const amxCPU = false

var amxTiles tileFunc

// amxPeakLoop: no probe without the tiles.
var amxPeakLoop func(n int, a, b []uint16, c []float32)

func requestAMX() error { return errors.New("AMX needs amd64 assembly") }
