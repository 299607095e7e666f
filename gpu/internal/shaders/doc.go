// Package shaders holds attn's WGSL compute kernels, one per file,
// embedded with go:embed:
//
//   - scores.wgsl: S = scale·Q·Kᵀ, register-tiled through workgroup
//     memory, carried to a score stage: capped, biased (bias and ALiBi)
//     or masked;
//   - softmax.wgsl: row-wise softmax in place, in two passes (stats,
//     normalize), with the key range, keep masking, sinks and the LSE;
//   - context.wgsl: O = P·V, tiled;
//   - fused.wgsl: flash attention over splits of keys side by side, with
//     an online softmax, the variants (key range, softcap, ALiBi, sinks),
//     packed sequences and paged caches, no visit
//     to keys outside a workgroup's key range, and GQA by head mapping,
//     each invocation owning R query rows in registers, its loops over
//     rows and head dims written out by its template (see
//     Kernel.Template);
//   - fusedloop.wgsl: the same with loops and K, V tiles staged through
//     workgroup memory, for head dims too wide to write out on a CPU-type
//     adapter, and on a hardware one where fusedtile.wgsl's tiles do not
//     fit (or ATTN_GPU_PREFILL=loop) and for value heads too wide for
//     fuseddecode.wgsl;
//   - fusedtile.wgsl: the same for prefill on a hardware adapter, where
//     its tiles fit workgroup memory: a workgroup holds a tile of query
//     rows in workgroup memory and register-tiles both products over
//     tiles of keys, taking the softmax a tile of keys at a time;
//   - fuseddecode.wgsl: the same for decoding steps on a hardware adapter
//     (flash-decoding): a workgroup holds the few query rows of every
//     query head that shares a KV head and reads that head's K and V once
//     for them, its invocations computing the scores of a tile's (row,
//     key) pairs side by side, then each one column of P·V over its share
//     of the keys;
//   - merge.wgsl: folds the normalised (O, LSE) of up to P.parts splits
//     of the keys (one dispatch of a fused kernel, its grid's z) into the
//     running result exactly, or writes the result from them when they
//     are a row's first keys, L invocations a row;
//   - pack.wgsl: rounds a float32 output into a half buffer, one u32
//     word an invocation, to nearest even with saturation (lib/half.wgsl,
//     in integer arithmetic);
//   - copy.wgsl: Backend.Copy between float32 and half buffers, the
//     ranges of a call read from a table (a workgroup a small range),
//     widening a half source exactly and rounding into a half dst as
//     pack.wgsl does, a u32 word an invocation.
//   - quant8.wgsl: quantizes float32 or half elements into a q8, q4 or fp8
//     buffer (Backend.CopyQuant, a KV cache's AppendBuffers), the CPU's
//     bytes by integer arithmetic on float32 bits, counting what it
//     saturates or stores as NaN in atomic counters.
//
// Which kernel runs where, and why, is docs/gpu.md's "Which kernel runs
// where"; the plan (gpu/internal/plan/adapterplan.go) chooses.
//
// go-webgpu v0.17.1 cannot set WGSL override constants, and its naga
// accepts neither expressions in array sizes nor named workgroup sizes, so
// Kernel.Generate writes each kernel's constants (tile sizes, workgroup
// size, head dims), its Params uniform struct and its bindings in front of
// the file's body, from the same Go description (Kernel) and the same Go
// constants that size the dispatch in package gpu. Both inputs of a kernel
// are typed Go values with named fields: its constants are its Spec
// (ScoresConsts{TM: 64, …}, whose type also names the kernel, so no
// constant can be given to the wrong kernel or in the wrong place), and its
// Params uniform is a struct of uint32, int32 and float32 fields
// (ScoresParams, …; float32 fields are WGSL f32, not bits), from which
// Generate writes the WGSL struct Params by reflection and Kernel.Encode
// the bytes the host uploads. TestParamsLayout holds the two layouts to the
// same fields, types and offsets. The gpu backend caches compiled
// pipelines by Kernel.Key. The golden files in testdata pin the generated
// WGSL (go test ./gpu/internal/shaders -update rewrites them).
//
// Storage dtypes: a half operand is an array<u32> of two elements a word
// (array<vec2<u32>> where Vec4 applies, array<vec4<u32>> where a unit of
// eight halves does: LoadUnit), or, in a kernel whose F16 mode is set
// (the device has shader-f16), WGSL f16 arrays. A Spec's bool fields are
// such modes (F16, SG for subgroup operations): Generate gives them to
// the template and writes no constant for them (see modes). A Spec's Elem
// fields (ScoresConsts{…, Q: F16, K: BF16}) say
// how each of its kernel's operands is stored, and Generate writes the
// binding's type and a loader, q_at(i) (or k_at4(i) for four elements),
// that widens exactly: float16 by unpack2x16float, bfloat16 by a 16-bit
// shift. The bodies read Q, K, V and the bias only through the loaders,
// so one body serves every mix of dtypes; element indices stay element
// indices. No kernels but pack.wgsl and copy.wgsl write halves (pack.wgsl
// says why), both through lib/half.wgsl's rounding.
//
// Packed sequences and paged caches (backend.Packed, backend.Paged): the
// four fused kernels and merge.wgsl read each sequence's first query row and
// count (lib/seqs.wgsl: seq_q0, seq_rows), its first key row and a paged
// cache's block table (lib/pages.wgsl: kv_row) from the per-call data,
// under the flags F_PACKQ, F_PACKK and F_PAGED; a packed operand's batch
// stride is 0, a paged one's is the page's. A kernel's split z of the
// keys covers P.sk keys from j0 + z·sk and writes its O and LSE z·o_z and
// z·lse_z elements on.
//
// WGSL shared by several kernels (the −Inf bit pattern, the key range
// and sink logits read from the per-call variant data, softcap and ALiBi,
// the sequences' rows and pages) lives once in lib/ and is written in after the kernels that list it in
// Kernel.Include. The bits of every kernel's flags field are Go constants
// (FlagRange …) that Generate writes into the WGSL as F_RANGE …, so the
// host and the kernels name each bit once.
//
// Every tensor is addressed as b·X_b + h·X_h + r·X_r + c − X_base in
// wrapping u32 arithmetic, X_base being the start of the window of the
// buffer the dispatch binds; see Kernel's documentation.
package shaders
