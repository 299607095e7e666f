//go:build amd64 && !purego

package cpu

func quantDot(q []float32, ldq int, k rawRows, n, d int, s []float32, lds int, alpha float32) int {
	return 0
}

func quantAxpy(p []float32, ldp int, v rawRows, n, dv int, acc []float32, ldacc int) bool {
	return false
}
