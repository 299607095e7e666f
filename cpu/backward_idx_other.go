//go:build !amd64 || purego

package cpu

// hasBackIdx: the index-list backward gathers a row's keys here.
func hasBackIdx() bool { return false }

var backIdx = false

func dotsIdx([]float32, int, []float32, []int, int, int, []float32, int, float32, [4]float32) {}

func axpysIdx([]float32, int, []float32, []int, int, int, []float32, int) {}

func accIdx([]float32, int, []float32, int, int, int, []float32, []int, int) {}
