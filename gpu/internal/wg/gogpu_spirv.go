//go:build gogpu && !nogpu

package wg

// gogpu/naga's SPIR-V writer zero-initialises a compute kernel's
// workgroup memory, always, with naga's polyfill: at the entry point's
// start, invocation (0, 0, 0) alone stores a null constant over each
// workgroup variable, and a barrier follows. Lavapipe's compiler takes
// tens of seconds over those stores (a whole 2112-float array in one
// invocation): fusedtile.wgsl at D = 40 compiled in 217 s through
// gogpu/naga's SPIR-V and in about 1 s through Rust naga's or with the
// stores dropped (docs/gpu.md). On a GPU they are serial work at every
// workgroup's start, while the other invocations wait at the barrier.
//
// attn's kernels write every workgroup element they read before reading
// it (the default build runs them so: wgpu-native's SPIR-V for them
// initialises no workgroup memory), so dropZeroing removes the stores
// and keeps the rest, the empty branch and the barrier.

import "fmt"

// SPIR-V opcodes and operands that dropZeroing reads.
const (
	opEntryPoint        = 15
	opFunction          = 54
	opVariable          = 59
	opStore             = 62
	opConstantNull      = 46
	opLabel             = 248
	opBranch            = 249
	opBranchConditional = 250
	opSelectionMerge    = 247
	opAll               = 155
	opIEqual            = 170
	storageWorkgroup    = 4
)

// dropZeroing returns words, a SPIR-V module, without the workgroup
// zeroing stores of naga's polyfill, and how many it dropped. The
// polyfill is found by its form at the start of the entry point's
// function: OpIEqual of a loaded vec3 with a null constant, OpAll of that, an
// OpSelectionMerge and an OpBranchConditional on it, and a block that
// holds nothing but OpStores of null constants into Workgroup
// variables, ending in an OpBranch to the merge. Anything else is left
// as it is, a polyfill of another form too: TestDropZeroing compiles
// every kernel and fails on a zeroing store left, so that a gogpu/naga
// that writes the polyfill otherwise is noticed.
func dropZeroing(words []uint32) ([]uint32, int, error) {
	if len(words) < 5 {
		return nil, 0, fmt.Errorf("SPIR-V of %d words: no header", len(words))
	}
	type inst struct{ at, n int }
	var insts []inst
	for at := 5; at < len(words); {
		n := int(words[at] >> 16)
		if n == 0 || at+n > len(words) {
			return nil, 0, fmt.Errorf("SPIR-V: a malformed instruction at word %d", at)
		}
		insts = append(insts, inst{at, n})
		at += n
	}
	op := func(i int) uint32 { return words[insts[i].at] & 0xffff }
	arg := func(i, k int) uint32 {
		if k+1 >= insts[i].n {
			return 0
		}
		return words[insts[i].at+1+k]
	}
	workgroup, null := map[uint32]bool{}, map[uint32]bool{}
	var entry, fn uint32 // the entry point's function, and the function at i
	lo, hi := 0, 0       // the polyfill's stores, instructions lo to hi-1
	for i := range insts {
		switch op(i) {
		case opEntryPoint:
			if entry == 0 {
				entry = arg(i, 1)
			}
		case opFunction:
			fn = arg(i, 1)
		case opVariable:
			if arg(i, 2) == storageWorkgroup {
				workgroup[arg(i, 1)] = true
			}
		case opConstantNull:
			null[arg(i, 1)] = true
		case opBranchConditional:
			// OpIEqual, OpAll, OpSelectionMerge, OpBranchConditional.
			if hi > 0 || fn != entry || i < 3 || op(i-1) != opSelectionMerge || op(i-2) != opAll || op(i-3) != opIEqual ||
				arg(i, 0) != arg(i-2, 1) || arg(i-2, 2) != arg(i-3, 1) || !null[arg(i-3, 3)] || arg(i, 2) != arg(i-1, 0) {
				continue
			}
			j := i + 1
			if j >= len(insts) || op(j) != opLabel || arg(j, 0) != arg(i, 1) {
				continue
			}
			first := j + 1
			for j = first; j < len(insts) && op(j) == opStore && workgroup[arg(j, 0)] && null[arg(j, 1)]; j++ {
			}
			if j > first && j < len(insts) && op(j) == opBranch && arg(j, 0) == arg(i, 2) {
				lo, hi = first, j
			}
		}
	}
	if hi == 0 {
		return words, 0, nil
	}
	// The stores are consecutive, and the OpBranch after them is kept.
	out := append(make([]uint32, 0, len(words)), words[:insts[lo].at]...)
	return append(out, words[insts[hi].at:]...), hi - lo, nil
}
