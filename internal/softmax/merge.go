// Package softmax merges, on the host, partial softmax results of one
// query row over disjoint sets of keys: the CPU backend's split key
// ranges (flash-decoding's split-KV) and kernels' cascade and tree
// passes. The GPU merges its own on the device (shaders' merge.wgsl).
//
// A part is in the online softmax's form, over the scores s_j of its
// keys and their value rows v_j:
//
//	M = max_j s_j,  L = Σ_j e^(s_j − M),  Acc = Σ_j e^(s_j − M)·v_j
//
// so that its output is Acc/L and its log-sum-exp M + log L. A
// normalised output o with its log-sum-exp is the part {lse, 1, o}.
// Parts over disjoint keys merge exactly, rescaled to their largest M:
//
//	M = max_s M_s,  w_s = e^(M_s − M),  L = Σ_s w_s·L_s,  Acc = Σ_s w_s·Acc_s
//
// The weights and L are float64; Acc is summed in float32, a pass over
// each part's values in the parts' order (the part that dst is first),
// as the CPU's kernels accumulate a row, and as fast as its own loop
// over its splits was. The same parts give the same bits.
package softmax

import "math"

// Part is a partial softmax of one query row (see the package doc). M
// = −Inf says it saw no key: its L and Acc are then not read.
type Part struct {
	M, L float64
	Acc  []float32
}

// Merge merges parts into dst, the merged Acc, and returns the merged M
// and L. Each part's Acc holds at least len(dst) values; dst is one of
// them, or apart from all of them. Where no part saw a key it returns
// −Inf and 0, dst zeros.
func Merge(dst []float32, parts []Part) (m, l float64) {
	return merge(dst, parts, false)
}

// MergeOutputs merges parts into dst, the merged output Acc/L, and
// returns the merged log-sum-exp M + log L: for normalised outputs
// {lse_s, 1, o_s},
//
//	dst = Σ_s w_s·o_s / Σ_s w_s,  LSE = M + log Σ_s w_s
//
// dst is one of the parts' Acc, or apart from all of them. Where no part
// saw a key it returns −Inf, dst zeros.
func MergeOutputs(dst []float32, parts []Part) float64 {
	m, l := merge(dst, parts, true)
	return m + math.Log(l) // −Inf where m is
}

// merge is Merge, dst divided by the merged L where norm is set.
func merge(dst []float32, parts []Part, norm bool) (m, l float64) {
	m = math.Inf(-1)
	for _, p := range parts {
		m = max(m, p.M)
	}
	if math.IsInf(m, -1) || len(dst) == 0 {
		clear(dst)
		return m, 0 // no key, or no values: L is not needed
	}
	// The part that is dst, if any, is scaled in place first, so that
	// it is read before it is written; the others add to it in order.
	in := -1
	for s, p := range parts {
		if !math.IsInf(p.M, -1) && &p.Acc[0] == &dst[0] {
			in = s
			w := float32(math.Exp(p.M - m))
			for j := range dst {
				dst[j] *= w
			}
			break
		}
	}
	set := in == -1 // the first part sets dst
	for s, p := range parts {
		if math.IsInf(p.M, -1) {
			continue
		}
		w := math.Exp(p.M - m)
		l += w * p.L
		if s == in {
			continue
		}
		x, w32 := p.Acc[:len(dst)], float32(w)
		if set {
			for j := range dst {
				dst[j] = w32 * x[j]
			}
			set = false
			continue
		}
		for j := range dst {
			dst[j] += w32 * x[j]
		}
	}
	if norm {
		for j := range dst {
			dst[j] = float32(float64(dst[j]) / l)
		}
	}
	return m, l
}
