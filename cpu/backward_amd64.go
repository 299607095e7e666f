//go:build amd64 && !purego

package cpu

// dsRowAVX2 is dsRow for len(p) a multiple of 8, dp as long
// (backward_amd64.s).
//
//go:noescape
func dsRowAVX2(p, dp []float32, delta float32)

// dsRowVec runs dsRowAVX2 over as much of p as it takes and returns how
// many values it did.
func dsRowVec(p, dp []float32, delta float32) int {
	n := len(p) &^ 7
	if !hasAVX2 || n == 0 {
		return 0
	}
	dsRowAVX2(p[:n], dp[:n], delta)
	return n
}
