package kernels

// NonFinite is the index and value of the first element of t that
// Attention's input check (the one Options.AllowNonFinite turns off)
// refuses, or −1: NaN or an infinity, where a bias (bias true) may hold
// −Inf, a hidden key. Attention names only the operand ("K of shape
// ..."); a caller that reads each input from its own file, or builds one
// operand out of several (a past and the new keys), checks each part with
// NonFinite to name the file, under the same policy.
func NonFinite(t *Tensor, bias bool) (int, float32) {
	return firstBad(t, bias)
}
