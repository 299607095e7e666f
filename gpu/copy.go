//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"cmp"
	"context"
	"slices"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
	"github.com/attn-go/attn/gpu/internal/shaders"
)

// This file runs Backend.Copy: copy.wgsl, for every pair of float32 and
// half buffers, in dispatches of a pass that WebGPU orders. No copy
// command is used: a half range rarely starts and ends on whole words,
// and one path for every dtype pair keeps the rounding in one place
// (lib/half.wgsl).
//
// Callers pass hundreds to thousands of small ranges at once (the rows a
// padded Fused gathers and scatters, a cascade's rows on the device), and
// a dispatch a range would cost each several µs of host and device time.
// So copy.wgsl reads its ranges from a table (the dispatch's vars, placed
// beside its Params in the submission's arena, up to inlineVars bytes a
// table), and the small ranges of a call share dispatches, a workgroup a
// range (copyRanges says when). A large range, or every range of a call
// whose destinations overlap (the later must win, which only dispatches
// in order give), runs in dispatches of its own, each reading one entry.

// copyWG is copy.wgsl's and copy8.wgsl's workgroup size. The rows
// callers copy, 64 to 128 elements, take its invocations one or two
// loops (a half dst's 32 to 64 words, one; a q8 row's span of up to 68
// words, two); lavapipe runs a workgroup's invocations as loops over
// SIMD lanes, so a larger workgroup would spend most of them on nothing.
// copyLoop is the most times an invocation loops: a range of up to
// copyLoop·copyWG units (elements of a float32 dst, words of a half one)
// may share a dispatch, one workgroup taking all of it; a larger one
// gets a workgroup a copyWG units, in dispatches of its own, whose
// overhead its size pays for. (A workgroup looping over its range was
// chosen over an invocation an element finding its range by a binary
// search of prefix sums: it reads its entry once, where the search
// costs lavapipe, which pays for every load an invocation makes, a load
// a step, and a real GPU a chain of dependent loads before it copies.)
const (
	copyWG    = 64
	copyLoop  = 16
	copyEntry = 4 // u32 words a table entry: o_off, src_off, lo, hi
)

// copyTable is the most entries a table holds: inlineVars bytes.
const copyTable = inlineVars / (4 * copyEntry)

// Copy copies ranges of src into dst on the device (backend.Copier):
// each rounded to dst's dtype as the ops store an output, exact between
// buffers of one dtype (a GPU may flush a float32 subnormal:
// Caps.FlushesSubnormals); between two buffers of one quantized dtype the
// bytes as they are (q8, q4: whole blocks, codes and scales), while a copy
// between a quantized buffer and one of another dtype is ErrUnsupported
// (CopyQuant quantizes into one: quantcopy.go). Step.Copy records it with the step's other
// work, so that a decoding step's cache appends from the caller's
// buffers wait for nothing. dst and src must lie in different wgpu
// buffers (ErrShape), as WebGPU requires of a written binding.
func (b *Backend) Copy(ctx context.Context, dst, src backend.Buffer, ranges ...backend.CopyRange) error {
	return b.copy(ctx, nil, dst, src, ranges...)
}

// copy is Copy, recorded into st when st is not nil.
func (b *Backend) copy(ctx context.Context, st *Step, dst, src backend.Buffer, ranges ...backend.CopyRange) (err error) {
	if ctx == nil {
		ctx = context.Background()
	}
	defer func() { st.note("copy", err) }()
	if dst == nil || src == nil {
		return backend.Errorf(backend.ErrShape, "gpu: copy: a nil buffer")
	}
	bufs, err := b.begin(ctx, "copy", arg{"dst", dst, true}, arg{"src", src, false})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	d, s := bufs[0], bufs[1]
	if err := backend.CheckCopy(d.n, s.n, ranges); err != nil {
		return backend.Wrapf(err, "gpu")
	}
	if d.dtype.Quantized() || s.dtype.Quantized() {
		ds, err := b.copyQuant(d, s, ranges)
		if err != nil {
			return err
		}
		return b.run(ctx, st, "copy", ds)
	}
	ds, err := b.copyRanges(d, s, ranges)
	if err != nil {
		return backend.Wrapf(err, "gpu: copy")
	}
	return b.run(ctx, st, "copy", ds)
}

var _ backend.Copier = (*Backend)(nil)

// copyQuant is the dispatches of a copy into or out of a quantized
// buffer: copy8.wgsl between two buffers of one quantized dtype, bits as
// they are (q8 and q4 ranges whole blocks, else ErrShape), the small
// ranges of a call in shared dispatches as copyRanges runs copy.wgsl's
// (a speculative step's Keep moves a row a KV head: under BHND 8 rows
// of 8 heads of K and V took 256 dispatches, a range each), two that
// share a word of dst (a scale word's blocks, an fp8 word) in different
// layers, every range in order where destinations overlap; a copy
// between a quantized buffer and one of another dtype is
// ErrUnsupported: CopyQuant quantizes into a quantized buffer, and
// nothing widens one on the device. The caller holds b.mu.
func (b *Backend) copyQuant(d, s *buffer, ranges []backend.CopyRange) ([]*dispatch, error) {
	if d.dtype != s.dtype {
		return nil, backend.Errorf(backend.ErrUnsupported, "gpu: copy from a %v buffer into a %v one: the GPU backend copies quantized values only between buffers of one quantized dtype (CopyQuant quantizes into one)", s.dtype, d.dtype)
	}
	blk := d.dtype.Block()
	for _, r := range ranges {
		if r.Dst%blk != 0 || r.Src%blk != 0 || r.N%blk != 0 {
			return nil, backend.Errorf(backend.ErrShape, "gpu: copy of %d elements from %d to %d of %v buffers: want whole blocks of %d", r.N, r.Src, r.Dst, d.dtype, blk)
		}
	}
	q8, q4 := quantFlags(d.dtype)
	pipe, err := b.pipeline(shaders.Copy8Consts{WG: copyWG, Q8: q8, Q4: q4}, "main")
	if err != nil {
		return nil, backend.Wrapf(err, "gpu: copy")
	}
	t := d.dtype
	layers := quantLayers(t, ranges)
	var jobs []copyJob
	if layers != nil {
		for l := range copyLayersMax {
			jobs = b.quantTableJobs(jobs, d, s, ranges, layers, l)
		}
	}
	alignBytes := max(int(b.lim.MinStorageBufferOffsetAlignment), 4)
	maxBind := int(b.lim.MaxStorageBufferBindingSize)
	// A chunk's windows fit one binding and its words one grid
	// dimension (fewer than 4 elements a word: q8's 256 in 68; q4's
	// 256 in 36).
	slack := plan.QuantSlack(t, alignBytes)
	per := min(plan.QuantElems(t, maxBind-slack), 3*copyWG*int(b.lim.MaxComputeWorkgroupsPerDimension))
	per = per / plan.Q8Super * plan.Q8Super
	for i, r := range ranges {
		if layers != nil && layers[i] >= 0 {
			continue
		}
		for c := 0; c < r.N; c += per {
			n := min(per, r.N-c)
			e0, s0 := r.Dst+c, r.Src+c
			dw := plan.QuantWindow(t, e0, e0+n, alignBytes, int(d.bytes))
			sw := plan.QuantWindow(t, s0, s0+n, alignBytes, int(s.bytes))
			j := copyJob{dw: byteWin{dw.StartByte, dw.Bytes}, sw: byteWin{sw.StartByte, sw.Bytes}, cost: float64(n)}
			j.words = quantEntry(t, dw, sw, e0, s0, n)
			j.tiles = plan.CeilDiv(int(j.words[1]), copyWG)
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	return copyJobDispatches(pipe, d, s, jobs, copy8Entry), nil
}

// quantLayers is copyLayers for copy8.wgsl's ranges of dtype t: small
// where a workgroup takes the range's words in copyLoop steps; ranges
// share a word of dst where the last element of one and the first of
// the next lie in one fp8 word, or their blocks are a scale word's two
// (blocks 2c and 2c+1 of a superblock): a code word is one block's.
func quantLayers(t backend.DType, ranges []backend.CopyRange) []int {
	return copyLayers(ranges, func(r backend.CopyRange) bool {
		return quantWords(t, r.Dst, r.N) <= copyLoop*copyWG
	}, func(p, r backend.CopyRange) bool {
		if t == backend.FP8 {
			return (p.Dst+p.N-1)/4 == r.Dst/4
		}
		return ((p.Dst+p.N)/backend.Q8Block-1)/2 == r.Dst/backend.Q8Block/2
	})
}

// copyLayersMax bounds copyLayers' layers: a word is shared by at most
// four ranges (an fp8 word's elements; a half word's two, a q8 or q4
// scale word's two blocks).
const copyLayersMax = 4

// copy8Entry is the u32 words of a copy8.wgsl table entry: o_word, nw,
// d0, s0, n.
const copy8Entry = 5

// quantWords is the u32 words of a quantized buffer of dtype t from the
// first to the last that elements [off, off+n) lie in (plan.QuantSpan):
// the words copy8.wgsl takes for such a range; 0 for none.
func quantWords(t backend.DType, off, n int) int {
	if n == 0 {
		return 0
	}
	lo, hi := plan.QuantSpan(t, off, n)
	return (hi+3)/4 - lo/4
}

// quantEntry is the copy8.wgsl table entry that copies elements [s0,
// s0+n) of a quantized buffer of dtype t, its window sw, as elements
// [e0, e0+n) of another, its window dw.
func quantEntry(t backend.DType, dw, sw plan.QuantWin, e0, s0, n int) []uint32 {
	lo, hi := plan.QuantSpan(t, e0, n)
	w0, w1 := (lo-dw.StartByte)/4, (hi-dw.StartByte+3)/4
	return []uint32{uint32(w0), uint32(w1 - w0), uint32(e0 - dw.Start), uint32(s0 - sw.Start), uint32(n)}
}

// quantTableJobs appends the copy8.wgsl dispatches of the ranges of
// layers' layer l (copyLayers), as tableJobs does copy.wgsl's: in call
// order, as many a table as inlineVars holds whose windows of dst and
// src fit one binding each, each range a workgroup.
func (b *Backend) quantTableJobs(jobs []copyJob, d, s *buffer, ranges []backend.CopyRange, layers []int, l int) []copyJob {
	t := d.dtype
	alignBytes := max(int(b.lim.MinStorageBufferOffsetAlignment), 4)
	maxBind := int(b.lim.MaxStorageBufferBindingSize)
	window := func(x *buffer, lo, hi int) plan.QuantWin {
		return plan.QuantWindow(t, lo, hi, alignBytes, int(x.bytes))
	}
	fits := func(d0, d1, s0, s1 int) bool {
		return window(d, d0, d1).Bytes <= maxBind && window(s, s0, s1).Bytes <= maxBind
	}
	tableGroups(ranges, layers, l, inlineVars/4/copy8Entry, fits, func(group []backend.CopyRange, d0, d1, s0, s1 int) {
		dw, sw := window(d, d0, d1), window(s, s0, s1)
		j := copyJob{dw: byteWin{dw.StartByte, dw.Bytes}, sw: byteWin{sw.StartByte, sw.Bytes}, tiles: 1}
		j.words = make([]uint32, 0, copy8Entry*len(group))
		for _, r := range group {
			j.words = append(j.words, quantEntry(t, dw, sw, r.Dst, r.Src, r.N)...)
			j.cost += float64(r.N)
		}
		jobs = append(jobs, j)
	})
	return jobs
}

// copyDispatches are the dispatches that store elements [s, s+n) of src
// as elements [d, d+n) of dst, rounded to dst's dtype (into a half dst:
// elements of dst's boundary words outside the range keep their values).
// The caller holds b.mu.
func (b *Backend) copyDispatches(dst *buffer, d int, src *buffer, s, n int) ([]*dispatch, error) {
	return b.copyRanges(dst, src, []backend.CopyRange{{Dst: d, Src: s, N: n}})
}

// copyRanges are the dispatches of copy.wgsl that store ranges of src
// into dst, in effect in order (backend.Copier). Where no two ranges'
// destinations overlap, the order is free but for the two ranges of a
// word of a half dst (an odd boundary between them), which must not
// share a dispatch: copyLayers puts the small ranges in layers, and
// each layer's in tables of dispatches of their own, whose windows fit
// a binding each (tableJobs); the large ones get dispatches of their own
// (rangeJobs). Where destinations overlap, every range gets dispatches
// of its own, in order, so that the later wins. The caller holds b.mu.
func (b *Backend) copyRanges(dst, src *buffer, ranges []backend.CopyRange) ([]*dispatch, error) {
	half := dst.dtype.Half()
	layers := copyLayers(ranges, func(r backend.CopyRange) bool {
		return copyUnits(half, r.Dst, r.N) <= copyLoop*copyWG
	}, func(p, r backend.CopyRange) bool {
		return half && (p.Dst+p.N-1)/2 == r.Dst/2
	})
	var jobs []copyJob
	if layers != nil {
		for l := range copyLayersMax {
			jobs = b.tableJobs(jobs, dst, src, ranges, layers, l)
		}
	}
	for i, r := range ranges {
		if r.N > 0 && (layers == nil || layers[i] < 0) {
			jobs = b.rangeJobs(jobs, dst, r.Dst, src, r.Src, r.N)
		}
	}
	if len(jobs) == 0 {
		return nil, nil
	}
	pipe, err := b.pipeline(shaders.CopyConsts{WG: copyWG, O: elem(dst), Src: elem(src)}, "main")
	if err != nil {
		return nil, err
	}
	return copyJobDispatches(pipe, dst, src, jobs, copyEntry), nil
}

// copyUnits is the units of copy.wgsl that elements [d, d+n) of a dst
// take: its elements, or for a half dst the words they touch.
func copyUnits(half bool, d, n int) int {
	if !half || n == 0 {
		return n
	}
	return (d+n+1)/2 - d/2
}

// copyLayers is how a copy runs each of ranges: in a table of layer 0
// … copyLayersMax−1, or in dispatches of its own (-1): a range of no
// elements, one that is not small, and every range when fewer than two
// are small (a table then saves nothing). Two ranges of one layer never
// share a word of dst: the ranges sorted by their destinations, each
// small one takes the lowest layer that none of the small ones before it
// that share its first word is in (shares, given the earlier and then
// it); no other two can share a word, since a range has at least one
// element. It is nil when two ranges' destinations overlap.
func copyLayers(ranges []backend.CopyRange, small func(backend.CopyRange) bool, shares func(p, r backend.CopyRange) bool) []int {
	order := make([]int, 0, len(ranges))
	for i, r := range ranges {
		if r.N > 0 {
			order = append(order, i)
		}
	}
	byDst := func(i, j int) int { return cmp.Compare(ranges[i].Dst, ranges[j].Dst) }
	if !slices.IsSortedFunc(order, byDst) { // callers' rows mostly come sorted
		slices.SortFunc(order, byDst)
	}
	layers := make([]int, len(ranges))
	for i := range layers {
		layers[i] = -1
	}
	nsmall := 0
	for k, i := range order {
		r := ranges[i]
		if k > 0 && r.Dst < ranges[order[k-1]].Dst+ranges[order[k-1]].N {
			return nil
		}
		if !small(r) {
			continue
		}
		nsmall++
		// The lowest layer none of the ranges before it that share its
		// first word is in: the ones just before it, as far back as
		// they share it (an fp8 word's four elements may be four ranges').
		var used [copyLayersMax]bool
		for b := k - 1; b >= 0 && shares(ranges[order[b]], r); b-- {
			if l := layers[order[b]]; l >= 0 {
				used[l] = true
			}
		}
		l := 0
		for used[l] {
			l++
		}
		layers[i] = l
	}
	if nsmall < 2 {
		for i := range layers {
			layers[i] = -1
		}
	}
	return layers
}

// copyJob is one dispatch of copy.wgsl being planned: its table entries,
// relative to its windows of dst and src, its workgroups a range, and
// its work for the submission budget.
type copyJob struct {
	words  []uint32 // copyEntry words an entry
	dw, sw byteWin
	tiles  int
	cost   float64
}

// copyEntryWords is the table entry (copy.wgsl) that stores elements
// [s, s+n) of src as elements [d, d+n) of dst, within the windows dw of
// dst and sw of src.
func copyEntryWords(dst *buffer, dw byteWin, d int, src *buffer, sw byteWin, s, n int) []uint32 {
	srcBase := sw.firstElem(src)
	if !dst.dtype.Half() {
		return []uint32{uint32(d - dw.start/4), uint32(s - srcBase), 0, uint32(n)}
	}
	fw := d / 2 // dst's word of element d
	lo := d - 2*fw
	// src_off counts from the first word's element 0, one before element
	// s when lo is 1: it wraps below the window's start (copy.wgsl).
	return []uint32{uint32(fw - dw.start/4), uint32(s - srcBase - lo), uint32(lo), uint32(lo + n)}
}

// tableJobs appends the dispatches of the ranges of layers' layer l
// (copyLayers): in call order, as many a table as fit copyTable entries
// and windows of dst and src within one binding each (a small range
// always fits one), each range a workgroup. A window runs on to its
// buffer's end where a binding holds that, so that the calls of a
// decoding step, whose ranges move as a cache grows, bind alike and find
// their bind groups again (groups.go).
func (b *Backend) tableJobs(jobs []copyJob, dst, src *buffer, ranges []backend.CopyRange, layers []int, l int) []copyJob {
	alignBytes := max(int(b.lim.MinStorageBufferOffsetAlignment), 4)
	maxBind := int(b.lim.MaxStorageBufferBindingSize)
	window := func(x *buffer, lo, hi int) byteWin {
		w := byteWindow(x, lo, hi, alignBytes)
		if whole := int(x.bytes) - w.start; whole <= maxBind {
			w.n = whole
		}
		return w
	}
	fits := func(d0, d1, s0, s1 int) bool {
		return byteWindow(dst, d0, d1, alignBytes).n <= maxBind && byteWindow(src, s0, s1, alignBytes).n <= maxBind
	}
	tableGroups(ranges, layers, l, copyTable, fits, func(group []backend.CopyRange, d0, d1, s0, s1 int) {
		j := copyJob{dw: window(dst, d0, d1), sw: window(src, s0, s1), tiles: 1}
		j.words = make([]uint32, 0, copyEntry*len(group))
		for _, r := range group {
			j.words = append(j.words, copyEntryWords(dst, j.dw, r.Dst, src, j.sw, r.Src, r.N)...)
			j.cost += float64(r.N)
		}
		jobs = append(jobs, j)
	})
	return jobs
}

// tableGroups calls job for the ranges of layers' layer l (copyLayers) in
// groups, in call order: as many a group as most, whose extents in dst
// and src (the smallest and the largest element, [d0, d1) and [s0, s1))
// fit, each a table of a dispatch's.
func tableGroups(ranges []backend.CopyRange, layers []int, l, most int, fits func(d0, d1, s0, s1 int) bool, job func(group []backend.CopyRange, d0, d1, s0, s1 int)) {
	var group []backend.CopyRange
	var d0, d1, s0, s1 int // the group's extents in dst and src
	flush := func() {
		if len(group) > 0 {
			job(group, d0, d1, s0, s1)
			group = group[:0]
		}
	}
	for i, r := range ranges {
		if layers[i] != l {
			continue
		}
		if len(group) > 0 {
			n0, n1, m0, m1 := min(d0, r.Dst), max(d1, r.Dst+r.N), min(s0, r.Src), max(s1, r.Src+r.N)
			if len(group) < most && fits(n0, n1, m0, m1) {
				group = append(group, r)
				d0, d1, s0, s1 = n0, n1, m0, m1
				continue
			}
			flush()
		}
		group = append(group, r)
		d0, d1, s0, s1 = r.Dst, r.Dst+r.N, r.Src, r.Src+r.N
	}
	flush()
}

// rangeJobs appends the dispatches of a range of n > 0 elements from s
// of src to d of dst on its own: chunks whose windows, rounded out to
// the alignment, fit one binding, and whose units, a workgroup a copyWG,
// one grid dimension (less one unit for a start inside a word); chunks
// after the first start on an even element of dst, so that no two share
// a word.
func (b *Backend) rangeJobs(jobs []copyJob, dst *buffer, d int, src *buffer, s, n int) []copyJob {
	alignBytes := max(int(b.lim.MinStorageBufferOffsetAlignment), 4)
	maxBind := int(b.lim.MaxStorageBufferBindingSize)
	ow := 1
	if dst.dtype.Half() {
		ow = 2
	}
	per := min((maxBind-2*alignBytes)/4, (copyWG*int(b.lim.MaxComputeWorkgroupsPerDimension)-1)*ow) &^ 1
	for e0 := d; e0 < d+n; {
		e1 := min(d+n, (e0+per)&^1)
		if e1 <= e0 {
			e1 = min(d+n, e0+per)
		}
		sa := s + (e0 - d) // the chunk's first element of src
		j := copyJob{dw: byteWindow(dst, e0, e1, alignBytes), sw: byteWindow(src, sa, sa+(e1-e0), alignBytes), cost: float64(e1 - e0)}
		j.words = copyEntryWords(dst, j.dw, e0, src, j.sw, sa, e1-e0)
		j.tiles = plan.CeilDiv(copyUnits(ow == 2, e0, e1-e0), copyWG)
		jobs = append(jobs, j)
		e0 = e1
	}
	return jobs
}

// copyJobDispatches are the dispatches of jobs, in order: their entries
// (entry words each: copyEntry for copy.wgsl, copy8Entry for copy8.wgsl)
// laid out in tables of up to inlineVars bytes, each job's in one, so
// that consecutive dispatches of one table place it in the arena once
// (record).
func copyJobDispatches(pipe *pipeline, dst, src *buffer, jobs []copyJob, entry int) []*dispatch {
	type at struct{ table, first int }
	ats := make([]at, len(jobs))
	var tables [][]uint32
	var cur []uint32
	for i, j := range jobs {
		if len(cur)+len(j.words) > inlineVars/4/entry*entry {
			tables, cur = append(tables, cur), nil
		}
		ats[i] = at{len(tables), len(cur) / entry}
		cur = append(cur, j.words...)
	}
	tables = append(tables, cur)
	ds := make([]*dispatch, len(jobs))
	for i, j := range jobs {
		n := len(j.words) / entry
		dd := newDispatch(pipe)
		dd.bind("src", src.buf, src.off+j.sw.start, j.sw.n)
		dd.bind("o", dst.buf, dst.off+j.dw.start, j.dw.n)
		dd.vars = tables[ats[i].table]
		dd.setParams(shaders.CopyParams{N: uint32(n), First: uint32(ats[i].first)})
		dd.grid = [3]int{j.tiles, n, 1}
		dd.cost = j.cost
		ds[i] = dd
	}
	return ds
}

// byteWin is a binding's window of a buffer in bytes from the buffer's
// element 0: it starts on the device's offset alignment.
type byteWin struct{ start, n int }

// byteWindow is the window of x that holds elements [lo, hi): from the
// aligned byte at or below element lo's word to the end of element
// hi−1's word, at least 16 bytes where x has them.
func byteWindow(x *buffer, lo, hi, alignBytes int) byteWin {
	at := func(e int) int { // the byte where element e's word starts
		if x.dtype.Half() {
			return e / 2 * 4
		}
		return e * 4
	}
	start := at(lo) / alignBytes * alignBytes
	end := min(int(x.bytes), max(at(hi-1)+4, start+16))
	return byteWin{start, end - start}
}

// firstElem is the element of x at the window's first byte.
func (w byteWin) firstElem(x *buffer) int {
	if x.dtype.Half() {
		return w.start / 4 * 2
	}
	return w.start / 4
}
