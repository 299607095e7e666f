//go:build amd64 && !purego

package cpu

// dotRows4AVX512 and axpyRows4AVX512 are the decoding kernels
// (decode_amd64.s): see dotRows and axpyRows.
//
//go:noescape
func dotRows4AVX512(q *float32, ldq int, k *float32, ldk int, n int, d int, s *float32, lds int, alpha float32)

//go:noescape
func axpyRows4AVX512(p *float32, ldp int, v *float32, ldv int, n int, dv int, acc *float32, ldacc int)

// hasDecode says whether the decoding kernels run (AVX-512F; turned off
// with the other sixteen-lane loops by GODEBUG=cpu.avx512f=off).
func hasDecode() bool { return hasAVX512 }

// dotRows4 runs dotRows4AVX512 over as many of the n keys as it takes (a
// multiple of 4) and returns how many; d must be a multiple of 16.
func dotRows4(q []float32, ldq int, k []float32, ldk, n, d int, s []float32, lds int, alpha float32) int {
	n4 := n &^ 3
	if !hasAVX512 || n4 == 0 {
		return 0
	}
	_ = q[3*ldq+d-1]
	_ = k[(n4-1)*ldk+d-1]
	_ = s[3*lds+n4-1]
	dotRows4AVX512(&q[0], ldq, &k[0], ldk, n4, d, &s[0], lds, alpha)
	return n4
}

// axpyRows4 runs axpyRows4AVX512 when it can (dv a multiple of 16) and
// reports whether it did.
func axpyRows4(p []float32, ldp int, v []float32, ldv, n, dv int, acc []float32, ldacc int) bool {
	if !hasAVX512 || n == 0 {
		return n == 0
	}
	_ = p[3*ldp+n-1]
	_ = v[(n-1)*ldv+dv-1]
	_ = acc[3*ldacc+dv-1]
	axpyRows4AVX512(&p[0], ldp, &v[0], ldv, n, dv, &acc[0], ldacc)
	return true
}
