package backendtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/attn-go/attn/backend"
)

// naive is the simplest backend that meets the contract: host slices for
// buffers and Reference for the maths. Passing Run shows the suite is
// consistent with its own reference and its own rules; the faults below
// show it catches backends that break them.
type naive struct {
	// mu is held for reading by every op and for writing by Release and
	// Close, so a buffer cannot go away under an op.
	mu     sync.RWMutex
	closed bool
	fault  fault
	// ftz claims Caps.FlushesSubnormals and reads every operand's
	// float32 subnormals (a bfloat16's among them) as zero, as a GPU
	// may.
	ftz bool
}

// fault is a deliberate bug, to show the suite notices it.
type fault int

const (
	noFault           fault = iota
	topLeftCausal           // causal aligned top-left instead of bottom-right
	nanRows                 // fully masked rows give NaN
	touchesInput            // Fused scribbles on Q
	writesPast              // Fused writes one element past O
	wrongKVHead             // query head h reads KV head h % KVHeads
	sloppy                  // O off by 1e-3
	ignoresKeep             // Softmax ignores the keep-mask
	float32Math             // not a bug: Fused computes in float32 throughout
	truncatesHalves         // halves rounded toward zero, not to nearest even
	infOnOverflow           // an output beyond its half dtype's range becomes ±Inf
	coarseF16               // a Float16 output rounded to bfloat16's precision first
	flushesSubnormals       // ops read a half subnormal as zero
)

// naiveBuf stores a Float32 buffer's values, and a half buffer's bits as
// they are (so that WriteBits and ReadBits move them untouched).
type naiveBuf struct {
	owner    *naive
	dtype    backend.DType
	data     []float32 // Float32
	bits     []uint16  // Float16, BFloat16
	released bool
}

func (b *naiveBuf) Len() int {
	if b.dtype.Half() {
		return len(b.bits)
	}
	return len(b.data)
}

func (b *naiveBuf) DType() backend.DType { return b.dtype }

// load is the first n values of an operand, widened.
func load(buf backend.Buffer, n int) []float32 {
	b := buf.(*naiveBuf)
	if !b.dtype.Half() {
		return b.data[:n]
	}
	x := make([]float32, n)
	for i := range x {
		x[i] = b.dtype.Decode(b.bits[i])
	}
	return x
}

// operand is load for an op: under ftz its float32 subnormals read as
// zero, and with the flushesSubnormals fault a half operand's
// subnormals.
func operand(buf backend.Buffer, n int) []float32 {
	x := load(buf, n)
	if b := buf.(*naiveBuf); b.owner.ftz {
		x = slices.Clone(x) // a Float32 buffer's load is its own data
		for i, v := range x {
			if subnormal32(v) {
				x[i] = 0
			}
		}
	}
	if b := buf.(*naiveBuf); b.owner.fault == flushesSubnormals && b.dtype.Half() {
		tiny := float32(0x1p-14)
		if b.dtype == backend.BFloat16 {
			tiny = 0x1p-126
		}
		for i, v := range x {
			if v != 0 && -tiny < v && v < tiny {
				x[i] = 0
			}
		}
	}
	return x
}

// encode rounds x to half dtype t as the backend does: DType.Encode, or
// toward zero with the truncatesHalves fault.
func (n *naive) encode(t backend.DType, x float32) uint16 {
	e := t.Encode(x)
	if r := t.Decode(e); n.fault == truncatesHalves && !math.IsInf(float64(r), 0) && math.Abs(float64(r)) > math.Abs(float64(x)) {
		e-- // one step toward zero: halves are sign and magnitude
	}
	return e
}

// store writes element i of an op's output: x rounded to the buffer's
// dtype, saturated (DType.Saturate).
func (n *naive) store(buf backend.Buffer, i int, x float32) {
	b := buf.(*naiveBuf)
	if !b.dtype.Half() {
		b.data[i] = x
		return
	}
	if n.fault == coarseF16 && b.dtype == backend.Float16 {
		x = backend.BFloat16.Round(x)
	}
	switch n.fault {
	case infOnOverflow:
		b.bits[i] = b.dtype.Encode(x)
	case truncatesHalves:
		b.bits[i] = n.encode(b.dtype, x)
	default:
		b.bits[i] = b.dtype.Encode(b.dtype.Saturate(x))
	}
}

func (b *naiveBuf) Release() {
	b.owner.mu.Lock()
	defer b.owner.mu.Unlock()
	b.released = true
}

func (n *naive) Name() string       { return "naive" }
func (n *naive) Info() backend.Info { return backend.Info{Kind: backend.KindCPU, Threads: 1} }
func (n *naive) Caps() backend.Caps {
	return backend.Caps{
		Staged: true, Fused: true, Bias: true, KeepMask: true,
		Causal: true, GQA: true, BNHD: true, LSE: true, Variants: true,
		Half: true, Seqs: true, FlushesSubnormals: n.ftz, MaxBufferLen: 1 << 24,
	}
}

func (n *naive) Alloc(t backend.DType, size int) (backend.Buffer, error) {
	n.mu.RLock()
	defer n.mu.RUnlock()
	switch {
	case n.closed:
		return nil, backend.Errorf(backend.ErrReleased, "naive: backend is closed")
	case size < 0 || !t.Valid():
		return nil, backend.Errorf(backend.ErrShape, "naive: Alloc(%v, %d)", t, size)
	case size > n.Caps().MaxBufferLen:
		return nil, backend.Errorf(backend.ErrTooLarge, "naive: Alloc(%d) > %d", size, n.Caps().MaxBufferLen)
	case t.Half():
		return &naiveBuf{owner: n, dtype: t, bits: make([]uint16, size)}, nil
	}
	return &naiveBuf{owner: n, dtype: t, data: make([]float32, size)}, nil
}

// resolve checks that every non-nil buffer is ours and alive. It runs
// before the size checks, so a released buffer is reported as released.
func (n *naive) resolve(bufs ...backend.Buffer) error {
	if n.closed {
		return backend.Errorf(backend.ErrReleased, "naive: backend is closed")
	}
	for _, b := range bufs {
		if b == nil {
			continue
		}
		nb, ok := b.(*naiveBuf)
		if !ok || nb.owner != n {
			return backend.Errorf(backend.ErrForeignBuffer, "naive: %T", b)
		}
		if nb.released {
			return backend.Errorf(backend.ErrReleased, "naive: buffer used after Release")
		}
	}
	return nil
}

func data(b backend.Buffer) []float32 { return b.(*naiveBuf).data }

func (n *naive) Write(dst backend.Buffer, off int, src []float32) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if err := n.resolve(dst); err != nil {
		return err
	}
	if err := backend.CheckBuffer("dst", dst, 0); err != nil {
		return err
	}
	if off < 0 || off > dst.Len() || len(src) > dst.Len()-off {
		return backend.Errorf(backend.ErrShape, "naive: Write of %d at %d into %d", len(src), off, dst.Len())
	}
	b := dst.(*naiveBuf)
	if !b.dtype.Half() {
		copy(b.data[off:], src)
		return nil
	}
	if err := b.dtype.CheckFits("src", off, src); err != nil {
		return err
	}
	for i, x := range src {
		b.bits[off+i] = n.encode(b.dtype, x)
	}
	return nil
}

func (n *naive) Read(dst []float32, src backend.Buffer, off int) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if err := n.resolve(src); err != nil {
		return err
	}
	if err := backend.CheckBuffer("src", src, 0); err != nil {
		return err
	}
	if off < 0 || off > src.Len() || len(dst) > src.Len()-off {
		return backend.Errorf(backend.ErrShape, "naive: Read of %d at %d from %d", len(dst), off, src.Len())
	}
	copy(dst, load(src, off+len(dst))[off:])
	return nil
}

// WriteBits and ReadBits move a half buffer's bits; a Float32 buffer is
// ErrShape.
func (n *naive) WriteBits(dst backend.Buffer, off int, src []uint16) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if err := n.resolve(dst); err != nil {
		return err
	}
	if err := backend.CheckBuffer("dst", dst, 0); err != nil {
		return err
	}
	if err := backend.CheckDType("dst", dst, backend.Float16, backend.BFloat16); err != nil {
		return err
	}
	if off < 0 || off > dst.Len() || len(src) > dst.Len()-off {
		return backend.Errorf(backend.ErrShape, "naive: WriteBits of %d at %d into %d", len(src), off, dst.Len())
	}
	copy(dst.(*naiveBuf).bits[off:], src)
	return nil
}

func (n *naive) ReadBits(dst []uint16, src backend.Buffer, off int) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if err := n.resolve(src); err != nil {
		return err
	}
	if err := backend.CheckBuffer("src", src, 0); err != nil {
		return err
	}
	if err := backend.CheckDType("src", src, backend.Float16, backend.BFloat16); err != nil {
		return err
	}
	if off < 0 || off > src.Len() || len(dst) > src.Len()-off {
		return backend.Errorf(backend.ErrShape, "naive: ReadBits of %d at %d from %d", len(dst), off, src.Len())
	}
	copy(dst, src.(*naiveBuf).bits[off:])
	return nil
}

// hostCase gathers the operands of an op into a Case; nil buffers give
// zero operands of the right length.
func hostCase(p backend.Problem, q, k, v backend.Buffer, bias, keep *backend.Mask) Case {
	c := Case{Problem: p}
	get := func(b backend.Buffer, n int) []float32 {
		if b == nil {
			return make([]float32, n)
		}
		return operand(b, n)
	}
	c.Q, c.K, c.V = get(q, p.QLen()), get(k, p.KLen()), get(v, p.VLen())
	mask := func(m *backend.Mask) *HostMask {
		if m == nil {
			return nil
		}
		return &HostMask{Shape: m.Shape, Data: operand(m.Buf, m.Len())}
	}
	c.Bias, c.Keep = mask(bias), mask(keep)
	return c
}

func (n *naive) Scores(ctx context.Context, p backend.ScoresParams, q, k, s backend.Buffer) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if err := n.resolve(q, k, s, p.Bias.Buffer(), p.Keep.Buffer()); err != nil {
		return err
	}
	if err := p.DenseOnly("naive"); err != nil { // no Caps.Strides
		return err
	}
	if err := p.Validate(q, k, s); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("naive: %w", err)
	}
	w := Reference(hostCase(p.Problem, q, k, nil, p.Bias, p.Keep))
	scores := map[backend.ScoreStage][]float64{
		backend.StageRaw: w.Raw, backend.StageCapped: w.Capped,
		backend.StageBiased: w.Scores, backend.StageMasked: w.Masked,
	}[p.Stage]
	for i, x := range scores {
		data(s)[i] = float32(x)
	}
	return nil
}

func (n *naive) Softmax(ctx context.Context, p backend.SoftmaxParams, s backend.Buffer) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if err := n.resolve(s, p.LSE, p.Keep.Buffer()); err != nil {
		return err
	}
	if err := p.Validate(s); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("naive: %w", err)
	}
	sd := data(s)
	var keep *HostMask
	if p.Keep != nil && n.fault != ignoresKeep {
		keep = &HostMask{Shape: p.Keep.Shape, Data: data(p.Keep.Buf)}
	}
	forRows(p.Problem, func(b, h, i, row int) {
		x := sd[row*p.Nk : (row+1)*p.Nk]
		lo, hi := n.keyRange(p.Problem, b, i)
		seen := func(j int) bool {
			return j >= lo && j < hi && !math.IsInf(float64(x[j]), -1) && (keep == nil || keep.at(b, h, i, j) != 0)
		}
		m := math.Inf(-1)
		for j := range x {
			if seen(j) {
				m = max(m, float64(x[j]))
			}
		}
		sum := 0.0
		if p.Sinks != nil {
			m = max(m, float64(p.Sinks[h]))
			sum = math.Exp(float64(p.Sinks[h]) - m)
		}
		e := make([]float64, len(x))
		for j := range x {
			if seen(j) {
				e[j] = math.Exp(float64(x[j]) - m)
				sum += e[j]
			}
		}
		for j := range x {
			x[j] = float32(e[j] / sum)
			if sum == 0 && n.fault != nanRows {
				x[j] = 0
			}
		}
		if p.LSE != nil {
			data(p.LSE)[row] = float32(m + math.Log(sum))
			if sum == 0 {
				data(p.LSE)[row] = float32(math.Inf(-1))
			}
		}
	})
	return nil
}

func (n *naive) keyRange(p backend.Problem, b, i int) (lo, hi int) {
	if n.fault == topLeftCausal && p.Causal {
		return 0, min(i+1, p.Nk)
	}
	return p.KeyRange(b, i)
}

func (n *naive) Context(ctx context.Context, p backend.ContextParams, pm, v, o backend.Buffer) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if err := n.resolve(pm, v, o); err != nil {
		return err
	}
	if err := p.DenseOnly("naive"); err != nil { // no Caps.Strides
		return err
	}
	if err := p.Validate(pm, v, o); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("naive: %w", err)
	}
	vs, os := p.VStrides(), p.OStrides()
	vd := operand(v, p.VLen())
	forRows(p.Problem, func(b, h, i, row int) {
		for d := range p.Dv {
			sum := 0.0
			for j := range p.Nk {
				sum += float64(data(pm)[row*p.Nk+j]) * float64(vd[vs.Offset(b, h/p.Group(), j)+d])
			}
			n.store(o, os.Offset(b, h, i)+d, float32(sum))
		}
	})
	return nil
}

func (n *naive) Fused(ctx context.Context, p backend.FusedParams, q, k, v, o, lse backend.Buffer) error {
	n.mu.RLock()
	defer n.mu.RUnlock()
	if err := n.resolve(q, k, v, o, lse, p.Bias.Buffer(), p.Keep.Buffer()); err != nil {
		return err
	}
	if err := p.DenseOnly("naive"); err != nil { // no Caps.Strides
		return err
	}
	if err := p.Validate(n.Caps(), q, k, v, o, lse); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("naive: %w", err)
	}
	c := hostCase(p.Problem, q, k, v, p.Bias, p.Keep)
	if n.fault == wrongKVHead && p.KVHeads < p.H {
		return n.wrongKVHead(c, o)
	}
	if n.fault == float32Math {
		out := make([]float32, p.OLen())
		fused32(c, out, lse)
		for i, x := range out {
			n.store(o, i, x)
		}
		return nil
	}
	w := Reference(c)
	for i, x := range w.O {
		if n.fault == sloppy {
			x += 1e-3
		}
		n.store(o, i, float32(x))
	}
	if lse != nil {
		for i, x := range w.LSE {
			data(lse)[i] = float32(x)
		}
	}
	switch n.fault {
	case touchesInput:
		if len(c.Q) > 0 {
			n.store(q, 0, c.Q[0]+1)
		}
	case writesPast:
		if o.Len() > len(w.O) {
			n.store(o, len(w.O), 0)
		}
	}
	return nil
}

// wrongKVHead computes each query head against KV head h % KVHeads by
// regrouping the heads: a head-by-head reference with the wrong mapping.
func (n *naive) wrongKVHead(c Case, o backend.Buffer) error {
	p := c.Problem
	for h := range p.H {
		one := c
		one.H, one.KVHeads = 1, 1
		one.Layout = backend.BHND
		one.Q = pick(p, p.QStrides(), c.Q, h, p.Nq, p.D)
		one.K = pick(p, p.KStrides(), c.K, h%p.KVHeads, p.Nk, p.D)
		one.V = pick(p, p.VStrides(), c.V, h%p.KVHeads, p.Nk, p.Dv)
		one.Bias, one.Keep = nil, nil
		w := Reference(one)
		os := p.OStrides()
		for b := range p.B {
			for i := range p.Nq {
				for d := range p.Dv {
					n.store(o, os.Offset(b, h, i)+d, float32(w.O[(b*p.Nq+i)*p.Dv+d]))
				}
			}
		}
	}
	return nil
}

// pick copies head h of a tensor into a [B, 1, rows, dim] tensor.
func pick(p backend.Problem, s backend.Strides, x []float32, h, rows, dim int) []float32 {
	var out []float32
	for b := range p.B {
		for i := range rows {
			out = append(out, x[s.Offset(b, h, i):s.Offset(b, h, i)+dim]...)
		}
	}
	return out
}

// fused32 is attention in float32 with plain sequential sums, the
// accuracy a straightforward backend gets, to show Tol leaves it room.
// It takes no masks.
func fused32(c Case, o []float32, lse backend.Buffer) {
	p := c.Problem
	qs, ks, vs, os := p.QStrides(), p.KStrides(), p.VStrides(), p.OStrides()
	s := make([]float32, p.Nk)
	forRows(p, func(b, h, i, row int) {
		kvh := h / p.Group()
		m := float32(math.Inf(-1))
		for j := range p.Nk {
			var dot float32
			for d := range p.D {
				dot += c.Q[qs.Offset(b, h, i)+d] * c.K[ks.Offset(b, kvh, j)+d]
			}
			s[j] = p.Scale * dot
			m = max(m, s[j])
		}
		var sum float32
		out := o[os.Offset(b, h, i):][:p.Dv]
		clear(out)
		for j := range p.Nk {
			e := float32(math.Exp(float64(s[j] - m)))
			sum += e
			for d := range p.Dv {
				out[d] += e * c.V[vs.Offset(b, kvh, j)+d]
			}
		}
		for d := range out {
			out[d] /= sum
		}
		if lse != nil {
			data(lse)[row] = m + float32(math.Log(float64(sum)))
		}
	})
}

func (n *naive) Sync() error { return nil }

func (n *naive) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.closed = true
	return nil
}

var _ backend.Backend = (*naive)(nil)

// TestNaive runs the whole suite on the naive backend, which must pass.
func TestNaive(t *testing.T) {
	Run(t, func(testing.TB) backend.Backend { return &naive{} })
}

// TestTolFloat32 shows that plain float32 arithmetic over long rows and
// wide heads passes the suite's tolerance.
func TestTolFloat32(t *testing.T) {
	be := &naive{fault: float32Math}
	for _, sp := range []spec{
		{p: scaled(prob(1, 2, 1, 16, 3000, 128, 128), 1)},
		{p: prob(1, 2, 2, 16, 4000, 128, 64)},
		{p: scaled(prob(1, 1, 1, 8, 2000, 128, 128), 0.3)},
	} {
		c := sp.build()
		if err := RunFused(context.Background(), be, c, true); err != nil {
			t.Error(err)
		}
	}
}

// TestFaults shows that each deliberate bug fails the runner.
func TestFaults(t *testing.T) {
	ctx := context.Background()
	for _, f := range []struct {
		name  string
		fault fault
		spec  spec
	}{
		{"topLeftCausal", topLeftCausal, spec{p: causal(prob(1, 2, 2, 3, 7, 8, 8))}},
		{"nanRows", nanRows, spec{p: causal(prob(1, 2, 2, 9, 3, 8, 8))}},
		{"touchesInput", touchesInput, spec{p: prob(1, 2, 2, 3, 7, 8, 8)}},
		{"writesPast", writesPast, spec{p: prob(1, 2, 2, 3, 7, 8, 8)}},
		{"wrongKVHead", wrongKVHead, spec{p: prob(1, 4, 2, 3, 7, 8, 8)}},
		{"sloppy", sloppy, spec{p: prob(1, 2, 2, 3, 7, 8, 8)}},
		{"ignoresKeep", ignoresKeep, spec{p: prob(1, 2, 2, 3, 7, 8, 8), keep: shape(1, 2, 3, 7)}},
	} {
		t.Run(f.name, func(t *testing.T) {
			be := &naive{fault: f.fault}
			c := f.spec.build()
			errF := RunFused(ctx, be, c, true)
			errS := RunStaged(ctx, be, c, true)
			if errF == nil && errS == nil {
				t.Fatalf("%v passed with fault %s", c, f.name)
			}
			t.Logf("fused: %v\nstaged: %v", errF, errS)
		})
	}
}

// TestHalfFaults shows that each deliberate bug of the half contract
// fails the suite: halves truncated fail the buffer checks (and bfloat16
// outputs), an infinity for an overflowing output fails the saturation
// cases, float16 outputs rounded as coarsely as bfloat16 fail Allowed's
// float16 bound, and subnormals flushed to zero fail the exact cases.
func TestHalfFaults(t *testing.T) {
	ctx := context.Background()
	sat := saturateSpecs()[0]
	f16Out := spec{p: prob(1, 2, 2, 33, 65, 40, 24), dt: DTypes{O: f16}}
	// bfloat16 outputs of float32 inputs: with Q, K and V all bfloat16
	// the contract allows BF16Slack more, which hides a truncation.
	bf16Out := spec{p: prob(1, 2, 2, 33, 65, 40, 24), dt: DTypes{O: bf16, Bias: bf16}}
	for _, f := range []struct {
		name   string
		fault  fault
		buffer string // a halfBufferChecks entry that must fail, or ""
		specs  []spec // cases of which one must fail, fused or staged
	}{
		{"truncatesHalves", truncatesHalves, "WriteRounds", []spec{bf16Out}},
		{"infOnOverflow", infOnOverflow, "", []spec{sat}},
		{"coarseF16", coarseF16, "", []spec{f16Out}},
	} {
		t.Run(f.name, func(t *testing.T) {
			be := &naive{fault: f.fault}
			for _, c := range halfBufferChecks {
				if c.name != f.buffer {
					continue
				}
				if err := c.check(be, be.Caps(), f16); err == nil {
					t.Errorf("the %s check passed with fault %s", c.name, f.name)
				} else {
					t.Logf("%s: %v", c.name, err)
				}
			}
			for _, sp := range f.specs {
				c := sp.build()
				errF := RunFused(ctx, be, c, true)
				errS := RunStaged(ctx, be, c, true)
				if errF == nil || errS == nil {
					t.Errorf("%v passed with fault %s: fused %v, staged %v", c, f.name, errF, errS)
				}
				t.Logf("fused: %v\nstaged: %v", errF, errS)
			}
		})
	}
	// The exact cases catch the output faults too, and ops that flush
	// subnormal halves to zero.
	for _, f := range []fault{infOnOverflow, coarseF16, flushesSubnormals} {
		be := &naive{fault: f}
		failed := false
		for _, c := range exactCases() {
			failed = failed || c.run(be, be.Caps()) != nil
		}
		if !failed {
			t.Errorf("every exact case passed with fault %d", f)
		}
	}
	// A backend that claims FlushesSubnormals passes them while it
	// flushes only float32's subnormals, and still fails them when it
	// flushes float16's, which are normal float32 values.
	for _, be := range []*naive{{ftz: true}, {ftz: true, fault: flushesSubnormals}} {
		var errs []error
		for _, c := range exactCases() {
			if err := c.run(be, be.Caps()); err != nil {
				errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
			}
		}
		switch {
		case be.fault == noFault && len(errs) > 0:
			t.Errorf("flushing float32 subnormals under FlushesSubnormals failed the exact cases: %v", errors.Join(errs...))
		case be.fault != noFault && len(errs) == 0:
			t.Error("every exact case passed with float16 subnormals flushed under FlushesSubnormals")
		}
	}
}
