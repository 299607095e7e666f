package shaders

import (
	"fmt"
	"reflect"
	"slices"
)

// This file holds the typed description of every kernel's inputs: the
// compile-time constants each kernel is specialised by (one struct of int
// fields a kernel, its Spec); uniforms.go the Params uniform each dispatch
// fills (one struct of u32, i32 and f32 fields a kernel). Generate writes the
// WGSL declarations of both from these types, and the host fills them by
// field name, so a misspelt or missing field does not compile and there is
// no position to swap.

// Spec is the compile-time constants of one kernel: a struct of int fields,
// each written into the WGSL as the u32 constant of the field's name, then
// of Elem fields, each the storage of the binding of the field's name in
// lower case (Q is binding q): how Generate declares the binding and the
// loader it writes for it (see Elem). The type says which kernel it
// specialises.
type Spec interface {
	// Kernel is the kernel the constants specialise.
	Kernel() *Kernel
	// derived are the constants computed from the given ones, in the
	// order they are written: this naga accepts no expressions in array
	// sizes or workgroup sizes, so products are precomputed here.
	derived() []Const
	// check refuses constants that are each in range but do not work
	// together (a tile the register block does not divide, say), which
	// would compile into a kernel that silently computes the wrong thing.
	check() error
}

// Derived lists the constants Generate computes from s's given ones, in
// the order it writes them.
func Derived(s Spec) []Const { return s.derived() }

// Const is one named constant of a specialisation.
type Const struct {
	Name  string
	Value int
}

// ScoresConsts specialises scores.wgsl: TM×TN score tiles, TD head-dim
// elements a step through workgroup memory, RM×RN scores an invocation;
// Q, K and Bias are how those operands are stored.
type ScoresConsts struct {
	TM, TN, TD, RM, RN int
	Q, K, Bias         Elem
}

// SoftmaxConsts specialises softmax.wgsl: WG invocations (a power of
// two), PER columns each a chunk.
type SoftmaxConsts struct{ WG, PER int }

// ContextConsts specialises context.wgsl: TM×TN output tiles, TJ keys a
// step through workgroup memory, RM×RN outputs an invocation; V is how V
// is stored (O is float32: a half O is packed afterwards, see PackConsts).
type ContextConsts struct {
	TM, TN, TJ, RM, RN int
	V                  Elem
}

// FusedConsts specialises fused.wgsl: WG invocations of R query rows each,
// head dims D and DV (D4 = ⌈D/4⌉ and DV4 = ⌈DV/4⌉ are derived); Q, K, V
// and Bias are how those operands are stored (O is float32, as in
// ContextConsts). NQ > 0 turns on key lanes, for a decoding step: the
// workgroup's R rows are NQ queries of each of R/NQ query heads sharing a
// KV head, every invocation holds all of them, and the WG invocations
// take turns over the keys, adding their results up in workgroup memory
// (RED = WG·CB vec4s, CB column vec4s at a time) at the end.
type FusedConsts struct {
	WG, R, D, DV int
	NQ           int `shaders:"zero"`
	// VR is what V's rows start on a multiple of, in elements, where V
	// is K's first DV columns (backend.Problem.VFromK: VR is D); 0 where
	// V's rows are its own, on multiples of DV. The loads of V that
	// assume a row's alignment (vec4s, units, a q8 row's scales) take
	// VA, the alignment both ways (derived).
	VR            int `shaders:"input"`
	Q, K, V, Bias Elem
	// F16 and SG are modes (see modes): float16 operands as WGSL f16,
	// and the key lanes' sums at the end by subgroups, each subgroup's
	// in workgroup memory once, not every lane's.
	F16, SG bool
}

// FusedLoopConsts specialises fusedloop.wgsl: WG invocations of one query
// row each, TK keys a tile in workgroup memory, head dims D and DV; the
// operands' storage as in FusedConsts.
type FusedLoopConsts struct {
	WG, TK, D, DV int
	// UN is how many iterations of each loop over the head dims, and of
	// an invocation's share of staging a K or V tile, one trip writes out
	// (the template's unroll; 0 or 1: none): where it is the head dim's
	// D4 or DV4, the query row and the sums index no array in a loop.
	UN            int `shaders:"input"`
	Q, K, V, Bias Elem
}

// FusedTileConsts specialises fusedtile.wgsl: WG invocations a
// workgroup, which holds BR query rows of one head and streams the keys
// in tiles of BC through workgroup memory, each invocation computing RM
// rows × RN keys of a tile's scores and RM rows × CN column vec4s of the
// output (CN is derived: the DV4 column vec4s over the WG·RM/BR
// invocations that share rows); head dims D and DV; the operands'
// storage as in FusedConsts.
type FusedTileConsts struct {
	WG, BR, BC, RM, RN, D, DV int
	VR                        int `shaders:"input"` // as FusedConsts.VR
	// UN is how many iterations of each loop with a constant trip count
	// (over the head dim, a tile's keys, a block of scores, an
	// invocation's share of staging a tile) one trip writes out (the
	// template's unroll; 0 or 1: none).
	UN int `shaders:"input"`
	// AH is 1 where an invocation loads its vec4s of the next tile's K
	// during this tile's scores, and of this tile's V before them, into
	// registers (⌈BC·D4/WG⌉ and ⌈BC·DV4/WG⌉ of them), so that a tile's
	// loads are in flight while the workgroup computes; 0: each tile is
	// loaded after the barrier before its use, and waited for at once.
	AH            int `shaders:"input"`
	Q, K, V, Bias Elem
	// F16 and SG are modes (see modes): float16 operands as WGSL f16,
	// and each tile's row softmax by subgroups (a subgroup a row at a
	// time, its invocations over the keys), not one invocation a row.
	F16, SG bool
}

// FusedDecodeConsts specialises fuseddecode.wgsl: WG invocations a
// workgroup, which holds NQ query rows of each of HG query heads that
// share one KV head (R = HG·NQ rows), streams the keys in tiles of TK
// through workgroup memory, for head dims D and DV; the operands' storage
// as in FusedConsts.
type FusedDecodeConsts struct {
	WG, HG, NQ, TK, D, DV int
	VR                    int `shaders:"input"` // as FusedConsts.VR
	// UN is how many iterations of a score's loop over the head dim one
	// trip writes out (the template's unroll; 0 or 1: none).
	UN int `shaders:"input"`
	// PV is how many of an invocation's keys of a tile in the P·V phase
	// one trip writes out, their V loads issued together (0 or 1: none).
	PV int `shaders:"input"`
	// KW caps the vec4s of a half K or V one invocation reads a load: 2
	// (8 halves, 16 bytes) or 4 (16 halves, 32 bytes), within LoadUnit's
	// unit for the dtype and head dim (the derived KU and VU); an 8-bit
	// or 4-bit K or V is read a whole unit a load where KW is 2 or more;
	// 0 or 1: a vec4 (four values) a load, as a float32 one.
	KW int `shaders:"input"`
	// VW is KW for V, the P·V phase's loads: each invocation's sums are
	// its rows × VU vec4s, so a wider unit holds more of them in
	// registers.
	VW int `shaders:"input"`
	// KN is 1 where each invocation loads its share of the next tile's K
	// (KSTEPS units of KU vec4s) into registers right after this tile's
	// staging barrier, so that it is in flight through the scores, the
	// softmax and the P·V phase, and stores it at the next tile's start;
	// 0: each tile's K is loaded at its start and stored at once, and the
	// workgroup waits for it.
	KN int `shaders:"input"`
	// AH is 1 where each invocation loads its V of a tile for the P·V
	// phase at the tile's start, beside the K tile's loads, into
	// registers (VAhead vec4s), so that the V loads are in flight
	// through the scores and the softmax; 0: the P·V phase issues them.
	// Only where the P·V loop is written out whole (PV).
	AH            int `shaders:"input"`
	Q, K, V, Bias Elem
	// F16 and SG are modes (see modes): float16 operands as WGSL f16,
	// and each tile's row maxima by subgroups (a subgroup a row at a
	// time), not a tree in workgroup memory.
	F16, SG bool
}

// MergeConsts specialises merge.wgsl: WG invocations a workgroup, L of
// them to a query row (L divides WG), each loop over the parts written
// out UN a trip (0 or 1: none). Under PG > 1 a workgroup holds one row,
// its WG = PG·L invocations PG groups of L lanes, each group folding
// every PG-th part (merge.wgsl says why).
type MergeConsts struct {
	WG, L int
	UN    int `shaders:"input"`
	PG    int `shaders:"input"`
}

// PackConsts specialises pack.wgsl: WG invocations a workgroup, each
// writing one u32 word of an output O stored as F16 or BF16 from elements
// of src stored as Src (F32 for an op's output scratch).
type PackConsts struct {
	WG     int
	O, Src Elem
}

// CopyConsts specialises copy.wgsl: WG invocations a workgroup, each
// writing a unit of o stored as O (F32: an element; F16 or BF16: a u32
// word of two, OW is derived) from elements of src stored as Src.
type CopyConsts struct {
	WG     int
	O, Src Elem
}

// Copy8Consts specialises copy8.wgsl: WG invocations a workgroup, each
// taking one u32 word of o a step; Q8 is 1 for q8 buffers, Q4 for q4
// ones, neither for fp8 ones.
type Copy8Consts struct {
	WG int
	Q8 int `shaders:"zero"`
	Q4 int `shaders:"zero"`
}

// PatchConsts specialises patch.wgsl: WG invocations a workgroup, each
// storing one table entry's bytes of a u32 word of o.
type PatchConsts struct {
	WG int
}

// PatchParams is patch.wgsl's Params: the dispatch's n entries, entries
// first … first+n−1 of its table (the vars binding, three u32 words an
// entry: a word of o's window, the mask of its bytes to store, their
// value).
type PatchParams struct {
	N     uint32 `wgsl:"n"`
	First uint32 `wgsl:"first"`
}

func (PatchConsts) Kernel() *Kernel  { return &Patch }
func (PatchConsts) derived() []Const { return nil }
func (PatchConsts) check() error     { return nil }

func (Copy8Consts) Kernel() *Kernel  { return &Copy8 }
func (Copy8Consts) derived() []Const { return nil }
func (c Copy8Consts) check() error {
	if c.Q8+c.Q4 > 1 {
		return fmt.Errorf("Q8 = %d, Q4 = %d: want one of them 1 (q8, q4) or neither (fp8)", c.Q8, c.Q4)
	}
	return nil
}

func (ScoresConsts) Kernel() *Kernel      { return &Scores }
func (SoftmaxConsts) Kernel() *Kernel     { return &Softmax }
func (ContextConsts) Kernel() *Kernel     { return &Context }
func (FusedConsts) Kernel() *Kernel       { return &Fused }
func (FusedLoopConsts) Kernel() *Kernel   { return &FusedLoop }
func (FusedTileConsts) Kernel() *Kernel   { return &FusedTile }
func (FusedDecodeConsts) Kernel() *Kernel { return &FusedDecode }
func (MergeConsts) Kernel() *Kernel       { return &Merge }
func (PackConsts) Kernel() *Kernel        { return &Pack }
func (CopyConsts) Kernel() *Kernel        { return &Copy }

func (c ScoresConsts) derived() []Const {
	return []Const{{"QS", c.TM * c.TD}, {"KS", c.TN * c.TD}, {"WX", c.TN / c.RN}, {"WY", c.TM / c.RM},
		{"NT", c.TN / c.RN * (c.TM / c.RM)}, {"RR", c.RM * c.RN}}
}
func (c ContextConsts) derived() []Const {
	return []Const{{"PS", c.TM * c.TJ}, {"VS", c.TJ * c.TN}, {"WX", c.TN / c.RN}, {"WY", c.TM / c.RM},
		{"NT", c.TN / c.RN * (c.TM / c.RM)}, {"RR", c.RM * c.RN}}
}
func (c SoftmaxConsts) derived() []Const { return []Const{{"CW", c.WG * c.PER}} }
func (c FusedConsts) derived() []Const {
	dv4, cb, va := ceil4(c.DV), fusedCB(c.DV), VAlign(c.DV, c.VR)
	return []Const{{"D4", ceil4(c.D)}, {"DV4", dv4}, {"VA", va}, {"CB", cb}, {"NCB", (dv4 + cb - 1) / cb}, {"RED", c.WG * cb},
		{"KU", LoadUnit(c.K, c.D)}, {"VU", LoadUnit(c.V, va)}, {"KSB", q8Shared(c.D, c.D)}, {"VSB", q8Shared(c.DV, max(c.VR, c.DV))}}
}

// VAlign is the alignment of V's rows, in elements, for a head dim dv
// and FusedConsts.VR vr: both their start and their length are
// multiples of it, dv where V's rows are its own (vr 0), else the
// greatest common divisor of vr and dv.
func VAlign(dv, vr int) int {
	if vr <= 0 {
		return dv
	}
	for vr != 0 {
		dv, vr = vr, dv%vr
	}
	return dv
}

// q8Shared is the q8 (or q4) blocks of a row of d values (d a multiple of 32,
// every row starting on a multiple of start, itself a multiple of d)
// whose scales one load of a superblock's scales (x_sc) gives: the whole
// row where start divides 256, a superblock's 8 where 256 divides start
// and d, else 1 (a row may straddle superblocks anywhere).
func q8Shared(d, start int) int {
	switch {
	case d > 0 && d%32 == 0 && start%32 == 0 && 256%start == 0:
		return d / 32
	case d > 0 && d%256 == 0 && start%256 == 0:
		return 8
	}
	return 1
}

// LoadUnit is the vec4s of a head dim d stored as e that fused.wgsl
// loads at a time through the unit loader (x_u): a q8 block's 8 (two
// 16-byte loads of codes; a q4 block's 8 are one), 16 fp8 values' 4 where d is whole units of 16
// (16 bytes), 16 halves' 4 where d is whole units of 16 (32 bytes), 8
// halves' 2 where it is of 8 (16 bytes); 1 (a vec4 at a time, x_at4 or
// x_at) otherwise. lavapipe pays for each load an invocation makes, not
// for its bytes: over 32768 keys of an f16 cache, each doubling of the
// halves a load, from four to sixteen, cut the step's time (git's history
// has the measurements; docs/gpu.md, "Optional features", sixteen's). A
// half operand read a unit a load has its window start and end on a
// multiple of 4·unit elements (the host binds it so: gpu's operand.wide),
// and its rows, each starting on a multiple of d, on whole units.
func LoadUnit(e Elem, d int) int {
	switch {
	case e.Blocked() && d%32 == 0:
		return 8
	case e == FP8 && d%16 == 0:
		return 4
	case e.Half() && d%16 == 0:
		return 4
	case e.Half() && d%8 == 0:
		return 2
	}
	return 1
}

// fusedCB is the column vec4s fused.wgsl's key lanes add up at a time:
// all of a row's, up to 16 (a workgroup of 16 lanes then keeps its sums
// in 4 KiB).
func fusedCB(dv int) int { return max(1, min(ceil4(dv), 16)) }

func (c FusedLoopConsts) derived() []Const {
	return []Const{{"D4", ceil4(c.D)}, {"DV4", ceil4(c.DV)}, {"KS", c.TK * ceil4(c.D)}, {"VS", c.TK * ceil4(c.DV)}}
}

// derived of fusedtile.wgsl: the tiles' sizes (query rows padded to QP
// and K rows to KP vec4s, odd, so that invocations reading different
// rows hit different banks; the K tile's memory holds the V tile after
// the scores, so KVS is the larger; the weights a key at a time, its
// rows' in SR vec4s, four rows a vec4, SR odd) and how the invocations
// share out rows, keys and columns: BR/RM row groups of RM adjacent
// rows, NKG key groups of RN keys, each key group also CN of the DV4
// column vec4s; RQ is the vec4s of weights an invocation reads a key.
func (c FusedTileConsts) derived() []Const {
	d4, dv4 := ceil4(c.D), ceil4(c.DV)
	nrg := max(1, c.BR/max(c.RM, 1))
	nkg := max(1, c.WG/nrg)
	sr := ceil4(c.BR) | 1
	return []Const{{"D4", d4}, {"DV4", dv4}, {"VA", VAlign(c.DV, c.VR)}, {"QP", d4 | 1}, {"KP", d4 | 1}, {"SR", sr},
		{"QS", c.BR * (d4 | 1)}, {"KVS", c.BC * max(d4|1, dv4)}, {"SS", c.BC * sr},
		{"NKG", nkg}, {"CN", (dv4 + nkg - 1) / nkg}, {"RQ", ceil4(c.RM)}}
}

// Iterations is about the loop iterations one fusedtile.wgsl invocation
// runs over a split of keys keys, every loop counted, nested ones for
// each of their iterations:
//
//	⌈BR·D4/WG⌉ + tiles·(⌈BC·D4/WG⌉ + D4 + NKG + ⌈BC·DV4/WG⌉ + BC) + 2·NKG
//
// (the queries' staging; per tile of BC keys the K tile's staging, the
// scores' dot products, the row maxima's meeting, the V tile's staging
// and the P·V sums; the rows' sums' meeting, and the shuffles under SG);
// under AH the staging of a tile is written out, its K in a loop of at
// most two iterations.
func (c FusedTileConsts) Iterations(keys int) int {
	d4, dv4 := ceil4(c.D), ceil4(c.DV)
	tiles := (keys + c.BC - 1) / c.BC
	staging := (c.BC*d4+c.WG-1)/c.WG + (c.BC*dv4+c.WG-1)/c.WG
	if c.AH != 0 {
		staging = 2
	}
	nkg := derivedValues(c)["NKG"]
	perTile := staging + d4 + nkg + c.BC
	return (c.BR*d4+c.WG-1)/c.WG + tiles*perTile + 2*nkg
}

// Ahead is the most vec4s of a K or V tile one fusedtile.wgsl invocation
// stages, ⌈BC·D4/WG⌉ or ⌈BC·DV4/WG⌉: the registers each of them holds
// under AH.
func (c FusedTileConsts) Ahead() int {
	return (c.BC*max(ceil4(c.D), ceil4(c.DV)) + c.WG - 1) / c.WG
}

// WorkgroupBytes is the workgroup memory fusedtile.wgsl declares for
// these constants, each variable rounded up to 16 bytes as WebGPU counts
// it: the block mask's skip flag (a u32: 16), the queries and the K or
// V tile (vec4s), the weights (f32), the rows' key spans (vec2<u32>)
// and, without SG, the key groups' partial maxima and sums (f32,
// BR·NKG). Left out, the flag took a plan sized to the byte past an
// H200's 49 152 bytes (ACO's LDS at ATTN_GPU_TARGET=h200).
func (c FusedTileConsts) WorkgroupBytes() int {
	v := derivedValues(c)
	n := 16 + 16*(v["QS"]+v["KVS"]+v["SS"]) + 16*ceilDiv(8*c.BR, 16)
	if !c.SG {
		n += 16 * ceilDiv(4*c.BR*v["NKG"], 16)
	}
	return n
}

// derived of fuseddecode.wgsl: the tiles' sizes (K rows padded to KP, an
// odd number of vec4s, and score rows to TKP, odd too, so that
// invocations reading adjacent keys' rows hit distinct banks), and how
// the P·V phase shares out the R·DV4 output vec4s (Groups): KG key groups
// of RG row groups of RPI rows; KU is the vec4s of K an invocation
// stages a load (KUnit); KSTEPS and SSTEPS are the loads of a K tile
// and the (row, key) pairs of a tile an invocation takes. After the last tile the K tile's memory
// holds the key groups' sums (their sums of p in LRED f32s), so KS is the
// larger of the two.
func (c FusedDecodeConsts) derived() []Const {
	d4, dv4 := ceil4(c.D), ceil4(c.DV)
	r := c.HG * c.NQ
	rg, kg, rpi := c.Groups()
	ks, lred, kgp := c.TK*(d4|1), 1, 1
	if kg > 1 {
		// The key groups' sums go through the K tile's memory KGP groups
		// a pass: as many as the tile's memory holds, and never fewer than
		// 4·WG vec4s' worth, so that wide units (VU), which make more key
		// groups, do not grow the workgroup's memory.
		per := rg * rpi * dv4
		kgp = min(kg-1, max(1, max(ks, 4*c.WG)/per))
		ks, lred = max(ks, kgp*per), kgp*rg*rpi
	}
	return []Const{{"D4", d4}, {"DV4", dv4}, {"VA", VAlign(c.DV, c.VR)}, {"R", r}, {"KP", d4 | 1}, {"TKP", c.TK | 1},
		{"KS", ks}, {"QS", r * d4}, {"SS", r * (c.TK | 1)},
		{"KU", c.KUnit()}, {"KSTEPS", c.kSteps()}, {"SSTEPS", (r*c.TK + c.WG - 1) / c.WG},
		{"VU", c.VUnit()}, {"DVU", dv4 / c.VUnit()},
		{"RG", rg}, {"KG", kg}, {"KGP", kgp}, {"RPI", rpi}, {"LRED", lred}, {"LPR", c.maxLanes()}, {"MRED", r * c.maxLanes()}}
}

// KUnit is the vec4s of K one fuseddecode.wgsl invocation stages a
// load (decodeUnit of K). VUnit is the vec4s of V one invocation's P·V
// phase reads a load and owns the sums of (decodeUnit of V, at V's
// alignment VA).
func (c FusedDecodeConsts) KUnit() int { return decodeUnit(c.K, c.D, c.KW) }

// VUnit: see KUnit, with VW for KW.
func (c FusedDecodeConsts) VUnit() int { return decodeUnit(c.V, VAlign(c.DV, c.VR), c.VW) }

// decodeUnit is the vec4s of a K or V of head dim d stored as e that
// fuseddecode.wgsl reads a load where kw (FusedDecodeConsts.KW) is 2 or
// more: LoadUnit's whole unit for an 8-bit or 4-bit one (a q8 or q4
// block of 32 values, 16 fp8 values: their codes' bytes a vec4<u32> at a
// time, a block's scale beside them), for a half one LoadUnit's unit
// capped by kw (2 or 4: 8 or 16 halves, a 16- or 32-byte load); else 1,
// a vec4 of four values a load. Read so, a half or 8-bit cache takes as
// many loads as a float32 one for a half or a quarter of its bytes, and
// a GPU's memory system, which keeps a number of loads in flight rather
// than of bytes, reads it no faster.
func decodeUnit(e Elem, d, kw int) int {
	u := LoadUnit(e, d)
	switch {
	case kw < 2 || u < 2:
		return 1
	case e.Quant():
		return u
	case e.Half():
		return min(u, kw)
	}
	return 1
}

// maxLanes is fuseddecode.wgsl's invocations to a row when it takes a
// tile's maxima (LPR): the largest power of two within both the
// invocations a row has (WG/R) and the tile's keys, so that each takes
// at least one score and the tree halves them evenly.
func (c FusedDecodeConsts) maxLanes() int {
	most := min(c.WG/max(c.HG*c.NQ, 1), c.TK)
	l := 1
	for 2*l <= most {
		l *= 2
	}
	return l
}

// KNext is the vec4s of K one invocation holds to load its share of
// the next tile during a tile (KN): KSTEPS units of KU vec4s.
func (c FusedDecodeConsts) KNext() int { return c.kSteps() * c.KUnit() }

// kSteps is KSTEPS, the loads (units of KU vec4s) of a K tile one
// invocation stages.
func (c FusedDecodeConsts) kSteps() int { return (c.TK*(ceil4(c.D)/c.KUnit()) + c.WG - 1) / c.WG }

// VAhead is the vec4s of V one invocation holds to load its keys of a
// tile ahead (AH): ⌈TK/KG⌉ units of VU vec4s; 0 where the P·V loop over
// them is not written out whole (PV), which loading ahead needs.
func (c FusedDecodeConsts) VAhead() int {
	_, kg, _ := c.Groups()
	np := (c.TK + kg - 1) / kg
	if unrollBy(np, c.PV) != np {
		return 0
	}
	return np * c.VUnit()
}

// Groups is how fuseddecode.wgsl's P·V phase shares the R rows and DVU
// column units (VU vec4s each) out among its WG invocations: U = WG/DVU
// invocations to a unit, kg key groups (keys kg apart in a tile, at most
// TK of them) times rg row groups (rows rg apart, rpi of them each), each
// invocation summing one unit of its rows over its keys. Key groups come
// first — each V element is then loaded by one invocation, and the
// groups' sums are added once, at the end (KGP groups a pass) — but no
// more of them than leave an invocation 4 rows, where the unit's
// invocations are enough for that: so an invocation's registers hold at
// most 4 rows' sums of a unit whenever there are key groups to add.
func (c FusedDecodeConsts) Groups() (rg, kg, rpi int) {
	r := c.HG * c.NQ
	u := max(1, c.WG/(ceil4(c.DV)/c.VUnit()))
	rg = max(1, min(r, u, max((r+3)/4, (u+c.TK-1)/c.TK)))
	kg = max(1, min(u/rg, c.TK))
	return rg, kg, (r + rg - 1) / rg
}

// derivedValues is s's derived constants by name.
func derivedValues(s Spec) map[string]int {
	v := map[string]int{}
	for _, d := range s.derived() {
		v[d.Name] = d.Value
	}
	return v
}

// Iterations is about the loop iterations one fuseddecode.wgsl invocation
// runs over tiles tiles of keys, every loop counted, nested ones for each
// of their iterations:
//
//	⌈QS/WG⌉ + tiles·(1 + SSTEPS·(D4 + 2) + ⌈TK/LPR⌉ + log2 LPR + ⌈TK/KG⌉) + KG
//
// (the queries' staging; per tile the scores with their dot products,
// the weights, the maxima and their tree, and the P·V sums; the key
// groups' final sums).
// A plan with a loop cap bounds the tiles of a split by it.
func (c FusedDecodeConsts) Iterations(tiles int) int {
	v := derivedValues(c)
	lpr, steps := v["LPR"], 0
	for w := lpr / 2; w > 0; w /= 2 {
		steps++
	}
	perTile := 1 + v["SSTEPS"]*(v["D4"]+2) + (c.TK+lpr-1)/lpr + steps + (c.TK+v["KG"]-1)/v["KG"]
	return (v["QS"]+c.WG-1)/c.WG + tiles*perTile + v["KG"]
}

// WorkgroupBytes is the workgroup memory fuseddecode.wgsl declares for
// these constants: the K tile and the queries (vec4s), the scores, the
// running maxima and rescale factors, the key groups' sums of p and the
// maxima's tree (f32)
// and the rows' key spans (vec2<u32>).
func (c FusedDecodeConsts) WorkgroupBytes() int {
	v := derivedValues(c)
	return 16*(v["KS"]+v["QS"]) + 4*(v["SS"]+2*v["R"]+v["LRED"]+v["MRED"]) + 8*v["R"]
}

func (MergeConsts) derived() []Const { return nil }
func (PackConsts) derived() []Const  { return nil }

// derived of copy.wgsl: OW, the elements a unit of o holds (1 for F32,
// 2 for a half O), which picks the body's store.
func (c CopyConsts) derived() []Const {
	if c.O.Half() {
		return []Const{{"OW", 2}}
	}
	return []Const{{"OW", 1}}
}

func (c ScoresConsts) check() error  { return tileCheck(c.TM, c.TN, c.RM, c.RN, "TD", c.TD) }
func (c ContextConsts) check() error { return tileCheck(c.TM, c.TN, c.RM, c.RN, "TJ", c.TJ) }
func (c SoftmaxConsts) check() error {
	if c.WG&(c.WG-1) != 0 {
		return fmt.Errorf("WG = %d is not a power of two (the tree reduction halves it)", c.WG)
	}
	return nil
}
func (c FusedConsts) check() error {
	if c.NQ > 0 && c.R%c.NQ != 0 {
		return fmt.Errorf("R = %d rows are not whole heads of NQ = %d queries", c.R, c.NQ)
	}
	return nil
}

// Iterations is about the loop iterations one fused.wgsl invocation in
// key-lane mode (NQ > 0) runs over a split of keys keys: its share of the
// keys, then for each row the lanes' maxima and sums and its columns'.
func (c FusedConsts) Iterations(keys int) int {
	cb := fusedCB(c.DV)
	blocks := (ceil4(c.DV) + cb - 1) / cb
	return (keys+c.WG-1)/c.WG + c.R*(2*c.WG+blocks*((cb+c.WG-1)/c.WG)*(c.WG+1))
}

// WorkgroupBytes is the workgroup memory fused.wgsl declares: none in
// row mode, the lanes' maxima, sums and a block of their column sums
// (RED vec4s) with key lanes.
func (c FusedConsts) WorkgroupBytes() int {
	if c.NQ == 0 {
		return 0
	}
	return 8*c.WG + 16*c.WG*fusedCB(c.DV)
}
func (FusedLoopConsts) check() error { return nil }
func (c FusedTileConsts) check() error {
	if c.BR > c.WG {
		return fmt.Errorf("BR = %d rows exceed WG = %d (one invocation a row sets its key span)", c.BR, c.WG)
	}
	if c.BR%c.RM != 0 || c.WG%(c.BR/c.RM) != 0 {
		return fmt.Errorf("BR = %d rows in blocks of RM = %d do not share out WG = %d invocations", c.BR, c.RM, c.WG)
	}
	nkg := c.WG / (c.BR / c.RM)
	if nkg*c.RN != c.BC {
		return fmt.Errorf("%d key groups of RN = %d keys do not make a tile of BC = %d", nkg, c.RN, c.BC)
	}
	if c.SG && nkg&(nkg-1) != 0 {
		return fmt.Errorf("SG: NKG = %d key groups, not a power of two, cannot meet by shuffles", nkg)
	}
	return nil
}
func (c FusedDecodeConsts) check() error {
	if r := c.HG * c.NQ; r > c.WG {
		return fmt.Errorf("R = HG·NQ = %d rows exceed WG = %d (one invocation a row keeps its maximum)", r, c.WG)
	}
	if dv4 := ceil4(c.DV); dv4 > c.WG {
		return fmt.Errorf("DV = %d needs %d column vec4s, more than WG = %d invocations", c.DV, dv4, c.WG)
	}
	if c.AH != 0 && c.VAhead() == 0 {
		return fmt.Errorf("AH = %d loads V ahead, which needs the P·V loop written out whole (PV = %d)", c.AH, c.PV)
	}
	return nil
}
func (c MergeConsts) check() error {
	if c.WG%c.L != 0 {
		return fmt.Errorf("L = %d lanes a row do not divide WG = %d", c.L, c.WG)
	}
	if c.PG > 1 && (c.PG*c.L != c.WG || c.WG&(c.WG-1) != 0 || c.UN < 1) {
		return fmt.Errorf("PG = %d groups of L = %d lanes, UN = %d: want WG = %d, a power of two, and UN ≥ 1", c.PG, c.L, c.UN, c.WG)
	}
	return nil
}
func (c PackConsts) check() error {
	if !c.O.Half() {
		return fmt.Errorf("O is %v: pack writes halves only", c.O)
	}
	return nil
}
func (CopyConsts) check() error { return nil }

func ceil4(n int) int { return (n + 3) / 4 }

// tileCheck checks a register-tiled kernel: each register block must
// divide its tile, or the tile's last rows or columns are never written.
func tileCheck(tm, tn, rm, rn int, inner string, in int) error {
	if tm%rm != 0 || tn%rn != 0 {
		return fmt.Errorf("register block %d×%d does not divide tile %d×%d", rm, rn, tm, tn)
	}
	if in > tm*tn {
		return fmt.Errorf("%s = %d is larger than the tile", inner, in)
	}
	return nil
}

// leastConst is the least value s's constant name may take: 0 when its
// field is tagged `shaders:"zero"` (a mode, off at 0), else 1 (a size: a
// field left unset is a mistake).
func leastConst(s Spec, name string) int {
	if f, ok := reflect.TypeOf(s).FieldByName(name); ok && (f.Tag.Get("shaders") == "zero" || f.Tag.Get("shaders") == "input") {
		return 0
	}
	return 1
}

// inputOnly says whether s's constant name is tagged `shaders:"input"`:
// it may be 0, the Key names it, and only derived constants use it, so
// Generate writes no WGSL constant for it.
func inputOnly(s Spec, name string) bool {
	f, ok := reflect.TypeOf(s).FieldByName(name)
	return ok && f.Tag.Get("shaders") == "input"
}

// The modes of a Spec are its bool fields, each a choice of code that
// needs a device feature: Generate gives them to a Template body as 1 or
// 0 (set or not) and writes no WGSL constant for them, and a Key names
// the set ones. Two have a meaning of their own:
//
//   - F16: the kernel enables WGSL's f16 type (shader-f16), which
//     Generate writes as the directive "enable f16;", and binds float16
//     operands as f16 arrays (f16, vec4<f16>, mat2x4<f16>: see Elem),
//     widened by conversions, exact as unpack2x16float is;
//   - SG: the kernel's reductions across invocations use subgroup
//     operations (subgroupMax, subgroupAdd) and the subgroup builtins,
//     not workgroup memory alone.
//
// Only a device with the feature compiles a kernel with its mode set.
func modes(s Spec) []Const { return specFields(s, reflect.Bool) }

// EnablesF16 says whether s enables WGSL's f16 type: its mode F16 is
// set (see modes).
func EnablesF16(s Spec) bool { return slices.Contains(modes(s), Const{"F16", 1}) }

// UsesSubgroups says whether s uses subgroup operations: its mode SG is
// set (see modes).
func UsesSubgroups(s Spec) bool { return slices.Contains(modes(s), Const{"SG", 1}) }

// consts lists the given int constants of s, in field order (they come
// before its Elem fields).
func consts(s Spec) []Const { return specFields(s, reflect.Int) }

// specFields lists the fields of s of kind k (Int or Bool), in field
// order, each as a Const of its name: an int's value, a bool's 1 or 0.
func specFields(s Spec, k reflect.Kind) []Const {
	v := reflect.ValueOf(s)
	var out []Const
	for i := range v.NumField() {
		f := v.Field(i)
		switch {
		case f.Kind() != k:
		case k == reflect.Bool && f.Bool():
			out = append(out, Const{v.Type().Field(i).Name, 1})
		case k == reflect.Bool:
			out = append(out, Const{v.Type().Field(i).Name, 0})
		default:
			out = append(out, Const{v.Type().Field(i).Name, int(f.Int())})
		}
	}
	return out
}

// SubgroupsConsts specialises subgroups.wgsl: one workgroup of WG
// invocations.
type SubgroupsConsts struct{ WG int }

// SubgroupsParams is subgroups.wgsl's Params: the invocations that write
// their subgroup's size.
type SubgroupsParams struct {
	N uint32 `wgsl:"n"`
}

func (SubgroupsConsts) Kernel() *Kernel  { return &Subgroups }
func (SubgroupsConsts) derived() []Const { return nil }
func (SubgroupsConsts) check() error     { return nil }

// Quant8Consts specialises quant8.wgsl: WG invocations a workgroup; Q8
// is 1 into a q8 buffer and Q4 into a q4 one (an invocation a pair of
// blocks: their codes and the scale word they share), neither into an
// fp8 one (an invocation a word of four bytes); Src is how src is
// stored, an Elem's value (F32, F16 or BF16): the kernel reads src as
// raw words and widens the bits itself, never through a float, so src
// is no typed binding.
type Quant8Consts struct {
	WG  int
	Q8  int `shaders:"zero"`
	Q4  int `shaders:"zero"`
	Src int `shaders:"zero"`
}

// Quant8Params is quant8.wgsl's Params: the dispatch's nw units (pairs
// of q8 or q4 blocks, or words of fp8 bytes) from unit u0 of o's window, and
// the n elements from element d0 of o's window that take src's from
// element s0 of its window; scaled says the vars hold one scale a head
// (float32 bits) that src element s0 + i of head ((s0 + i + hbase)/dim)
// mod heads is divided by.
type Quant8Params struct {
	NW     uint32 `wgsl:"nw"`
	U0     uint32 `wgsl:"u0"`
	D0     uint32 `wgsl:"d0"`
	S0     uint32 `wgsl:"s0"`
	N      uint32 `wgsl:"n"`
	Scaled uint32 `wgsl:"scaled"`
	Dim    uint32 `wgsl:"dim"`
	Heads  uint32 `wgsl:"heads"`
	HBase  uint32 `wgsl:"hbase"`
}

func (Quant8Consts) Kernel() *Kernel  { return &Quant8 }
func (Quant8Consts) derived() []Const { return nil }
func (c Quant8Consts) check() error {
	if c.Q8+c.Q4 > 1 || Elem(c.Src) != F32 && !Elem(c.Src).Half() {
		return fmt.Errorf("Q8 = %d, Q4 = %d, Src = %d: want one of Q8 and Q4 1 (q8, q4) or neither (fp8), and Src F32, F16 or BF16", c.Q8, c.Q4, c.Src)
	}
	return nil
}

// WithVRow is s, a fused kernel's Spec, with V's rows starting on
// multiples of vr elements (FusedConsts.VR: V is K's first DV columns);
// fusedloop.wgsl reads V an element at a time and takes any rows, so its
// Spec is s.
func WithVRow(s Spec, vr int) Spec {
	switch c := s.(type) {
	case FusedConsts:
		c.VR = vr
		return c
	case FusedTileConsts:
		c.VR = vr
		return c
	case FusedDecodeConsts:
		c.VR = vr
		return c
	}
	return s
}

// ceilDiv is ⌈a/b⌉ for a ≥ 0, b > 0.
func ceilDiv(a, b int) int { return (a + b - 1) / b }
