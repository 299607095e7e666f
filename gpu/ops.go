//go:build cgo && !nogpu

package gpu

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/shaders"
	"github.com/rajveermalviya/go-webgpu/wgpu"
)

// loopBudget is the most loop iterations the host lets one shader
// invocation run. Lavapipe silently stops an invocation after about 65 535
// in total (all loops, nested ones included), so every key range, head
// dimension chunk and column chunk is sized to stay well under it.
const loopBudget = 32768

// Tile sizes. The same constants size the dispatch and are written into
// the WGSL (package shaders), so the two cannot disagree.
const (
	fusedWG     = 64  // invocations per workgroup of fused.wgsl and fusedloop.wgsl
	fusedMaxR   = 4   // query rows per invocation of fused.wgsl, at most
	fusedMinR   = 2   // and at least; wider heads run fusedloop.wgsl
	fusedUnroll = 128 // most R·(⌈D/4⌉ + ⌈Dv/4⌉) fused.wgsl is written out for
	fusedMaxK   = 32  // keys per tile of fusedloop.wgsl, fewer when workgroup memory is short
	mmTile      = 64  // TM = TN of the scores and context tiles
	mmStep      = 16  // TD / TJ: inner-dimension step through workgroup memory
	mmReg       = 4   // RM = RN: each invocation's register block
	smWG        = 256
	smPer       = 32 // columns per invocation per softmax chunk
	mergeWG     = 64
)

// mmIters is the loop iterations a scores or context invocation runs per
// step of mmStep along the inner dimension.
const mmIters = mmStep*(2*mmReg+mmReg*mmReg) + 2*mmTile*mmStep/((mmTile/mmReg)*(mmTile/mmReg)) + 2

// mmChunk is the inner-dimension (head dim for scores, keys for context)
// length one dispatch covers.
const mmChunk = loopBudget / mmIters * mmStep

func qTensor(p backend.Problem) tensor {
	s := p.QStrides()
	return tensor{sb: s.Batch, sh: s.Head, sr: s.Row, sc: 1, rows: byQuery, ncols: p.D}
}

func kTensor(p backend.Problem) tensor {
	s := p.KStrides()
	return tensor{sb: s.Batch, sh: s.Head, sr: s.Row, sc: 1, kv: true, rows: byKey, ncols: p.D}
}

func vTensor(p backend.Problem) tensor {
	s := p.VStrides()
	return tensor{sb: s.Batch, sh: s.Head, sr: s.Row, sc: 1, kv: true, rows: byKey, ncols: p.Dv}
}

func oTensor(p backend.Problem) tensor {
	s := p.OStrides()
	return tensor{sb: s.Batch, sh: s.Head, sr: s.Row, sc: 1, rows: byQuery, ncols: p.Dv}
}

func lseTensor(p backend.Problem) tensor {
	return tensor{sb: p.H * p.Nq, sh: p.Nq, sr: 1, sc: 1, rows: byQuery, ncols: 1}
}

func scoresTensor(p backend.Problem) tensor {
	return tensor{sb: p.H * p.Nq * p.Nk, sh: p.Nq * p.Nk, sr: p.Nk, sc: 1, rows: byQuery, cols: colsKeys}
}

func maskTensor(m *backend.Mask) tensor {
	s := m.Strides()
	return tensor{sb: s[0], sh: s[1], sr: s[2], sc: s[3], rows: byQuery, cols: colsKeys}
}

func maskBuf(m *backend.Mask) backend.Buffer {
	if m == nil {
		return nil
	}
	return m.Buf
}

// arg is one buffer argument of an op, for ownership and aliasing checks.
type arg struct {
	name string
	buf  backend.Buffer
	out  bool
}

// begin takes the device lock for op and resolves its arguments. On
// success the caller holds b.mu and must unlock it.
func (b *Backend) begin(ctx context.Context, op string, args ...arg) ([]*buffer, error) {
	if err := b.lock(ctx, op); err != nil {
		return nil, err
	}
	bufs, err := b.resolveArgs(op, args...)
	if err != nil {
		b.mu.Unlock()
		return nil, err
	}
	return bufs, nil
}

// resolveArgs resolves every non-nil argument and refuses an output that
// shares its buffer with another argument (WebGPU forbids a writable
// binding aliasing any other). The caller holds b.mu.
func (b *Backend) resolveArgs(op string, args ...arg) ([]*buffer, error) {
	out := make([]*buffer, len(args))
	for i, a := range args {
		if a.buf == nil {
			continue
		}
		x, err := b.resolve(op, a.name, a.buf)
		if err != nil {
			return nil, err
		}
		out[i] = x
	}
	for i, a := range args {
		if !a.out || out[i] == nil {
			continue
		}
		for j := range args {
			if j != i && out[j] == out[i] {
				return nil, backend.Errorf(backend.ErrShape, "gpu: %s: %s and %s share one buffer", op, a.name, args[j].name)
			}
		}
	}
	return out, nil
}

// plan cuts the unit into dispatches no larger than the device allows:
// windows within the binding limit, grids within the dimension limit and
// work within the submission budget.
func (b *Backend) plan(op string, p backend.Problem, u unit, sp splitter, ops []operand,
	grid func(unit) [3]int, cost func(unit) float64) ([]unit, error) {
	sp.ok = func(u unit) bool {
		return b.gridOK(grid(u)) && cost(u) <= b.budget && b.bindOperands(nil, u, p.H, p.Group(), ops)
	}
	units, ok := sp.split(u, nil)
	if !ok {
		return nil, tooLarge(op, p, fmt.Sprintf("one tile's operands exceed the device's %d-byte storage binding", b.lim.MaxStorageBufferBindingSize))
	}
	return units, nil
}

// unitDispatch starts a dispatch of pipe for unit u of problem p: the
// unit's Params fields, and the windows and strides of ops. The caller
// sets the kernel's own fields, the grid and the cost.
func (b *Backend) unitDispatch(pipe *pipeline, p backend.Problem, u unit, ops []operand) *dispatch {
	d := newDispatch(pipe)
	d.set("H", p.H)
	d.set("G", p.Group())
	d.set("Nq", p.Nq)
	d.set("Nk", p.Nk)
	d.set("bh0", u.bh0)
	d.set("i0", u.i0)
	d.set("i1", u.i1)
	d.set("j0", u.j0)
	d.set("j1", u.j1)
	b.bindOperands(d, u, p.H, p.Group(), ops)
	return d
}

// Scores computes the scores up to p.Stage in tiles, splitting a head
// dimension longer than mmChunk across dispatches that accumulate; the
// last of them carries the sums through the stage's steps.
func (b *Backend) Scores(ctx context.Context, p backend.ScoresParams, q, k, s backend.Buffer) error {
	if err := p.Validate(q, k, s); err != nil {
		return fmt.Errorf("gpu: scores: %w", err)
	}
	if err := checkVars("scores", p.Problem); err != nil {
		return err
	}
	bufs, err := b.begin(ctx, "scores", arg{"Q", q, false}, arg{"K", k, false}, arg{"bias", maskBuf(p.Bias), false},
		arg{"mask", maskBuf(p.Keep), false}, arg{"scores", s, true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	pr := p.Problem
	if pr.ScoresLen() == 0 {
		return nil
	}
	ops := []operand{
		{name: "q", x: bufs[0], t: qTensor(pr)},
		{name: "k", x: bufs[1], t: kTensor(pr)},
		{name: "bias", x: bufs[2], mask: true},
		{name: "keep", x: bufs[3], mask: true},
		{name: "s", x: bufs[4], t: scoresTensor(pr), out: true},
	}
	if p.Bias != nil {
		ops[2].t = maskTensor(p.Bias)
	}
	if p.Keep != nil {
		ops[3].t = maskTensor(p.Keep)
	}
	flags := scoresFlags(p)
	vars, err := b.uploadVars(pr, flags&(shaders.FlagRange|shaders.FlagALiBi) != 0)
	if err != nil {
		return err
	}
	defer vars.free()
	pipe, err := b.pipeline(&shaders.Scores, shaders.Spec{mmTile, mmTile, mmStep, mmReg, mmReg}, "main")
	if err != nil {
		return err
	}
	grid := func(u unit) [3]int {
		return [3]int{ceilDiv(u.j1-u.j0, mmTile), ceilDiv(u.i1-u.i0, mmTile), u.bh1 - u.bh0}
	}
	var ds []*dispatch
	dcs := chunks(pr.D, mmChunk)
	for ci, dc := range dcs {
		cost := func(u unit) float64 {
			return 2 * float64(u.bh1-u.bh0) * float64(u.i1-u.i0) * float64(u.j1-u.j0) * float64(dc[1]-dc[0])
		}
		units, err := b.plan("scores", pr, unit{0, pr.B * pr.H, 0, pr.Nq, 0, pr.Nk},
			splitter{rowAlign: mmTile, keyAlign: mmTile, splitKeys: true}, ops, grid, cost)
		if err != nil {
			return err
		}
		for _, u := range units {
			d := b.unitDispatch(pipe, pr, u, ops)
			d.set("d0", dc[0])
			d.set("d1", dc[1])
			d.set("first", btoi(ci == 0))
			d.set("last", btoi(ci == len(dcs)-1))
			d.setBits("scale", math.Float32bits(pr.Scale))
			d.setBits("softcap", math.Float32bits(pr.Softcap))
			d.set("flags", flags)
			b.bindVars(d, vars)
			d.grid, d.cost = grid(u), cost(u)
			ds = append(ds, d)
		}
	}
	return b.run(ctx, "scores", ds)
}

// scoresFlags are the steps scores.wgsl takes for p.Stage: each stage's
// flags include the one before it.
func scoresFlags(p backend.ScoresParams) int {
	flags := 0
	if p.Stage == backend.StageRaw {
		return flags
	}
	if p.Softcap > 0 {
		flags |= shaders.FlagSoftcap
	}
	if p.Stage == backend.StageCapped {
		return flags
	}
	if p.Bias != nil {
		flags |= shaders.FlagBias
	}
	if p.ALiBi != nil {
		flags |= shaders.FlagALiBi
	}
	if p.Stage == backend.StageBiased {
		return flags
	}
	if rangeVariants(p.Problem) {
		flags |= shaders.FlagRange
	}
	if p.Keep != nil {
		flags |= shaders.FlagKeep
	}
	return flags
}

// uploadVars writes p's variant data (varsLayout) to a scratch buffer
// when need is set, for the kernels' vars binding; it returns nil
// otherwise (free and bindVars take nil). The caller holds b.mu and frees
// the buffer.
func (b *Backend) uploadVars(p backend.Problem, need bool) (*buffer, error) {
	if !need {
		return nil, nil
	}
	data := varsLayout(p)
	if uint64(len(data))*4 > b.lim.MaxStorageBufferBindingSize {
		return nil, tooLarge("variants", p, fmt.Sprintf("the per-head and per-batch variant data exceed the device's %d-byte storage binding", b.lim.MaxStorageBufferBindingSize))
	}
	x, err := b.scratch(len(data))
	if err != nil {
		return nil, err
	}
	f := make([]float32, len(data))
	for i, v := range data {
		f[i] = math.Float32frombits(v)
	}
	if err := b.write(x.buf, 0, f); err != nil {
		x.free()
		return nil, err
	}
	return x, nil
}

// bindVars binds the variant data x, or a dummy when x is nil (the
// kernel then reads none of it: no flag that needs it is set).
func (b *Backend) bindVars(d *dispatch, x *buffer) {
	if x == nil {
		d.bind("vars", b.dummyR, window{0, 64})
		return
	}
	d.bind("vars", x.buf, window{0, int(x.bytes / 4)})
}

// maxSoftmaxChunks bounds the chunks of one row: normalize loops over all
// of them.
const maxSoftmaxChunks = loopBudget - smPer - 64

// Softmax normalises each row of s in place, in two passes (stats, then
// normalize) over chunks of smWG·smPer columns.
func (b *Backend) Softmax(ctx context.Context, p backend.SoftmaxParams, s backend.Buffer) error {
	if err := p.Validate(s); err != nil {
		return fmt.Errorf("gpu: softmax: %w", err)
	}
	if err := checkVars("softmax", p.Problem); err != nil {
		return err
	}
	bufs, err := b.begin(ctx, "softmax", arg{"scores", s, true}, arg{"mask", maskBuf(p.Keep), false}, arg{"LSE", p.LSE, true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	pr := p.Problem
	if pr.LSELen() == 0 {
		return nil
	}
	if pr.Nk == 0 {
		if bufs[2] != nil {
			return b.write(bufs[2].buf, 0, emptyLSE(pr))
		}
		return nil
	}
	cw := smWG * smPer
	nc := ceilDiv(pr.Nk, cw)
	if nc > maxSoftmaxChunks {
		return tooLarge("softmax", pr, fmt.Sprintf("a row of %d keys needs %d chunks, more than %d", pr.Nk, nc, maxSoftmaxChunks))
	}
	stLen := pr.LSELen() * 2 * nc
	if uint64(stLen)*4 > b.lim.MaxBufferSize {
		return tooLarge("softmax", pr, "the row statistics exceed the device's largest buffer")
	}
	st, err := b.scratch(stLen)
	if err != nil {
		return err
	}
	defer st.free()

	ops := []operand{
		{name: "s", x: bufs[0], t: scoresTensor(pr), out: true},
		{name: "keep", x: bufs[1], mask: true},
		{name: "st", x: st, t: tensor{sb: pr.H * pr.Nq * 2 * nc, sh: pr.Nq * 2 * nc, sr: 2 * nc, sc: 1, rows: byQuery, ncols: 2 * nc}, out: true},
		{name: "lse", x: bufs[2], t: lseTensor(pr), out: true},
	}
	flags := 0
	if rangeVariants(pr) {
		flags |= shaders.FlagRange
	}
	if p.Keep != nil {
		ops[1].t = maskTensor(p.Keep)
		flags |= shaders.FlagKeep
	}
	if p.LSE != nil {
		flags |= shaders.FlagLSE
	}
	if pr.Sinks != nil {
		flags |= shaders.FlagSink
	}
	vars, err := b.uploadVars(pr, flags&(shaders.FlagRange|shaders.FlagSink) != 0)
	if err != nil {
		return err
	}
	defer vars.free()
	spec := shaders.Spec{smWG, smPer}
	stats, err := b.pipeline(&shaders.Softmax, spec, "stats")
	if err != nil {
		return err
	}
	norm, err := b.pipeline(&shaders.Softmax, spec, "normalize")
	if err != nil {
		return err
	}
	grid := func(u unit) [3]int {
		return [3]int{ceilDiv(u.j1-u.j0, cw), u.i1 - u.i0, u.bh1 - u.bh0}
	}
	cost := func(u unit) float64 {
		return 8 * float64(u.bh1-u.bh0) * float64(u.i1-u.i0) * float64(ceilDiv(u.j1-u.j0, cw)*cw)
	}
	units, err := b.plan("softmax", pr, unit{0, pr.B * pr.H, 0, pr.Nq, 0, pr.Nk},
		splitter{rowAlign: 1, keyAlign: cw, splitKeys: true}, ops, grid, cost)
	if err != nil {
		return err
	}
	var ds []*dispatch
	for _, pipe := range []*pipeline{stats, norm} {
		for _, u := range units {
			d := b.unitDispatch(pipe, pr, u, ops)
			d.set("nc", nc)
			d.set("flags", flags)
			b.bindVars(d, vars)
			d.grid, d.cost = grid(u), cost(u)
			ds = append(ds, d)
		}
	}
	return b.run(ctx, "softmax", ds)
}

// Context computes O = P·V in tiles, over chunks of mmChunk keys that
// accumulate into O.
func (b *Backend) Context(ctx context.Context, p backend.ContextParams, pm, v, o backend.Buffer) error {
	if err := p.Validate(pm, v, o); err != nil {
		return fmt.Errorf("gpu: context: %w", err)
	}
	bufs, err := b.begin(ctx, "context", arg{"weights", pm, false}, arg{"V", v, false}, arg{"O", o, true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	pr := p.Problem
	if pr.OLen() == 0 {
		return nil
	}
	ops := []operand{
		{name: "p", x: bufs[0], t: scoresTensor(pr)},
		{name: "v", x: bufs[1], t: vTensor(pr)},
		{name: "o", x: bufs[2], t: oTensor(pr), out: true},
	}
	pipe, err := b.pipeline(&shaders.Context, shaders.Spec{mmTile, mmTile, mmStep, mmReg, mmReg}, "main")
	if err != nil {
		return err
	}
	grid := func(u unit) [3]int {
		return [3]int{ceilDiv(pr.Dv, mmTile), ceilDiv(u.i1-u.i0, mmTile), u.bh1 - u.bh0}
	}
	cost := func(u unit) float64 {
		return 2 * float64(u.bh1-u.bh0) * float64(u.i1-u.i0) * float64(max(u.j1-u.j0, 1)) * float64(pr.Dv)
	}
	keyChunks := chunks(pr.Nk, mmChunk)
	if pr.Nk == 0 {
		keyChunks = [][2]int{{0, 0}} // one pass that writes zeros
	}
	var ds []*dispatch
	for ci, kc := range keyChunks {
		units, err := b.plan("context", pr, unit{0, pr.B * pr.H, 0, pr.Nq, kc[0], kc[1]},
			splitter{rowAlign: mmTile}, ops, grid, cost)
		if err != nil {
			return err
		}
		for _, u := range units {
			d := b.unitDispatch(pipe, pr, u, ops)
			d.set("Dv", pr.Dv)
			d.set("first", btoi(ci == 0))
			d.grid, d.cost = grid(u), cost(u)
			ds = append(ds, d)
		}
	}
	return b.run(ctx, "context", ds)
}

// fusedTile returns the keys per tile that fit the device's workgroup
// memory for these head dims in fusedloop.wgsl, and the keys per chunk
// that keep one invocation within loopBudget; 0, 0 when no tile fits.
func (b *Backend) fusedTile(d, dv int) (tk, chunk int) {
	d4, dv4 := ceilDiv(d, 4), ceilDiv(dv, 4)
	mem := int(b.lim.MaxComputeWorkgroupStorageSize)
	tk = fusedMaxK
	for tk > 0 && tk*(d4+dv4)*16 > mem {
		tk /= 2
	}
	if tk == 0 {
		return 0, 0
	}
	perTile := ceilDiv(tk*d4, fusedWG) + ceilDiv(tk*dv4, fusedWG) + tk*(1+d4+2*dv4) + 2
	tiles := (loopBudget - d4 - dv4) / perTile
	if tiles < 1 {
		return 0, 0
	}
	return tk, tiles * tk
}

// fusedRows is the query rows per invocation of fused.wgsl for head dims
// d, dv, or 0 when they are too wide for it to unroll (fusedloop.wgsl
// then runs). fused.wgsl's code, and lavapipe's time to compile it, grow
// as R·(⌈d/4⌉ + ⌈dv/4⌉); fusedUnroll bounds that product and fusedMaxR
// the rows. Measured on lavapipe at N = 1024, D = 64 (GFLOP/s, and the
// driver's compile time): R = 1 about 4, R = 2 about 7, R = 4 about 13.5
// (2.7 s), R = 8 about 17 (6.7 s), R = 16 about 21 (over 10 s); each vec4
// of K and V loaded serves R rows, and loads are what lavapipe pays for.
func fusedRows(d, dv int) int {
	r := fusedMaxR
	for r >= fusedMinR && r*(ceilDiv(d, 4)+ceilDiv(dv, 4)) > fusedUnroll {
		r /= 2
	}
	if r < fusedMinR {
		return 0
	}
	return r
}

// fusedChunk is the keys per chunk of fused.wgsl. It loops once per key,
// so loopBudget keys (less a margin for the loops lavapipe's compiler
// might add) would be the most; fewer keep a chunk's K and V in the CPU's
// cache while every query tile of the head reads them. Measured on
// lavapipe (Mesa 22.3, 2 cores), B=1 H=8 D=64, GFLOP/s at N = 4096 and
// 16384: chunks of 32704 keys 11.6 and 6.9, 4096 keys 13.1 and 13.1, 2048
// keys 13.1 and 12.9.
const fusedChunk = 4096

// Fused runs flash attention: the key range is cut into chunks, each a
// dispatch of fused.wgsl whose normalised partial (O, LSE) merge.wgsl
// folds into the result, so no invocation loops too long, no submission
// runs long and no binding exceeds the device's limit.
func (b *Backend) Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	if err := p.Validate(q, k, v, o, lse); err != nil {
		return fmt.Errorf("gpu: fused: %w", err)
	}
	if err := checkVars("fused", p.Problem); err != nil {
		return err
	}
	bufs, err := b.begin(ctx, "fused", arg{"Q", q, false}, arg{"K", k, false}, arg{"V", v, false},
		arg{"bias", maskBuf(p.Bias), false}, arg{"mask", maskBuf(p.Keep), false}, arg{"O", o, true}, arg{"LSE", lse, true})
	if err != nil {
		return err
	}
	defer b.mu.Unlock()
	pr := p.Problem
	if pr.OLen() == 0 {
		return nil
	}
	// fused.wgsl when the head dims are narrow enough to unroll, one key
	// per loop iteration; fusedloop.wgsl otherwise, in tiles of tk keys.
	rows := fusedRows(pr.D, pr.Dv)
	tk, chunk := 1, fusedChunk
	if rows == 0 {
		if tk, chunk = b.fusedTile(pr.D, pr.Dv); tk == 0 {
			return backend.Errorf(backend.ErrUnsupported, "gpu: fused: head dims D=%d Dv=%d do not fit the device's %d bytes of workgroup memory; use the staged strategy",
				pr.D, pr.Dv, b.lim.MaxComputeWorkgroupStorageSize)
		}
	}
	// A K or V window of one head must fit one binding (less the
	// alignment of its start, and of its end when bound as vec4s).
	maxBind := int(b.lim.MaxStorageBufferBindingSize/4) - int(b.lim.MinStorageBufferOffsetAlignment/4) - 4
	for _, t := range []tensor{kTensor(pr), vTensor(pr)} {
		if fit := (maxBind - t.ncols) / t.sr; fit < chunk {
			chunk = fit / tk * tk
		}
	}
	if chunk < tk {
		return tooLarge("fused", pr, "one tile of keys exceeds the device's storage binding")
	}

	flags := 0
	if rangeVariants(pr) {
		flags |= shaders.FlagRange
	}
	if p.Bias != nil {
		flags |= shaders.FlagBias
	}
	if p.Keep != nil {
		flags |= shaders.FlagKeep
	}
	if pr.Softcap > 0 {
		flags |= shaders.FlagSoftcap
	}
	if pr.ALiBi != nil {
		flags |= shaders.FlagALiBi
	}
	vars, err := b.uploadVars(pr, rangeVariants(pr) || pr.ALiBi != nil || pr.Sinks != nil)
	if err != nil {
		return err
	}
	defer vars.free()
	d4, dv4 := ceilDiv(pr.D, 4), ceilDiv(pr.Dv, 4)
	var fused *pipeline
	tileRows := fusedWG // query rows per workgroup
	if rows > 0 {
		fused, err = b.pipeline(&shaders.Fused, shaders.Spec{fusedWG, rows, pr.D, pr.Dv, d4, dv4}, "main")
		tileRows = fusedWG * rows
	} else {
		fused, err = b.pipeline(&shaders.FusedLoop, shaders.Spec{fusedWG, tk, pr.D, pr.Dv, d4, dv4}, "main")
	}
	if err != nil {
		return err
	}
	// Only the keys some row may see are visited, in chunks; a row's
	// first step writes O and LSE, its later ones merge (fusedSteps).
	steps := fusedSteps(pr, chunk, tileRows)
	merges := slices.ContainsFunc(steps, func(st fusedStep) bool { return !st.first })
	lseOut := bufs[6]
	var po, plse *buffer
	if merges {
		if po, err = b.scratch(pr.OLen()); err != nil {
			return err
		}
		defer po.free()
		if plse, err = b.scratch(pr.LSELen()); err != nil {
			return err
		}
		defer plse.free()
		if lseOut == nil {
			if lseOut, err = b.scratch(pr.LSELen()); err != nil {
				return err
			}
			defer lseOut.free()
		}
	}
	if lseOut != nil {
		flags |= shaders.FlagLSE
	}

	merge, err := b.pipeline(&shaders.Merge, shaders.Spec{mergeWG}, "main")
	if err != nil {
		return err
	}
	ops := func(out, outLSE *buffer) []operand {
		r := []operand{
			{name: "q", x: bufs[0], t: qTensor(pr)},
			{name: "k", x: bufs[1], t: kTensor(pr), vec4: rows > 0 && pr.D%4 == 0},
			{name: "v", x: bufs[2], t: vTensor(pr), vec4: rows > 0 && pr.Dv%4 == 0},
			{name: "bias", x: bufs[3], mask: true},
			{name: "keep", x: bufs[4], mask: true},
			{name: "o", x: out, t: oTensor(pr), out: true},
			{name: "lse", x: outLSE, t: lseTensor(pr), out: true},
		}
		if p.Bias != nil {
			r[3].t = maskTensor(p.Bias)
		}
		if p.Keep != nil {
			r[4].t = maskTensor(p.Keep)
		}
		return r
	}
	mergeOps := []operand{
		{name: "po", x: po, t: oTensor(pr)},
		{name: "plse", x: plse, t: lseTensor(pr)},
		{name: "o", x: bufs[5], t: oTensor(pr), out: true},
		{name: "lse", x: lseOut, t: lseTensor(pr), out: true},
	}
	grid := func(u unit) [3]int { return [3]int{ceilDiv(u.i1-u.i0, tileRows), u.bh1 - u.bh0, 1} }
	cost := func(u unit) float64 {
		return float64(2*pr.D+2*pr.Dv) * float64(u.bh1-u.bh0) * float64(u.i1-u.i0) * float64(max(u.j1-u.j0, 1))
	}
	var ds []*dispatch
	for _, st := range steps {
		out, outLSE, fl := bufs[5], lseOut, flags
		if st.first && pr.Sinks != nil {
			fl |= shaders.FlagSink
		}
		if !st.first {
			out, outLSE = po, plse
		}
		fo := ops(out, outLSE)
		units, err := b.plan("fused", pr, unit{0, pr.B * pr.H, st.i0, st.i1, st.j0, st.j1},
			splitter{rowAlign: tileRows}, append(fo, mergeOps...), grid, cost)
		if err != nil {
			return err
		}
		for _, u := range units {
			d := b.unitDispatch(fused, pr, u, fo)
			d.setBits("scale", math.Float32bits(pr.Scale))
			d.setBits("softcap", math.Float32bits(pr.Softcap))
			d.set("flags", fl)
			b.bindVars(d, vars)
			d.grid, d.cost = grid(u), cost(u)
			ds = append(ds, d)
		}
		if st.first {
			continue
		}
		for _, u := range units {
			d := b.unitDispatch(merge, pr, u, mergeOps)
			d.set("Dv", pr.Dv)
			d.grid = [3]int{ceilDiv(u.i1-u.i0, mergeWG), u.bh1 - u.bh0, 1}
			d.cost = float64(u.bh1-u.bh0) * float64(u.i1-u.i0) * float64(pr.Dv)
			ds = append(ds, d)
		}
	}
	return b.run(ctx, "fused", ds)
}

// scratch allocates a temporary device buffer of n elements, not visible
// to the caller; free it under b.mu. The caller holds b.mu.
func (b *Backend) scratch(n int) (*buffer, error) {
	if uint64(n)*4 > b.lim.MaxBufferSize {
		return nil, backend.Errorf(backend.ErrTooLarge, "gpu: scratch of %d elements exceeds the device's largest buffer, %d bytes", n, b.lim.MaxBufferSize)
	}
	size := (max(uint64(n)*4, 16) + 15) &^ 15
	wb, err := b.dev.CreateBuffer(&wgpu.BufferDescriptor{
		Label: "attn scratch",
		Usage: wgpu.BufferUsage_Storage | wgpu.BufferUsage_CopyDst | wgpu.BufferUsage_CopySrc,
		Size:  size,
	})
	if err != nil || wb == nil {
		return nil, backend.Errorf(backend.ErrTooLarge, "gpu: scratch of %d elements: %v", n, err)
	}
	x := &buffer{owner: b, n: n, bytes: int64(size), buf: wb}
	b.allocated += x.bytes
	b.peak = max(b.peak, b.allocated)
	return x, nil
}

// emptyLSE is the LSE of a problem whose rows see no key: −Inf, or the
// row's head's sink logit.
func emptyLSE(p backend.Problem) []float32 {
	out := make([]float32, p.LSELen())
	for x := range out {
		out[x] = negInf
		if p.Sinks != nil {
			out[x] = p.Sinks[x/p.Nq%p.H]
		}
	}
	return out
}

func btoi(v bool) int {
	if v {
		return 1
	}
	return 0
}
