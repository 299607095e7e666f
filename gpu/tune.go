//go:build (cgo || gogpu) && !nogpu

package gpu

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/gpu/internal/plan"
)

// Tune sweeps the hardware plan's kernel sizes (the knobs of
// ATTN_GPU_TUNE) on this host's adapter, the one New opens, and writes
// the sizes that won to the tuning file, which New then reads: its path
// is returned. It stops within budget (a kernel's compile under way when
// it runs out, which cannot be stopped, ends first), writing what it has
// confirmed by then, and writes its progress and its report of the defaults against
// the winners to progress (nil discards them).
//
// shapes names the problems it times (a spec a shape, the syntax of
// attn tune's -shape): "decode" and "prefill" are default sets (the two
// when shapes is empty), or comma-separated name=value pairs of heads,
// kvheads, d, dv, n (keys), nq (queries) and dtype (f32, f16, bf16, q8,
// fp8, q4), e.g. "heads=32,kvheads=8,d=128,n=8192,nq=1,dtype=q8". A bad
// spec is an error wrapping backend.ErrShape.
//
// The shapes fall into classes, by the kernel the defaults run them with
// and their sizes (docs/gpu.md, "attn tune"). Each class's kernel's
// knobs are swept one at a time from the defaults, each over the powers
// of two within a factor of four of its value, and every candidate's
// answer at every shape of the class is checked against the CPU
// backend's before it is timed: a candidate that answers wrongly or
// fails is dropped and reported, never chosen. Candidates are timed in
// interleaved rounds, by the device's timestamps where it has them, else
// by the host's clock; a candidate replaces the best so far when 2%
// faster over the class's shapes, and the winner is kept only where a
// final race against the defaults finds it 2% faster over them and no
// more than 2% slower at any one.
//
// The CPU backend must be linked in (import _
// "github.com/attn-go/attn/cpu"); the error wraps
// backend.ErrUnavailable when it is not, when no adapter opens, when the
// adapter runs the CPU plan (lavapipe: ATTN_GPU_PLAN=hardware tunes the
// hardware plan there), when ATTN_GPU_TUNE sets sizes, and when
// ATTN_GPU_TUNE_FILE is off. Cancelling ctx stops the sweep without
// writing.
func Tune(ctx context.Context, budget time.Duration, progress io.Writer, shapes ...string) (file string, err error) {
	r, err := tune(ctx, tuneConfig{budget: budget, out: progress, shapes: shapes})
	return r.file, err
}

// tuneConfig is a sweep's settings: Tune's, and what tests set.
type tuneConfig struct {
	budget time.Duration
	out    io.Writer
	shapes []string
	// file is the path written, "" for ATTN_GPU_TUNE_FILE's or the
	// cache directory's (tuneFilePath).
	file string
	// knobs are the knobs swept, nil for every knob of each kernel.
	knobs []string
	// fake, when set, makes the candidates it says wrong answer wrongly
	// at a shape and scales their times there by what it returns: a
	// test's way to make a wrong candidate the fastest.
	fake func(plan.TuneShape, plan.Tuning) (wrong bool, scale float64)
	// rounds, when set, is every race's rounds, whatever the budget
	// left: a test's sweep then takes the same time on any host.
	rounds int
}

const (
	// tuneRounds and tuneMaxRounds bound the interleaved rounds of a
	// race: at least the first, however short its share of the budget,
	// since a median of fewer runs is the noise's; at most the second,
	// however long, so that a share left over goes to later knobs.
	tuneRounds    = 5
	tuneMaxRounds = 25
	// tuneMargin is how much faster a candidate must be to replace the
	// best so far, and how much slower than the defaults at one shape a
	// winner may be: less is within a device's run-to-run noise.
	tuneMargin = 0.02
	// tuneTol is the error a candidate's output may have against the
	// CPU backend's, relative to the row's largest magnitude (at least
	// 1): both are float32 sums of the same stored values, orders of
	// magnitude closer than this; a kernel that drops or repeats a key
	// is orders of magnitude farther.
	tuneTol = 1e-3
	// tuneFinal is the share of a class's budget kept for the winner's
	// race against the defaults.
	tuneFinal = 0.2
)

// tuneResult is what a sweep did: the file written and each class.
type tuneResult struct {
	file    string
	device  bool // timed by the device's timestamps
	classes []*tuneClass
}

// tuneClass is one class's sweep.
type tuneClass struct {
	class plan.Class
	cases []*tuneCase
	best  plan.Tuning // the winner so far: the defaults until a candidate beats them
	tuned bool        // best beat the defaults in the final race: it is written
	// kept says the sweep went through every knob and the defaults
	// stay: the file says so, so that a reader knows the class was
	// measured.
	kept    bool
	left    []string // the knobs the budget left unswept
	dropped []string // the candidates dropped, each with why
	// The final race's medians, summed over the cases.
	defT, bestT time.Duration
	note        string // why the class kept the defaults, where it did
	// checkT is how long checking the defaults took, then the longest
	// check of a candidate: what checking the next may take, its
	// kernels compiled afresh.
	checkT time.Duration
}

// tuneCase is one shape of a class, on the device, with the CPU
// backend's answer.
type tuneCase struct {
	shape      plan.TuneShape
	p          backend.FusedParams
	fs         plan.FusedShape
	q, k, v, o backend.Buffer
	ref, got   []float32
	slack      float64 // bfloat16 arithmetic's allowance (backendtest.BF16Slack)
}

func (c *tuneCase) release() {
	for _, x := range []backend.Buffer{c.q, c.k, c.v, c.o} {
		if x != nil {
			x.Release()
		}
	}
}

// tuner is a sweep under way.
type tuner struct {
	cfg    tuneConfig
	b      *Backend
	mem    int
	device bool
	start  time.Time
	out    io.Writer
	err    error // the first write to out that failed
}

func (tn *tuner) printf(format string, args ...any) {
	if tn.err == nil {
		_, tn.err = fmt.Fprintf(tn.out, format, args...)
	}
}

// stamp is the time since the sweep began, for its progress lines.
func (tn *tuner) stamp() string {
	return fmt.Sprintf("[%6.1fs]", time.Since(tn.start).Seconds())
}

func tune(ctx context.Context, cfg tuneConfig) (res tuneResult, err error) {
	start := time.Now()
	if cfg.budget <= 0 {
		return res, backend.Errorf(backend.ErrShape, "gpu: tune: budget %v: want a positive duration", cfg.budget)
	}
	if cfg.out == nil {
		cfg.out = io.Discard
	}
	shapes, err := plan.ParseTuneShapes(cfg.shapes)
	if err != nil {
		return res, backend.Wrapf(err, "gpu: tune")
	}
	for _, k := range cfg.knobs {
		if _, ok := plan.DefaultTuning().Value(k); !ok {
			return res, backend.Errorf(backend.ErrShape, "gpu: tune: no knob %q", k)
		}
	}
	bctx, cancel := context.WithDeadline(ctx, start.Add(cfg.budget))
	defer cancel()

	ref, err := backend.Open("cpu")
	if err != nil {
		return res, backend.Errorf(backend.ErrUnavailable, "gpu: tune checks every candidate against the cpu backend, which did not open (import _ \"github.com/attn-go/attn/cpu\" links it): %v", err)
	}
	defer ref.Close()
	b, err := newBackend(false)
	if err != nil {
		return res, backend.Wrapf(err, "gpu: tune")
	}
	defer b.Close()
	switch {
	case b.target != nil:
		return res, backend.Errorf(backend.ErrUnavailable, "gpu: tune: ATTN_GPU_TARGET=%s plans for another device and dispatches nothing: there is nothing to time (unset it)", b.target.Name)
	case !b.aplan.Hardware:
		return res, backend.Errorf(backend.ErrUnavailable, "gpu: tune: %s runs the cpu plan, which has no tunable sizes (ATTN_GPU_PLAN=hardware sweeps the hardware plan's)", b.info.Adapter.Name)
	case b.envTune != plan.DefaultTuning():
		return res, backend.Errorf(backend.ErrUnavailable, "gpu: tune: ATTN_GPU_TUNE sets %s; a sweep starts from the defaults (unset it)", b.envTune)
	}
	res.file = cfg.file
	if res.file == "" {
		path, _, err := tuneFilePath(b.tuneKey())
		if err != nil {
			return res, backend.Wrapf(err, "gpu: tune")
		}
		if path == "" {
			return res, backend.Errorf(backend.ErrUnavailable, "gpu: tune: %s=off leaves the tuning file nowhere to go", envTuneFile)
		}
		res.file = path
	}

	tn := &tuner{cfg: cfg, b: b, mem: int(b.lim.MaxComputeWorkgroupStorageSize), start: start, out: cfg.out}
	tn.device = b.TimeDevice(true) == nil
	defer b.TimeDevice(false)
	res.device = tn.device
	timer := "the host's clock (the device has no timestamps)"
	if tn.device {
		timer = "device timestamps"
	}
	tn.printf("attn tune: %s, hardware plan, timed by %s, budget %v, %d shapes\n", b.info.Adapter.Name, timer, cfg.budget, len(shapes))

	byClass := map[plan.Class]*tuneClass{}
	defer func() {
		for _, cl := range res.classes {
			for _, c := range cl.cases {
				c.release()
			}
		}
	}()
	for i, s := range shapes {
		c, err := newTuneCase(bctx, b, ref, s, uint64(i))
		if err != nil {
			if bctx.Err() != nil && ctx.Err() == nil {
				err = fmt.Errorf("the budget was spent before the shapes were set up (%v): %w", cfg.budget, err)
			}
			return res, backend.Wrapf(err, "gpu: tune: %v", s)
		}
		tn.printf("%s %v: set up, the cpu backend's answer computed\n", tn.stamp(), s)
		k := b.choices.get(choiceKey{b.aplan, tn.mem, c.fs})
		cls := plan.ClassOf(k, c.fs)
		if len(plan.KnobsFor(cls.Kernel)) == 0 {
			c.release()
			what := "no fused kernel fits it"
			if k != nil {
				what = "it runs " + cls.Kernel + ", which has no knobs"
			}
			tn.printf("%s %v: not tuned: %s\n", tn.stamp(), s, what)
			continue
		}
		cl := byClass[cls]
		if cl == nil {
			cl = &tuneClass{class: cls, best: plan.DefaultTuning()}
			byClass[cls] = cl
			res.classes = append(res.classes, cl)
		}
		cl.cases = append(cl.cases, c)
	}
	var lastCheck time.Duration // the last class's check of the defaults
	for i, cl := range res.classes {
		if bctx.Err() != nil || time.Now().Add(lastCheck).After(start.Add(cfg.budget)) {
			cl.note = "the budget was spent before this class"
			continue
		}
		// Each class gets an equal share of what is left, so that one
		// that ends early leaves its time to the rest.
		left := time.Until(start.Add(cfg.budget))
		until := time.Now().Add(left / time.Duration(len(res.classes)-i))
		tn.sweep(bctx, cl, until)
		lastCheck = cl.checkT
	}
	if err := ctx.Err(); err != nil {
		return res, backend.Wrapf(err, "gpu: tune: stopped before writing %s", res.file)
	}
	tn.report(res)
	if err := writeTuned(res.file, b.tuneKey(), res, tn.device); err != nil {
		return res, backend.Wrapf(err, "gpu: tune: writing the tuning file")
	}
	tn.printf("wrote %s (%d of %d classes tuned) in %.1fs\n", res.file, countTuned(res), len(res.classes), time.Since(start).Seconds())
	return res, tn.err
}

func countTuned(res tuneResult) int {
	n := 0
	for _, cl := range res.classes {
		if cl.tuned {
			n++
		}
	}
	return n
}

// newTuneCase sets shape s up on b: random inputs (fixed seed), stored
// in s's dtypes on b and on the reference backend ref, which computes
// the answer every candidate's is checked against.
func newTuneCase(ctx context.Context, b *Backend, ref backend.Backend, s plan.TuneShape, seed uint64) (*tuneCase, error) {
	p := s.Problem()
	// A q8 or q4 K or V stores its rows in whole blocks, as a cache
	// does, the values past the head dim zeros (backend.DType.Pitch),
	// and the kernels run the problem whose head dims are the pitches
	// (backend.Problem.Pitched): its class is the one tuned.
	c := &tuneCase{shape: s, p: backend.FusedParams{Problem: p}, fs: plan.ShapeOf(p.Pitched(s.DType, s.DType))}
	// A 64-bit LCG's high bits, uniform in [-1, 1): a decoding shape's
	// K and V are tens of millions of values, which math/rand's
	// generators take seconds to draw.
	state := 0x7475_6e65 + seed*0x9e37_79b9_7f4a_7c15
	fill := func(n int) []float32 {
		x := make([]float32, n)
		for i := range x {
			state = state*6364136223846793005 + 1442695040888963407
			x[i] = float32(int32(state>>32)) * 0x1p-31
		}
		return x
	}
	q, k, v := fill(p.QLen()), s.DType.PitchRows(fill(p.KLen()), p.D), s.DType.PitchRows(fill(p.VLen()), p.Dv)
	if s.DType == backend.BFloat16 {
		// Either backend may multiply bfloat16 operands in bfloat16
		// (backend's contract): each output may move by 2⁻⁸·max|V|.
		c.slack = 2 * 0x1p-8
	}
	dts := []backend.DType{s.QDType(), s.DType, s.DType, backend.Float32}
	upload := func(be backend.Backend) ([]backend.Buffer, error) {
		var bufs []backend.Buffer
		for i, x := range [][]float32{q, k, v, make([]float32, p.OLen())} {
			buf, err := be.Alloc(dts[i], len(x))
			if err == nil {
				err = be.Write(buf, 0, x)
			}
			if err != nil {
				for _, b := range bufs {
					b.Release()
				}
				if buf != nil {
					buf.Release()
				}
				return nil, err
			}
			bufs = append(bufs, buf)
		}
		return bufs, nil
	}
	rb, err := upload(ref)
	if err != nil {
		return nil, err
	}
	defer func() {
		for _, x := range rb {
			x.Release()
		}
	}()
	if err := ref.Fused(ctx, c.p, rb[0], rb[1], rb[2], rb[3], nil); err != nil {
		return nil, err
	}
	c.ref, c.got = make([]float32, p.OLen()), make([]float32, p.OLen())
	if err := ref.Read(c.ref, rb[3], 0); err != nil {
		return nil, err
	}
	gb, err := upload(b)
	if err != nil {
		return nil, err
	}
	c.q, c.k, c.v, c.o = gb[0], gb[1], gb[2], gb[3]
	return c, nil
}

// setTune makes b's plan the candidate t's.
func (b *Backend) setTune(t plan.Tuning) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.aplan = b.aplan.WithTune(t)
}

// run runs case c under sizes t once and returns its time: the device's
// where it has timestamps, else the host's from the call to the end of
// the device's work.
func (tn *tuner) run(ctx context.Context, t plan.Tuning, c *tuneCase) (time.Duration, error) {
	b := tn.b
	b.setTune(t)
	start := time.Now()
	err := b.Fused(ctx, c.p, c.q, c.k, c.v, c.o, nil)
	var d time.Duration
	switch {
	case tn.device:
		// Read even after an error: the next run's count starts afresh.
		x, derr := b.DeviceTime()
		d, err = x, cmpErr(err, derr)
	case err == nil:
		err = b.Sync()
		d = time.Since(start)
	}
	if err != nil {
		return 0, err
	}
	if tn.cfg.fake != nil {
		if _, scale := tn.cfg.fake(c.shape, t); scale > 0 {
			d = time.Duration(float64(d) * scale)
		}
	}
	return d, nil
}

// cmpErr is the first of two errors that is not nil.
func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// check runs case c under t and compares its output with the CPU
// backend's: nil when every row is within tuneTol (and bfloat16's
// slack), else what is wrong, naming the row.
func (tn *tuner) check(ctx context.Context, t plan.Tuning, c *tuneCase) error {
	if _, err := tn.run(ctx, t, c); err != nil {
		return err
	}
	if err := tn.b.Read(c.got, c.o, 0); err != nil {
		return err
	}
	if tn.cfg.fake != nil {
		if wrong, _ := tn.cfg.fake(c.shape, t); wrong {
			c.got[len(c.got)/2] += 1
		}
	}
	return compareRows(c.got, c.ref, c.p.Dv, c.slack)
}

// compareRows checks got against want, rows of dv values: each within
// tuneTol of the row's largest magnitude (at least 1) plus slack.
func compareRows(got, want []float32, dv int, slack float64) error {
	for r := 0; r+dv <= len(want); r += dv {
		g, w := got[r:r+dv], want[r:r+dv]
		scale := 1.0
		for _, x := range w {
			scale = max(scale, math.Abs(float64(x)))
		}
		for i := range w {
			diff := math.Abs(float64(g[i]) - float64(w[i]))
			if !(diff <= tuneTol*scale+slack) { // NaN too
				return fmt.Errorf("wrong answer: output row %d, column %d is %g, the cpu backend's %g", r/dv, i, g[i], w[i])
			}
		}
	}
	return nil
}

// fingerprints is what sizes t decide for each case of cl (the kernel
// must stay cl's: another kernel is another class's business).
func (tn *tuner) fingerprints(cl *tuneClass, t plan.Tuning) ([]string, bool) {
	a := tn.b.aplan.WithTune(t)
	fps := make([]string, len(cl.cases))
	for i, c := range cl.cases {
		k, fp := a.Fingerprint(tn.mem, c.fs)
		if k != cl.class.Kernel {
			return nil, false
		}
		fps[i] = fp
	}
	return fps, true
}

// sweep tunes class cl until the time until: the defaults checked, then
// each knob in turn, then the winner against the defaults.
func (tn *tuner) sweep(ctx context.Context, cl *tuneClass, until time.Time) {
	var dts []string
	for _, c := range cl.cases {
		dts = append(dts, fmt.Sprintf("n=%d %v", c.shape.N, c.shape.DType))
	}
	tn.printf("%s %v: %s\n", tn.stamp(), cl.class, strings.Join(dts, ", "))
	def := plan.DefaultTuning()
	t0 := time.Now()
	for _, c := range cl.cases {
		if err := tn.check(ctx, def, c); err != nil {
			if ctx.Err() != nil {
				cl.note = fmt.Sprintf("the budget was spent checking the defaults' answers, in %.1fs", time.Since(t0).Seconds())
			} else {
				cl.note = fmt.Sprintf("the defaults fail at %v: %v; not tuned", c.shape, err)
			}
			tn.printf("%s   %s\n", tn.stamp(), cl.note)
			return
		}
	}
	cl.checkT = time.Since(t0)
	tn.printf("%s   the defaults' answers checked in %.1fs\n", tn.stamp(), cl.checkT.Seconds())
	var knobs []plan.KnobInfo
	for _, k := range plan.KnobsFor(cl.class.Kernel) {
		if tn.cfg.knobs == nil || slices.Contains(tn.cfg.knobs, k.Name) {
			knobs = append(knobs, k)
		}
	}
	knobsUntil := until.Add(-time.Duration(tuneFinal * float64(time.Until(until))))
	for i, k := range knobs {
		if ctx.Err() != nil || !time.Now().Before(knobsUntil) {
			for _, k := range knobs[i:] {
				cl.left = append(cl.left, k.Name)
			}
			break
		}
		share := time.Until(knobsUntil) / time.Duration(len(knobs)-i)
		if !tn.sweepKnob(ctx, cl, k, time.Now().Add(share)) {
			for _, k := range knobs[i:] {
				cl.left = append(cl.left, k.Name)
			}
			break
		}
	}
	if len(cl.left) > 0 {
		tn.printf("%s   the budget left %s unswept\n", tn.stamp(), strings.Join(cl.left, ", "))
	}
	if cl.best == def {
		cl.note = "no candidate beat the defaults"
		cl.kept = len(cl.left) == 0
		return
	}
	// Where the winner loses to the defaults, they stay; measured over
	// every knob, the file says so.
	defer func() {
		if !cl.tuned && ctx.Err() == nil {
			cl.best, cl.kept = def, len(cl.left) == 0
		}
	}()
	meds, ok := tn.race(ctx, cl, []plan.Tuning{def, cl.best}, until)
	if !ok {
		cl.note = fmt.Sprintf("the budget was spent before %s raced the defaults", cl.best)
		return
	}
	for i, c := range cl.cases {
		if float64(meds[1][i]) > (1+tuneMargin)*float64(meds[0][i]) {
			cl.note = fmt.Sprintf("%s took %.2f× the defaults' time at %v (%v against %v)", cl.best, float64(meds[1][i])/float64(meds[0][i]), c.shape, meds[1][i], meds[0][i])
			return
		}
		cl.defT += meds[0][i]
		cl.bestT += meds[1][i]
	}
	if geoRatio(meds[1], meds[0]) >= 1-tuneMargin {
		cl.note = fmt.Sprintf("%s took %.2f× the defaults' time, within %.0f%%", cl.best, geoRatio(meds[1], meds[0]), 100*tuneMargin)
		return
	}
	cl.tuned = true
}

// sweepKnob times knob k's neighbours of the best value so far against
// it, on every case of cl, until the time until; false when the budget
// ran out before the race was run.
func (tn *tuner) sweepKnob(ctx context.Context, cl *tuneClass, k plan.KnobInfo, until time.Time) bool {
	cur := cl.best
	v, _ := cur.Value(k.Name)
	curFP, _ := tn.fingerprints(cl, cur)
	seen := [][]string{curFP}
	cands := []plan.Tuning{cur}
	var notes []string
	for _, x := range plan.Neighbours(k, v) {
		t, err := cur.With(k.Name, x)
		if err != nil {
			continue
		}
		if _, refused := tn.b.aplan.Fit(t, tn.b.bounds()); len(refused) > 0 {
			// What New would refuse, a file must not set.
			notes = append(notes, fmt.Sprintf("%d refused: %s", x, plan.JoinRefusals(refused)))
			continue
		}
		fp, same := tn.fingerprints(cl, t)
		if !same {
			notes = append(notes, fmt.Sprintf("%d another kernel", x))
			continue
		}
		if slices.ContainsFunc(seen, func(s []string) bool { return slices.Equal(s, fp) }) {
			continue // the dispatches of a size already in the race
		}
		seen = append(seen, fp)
		if dl, ok := ctx.Deadline(); ok && time.Now().Add(cl.checkT).After(dl) {
			// A kernel's compile cannot be stopped: one that would
			// run past the budget is not started.
			return false
		}
		t0 := time.Now()
		err = tn.checkAll(ctx, cl, t)
		// The longest check so far is what the next may take: a
		// candidate's kernels compile afresh, where the defaults' may
		// have come from the driver's cache.
		cl.checkT = max(cl.checkT, time.Since(t0))
		if err != nil {
			if ctx.Err() != nil {
				return false
			}
			cl.dropped = append(cl.dropped, fmt.Sprintf("%s=%d: %v", k.Name, x, err))
			notes = append(notes, fmt.Sprintf("%d dropped (%v)", x, err))
			continue
		}
		cands = append(cands, t)
	}
	if len(cands) == 1 {
		tn.printf("%s   %s=%d: no other size runs other dispatches here%s\n", tn.stamp(), k.Name, v, listNotes(notes))
		return true
	}
	meds, ok := tn.race(ctx, cl, cands, until)
	if !ok {
		return false
	}
	best, bestR := 0, 1.0
	var times []string
	for i, t := range cands {
		r := geoRatio(meds[i], meds[0])
		x, _ := t.Value(k.Name)
		times = append(times, fmt.Sprintf("%d %.2f×", x, r))
		if r < bestR {
			best, bestR = i, r
		}
	}
	if bestR < 1-tuneMargin {
		cl.best = cands[best]
	}
	x, _ := cl.best.Value(k.Name)
	tn.printf("%s   %s: %s → %d%s\n", tn.stamp(), k.Name, strings.Join(times, ", "), x, listNotes(notes))
	return true
}

func listNotes(notes []string) string {
	if len(notes) == 0 {
		return ""
	}
	return "; " + strings.Join(notes, "; ")
}

// checkAll checks t at every case of cl.
func (tn *tuner) checkAll(ctx context.Context, cl *tuneClass, t plan.Tuning) error {
	for _, c := range cl.cases {
		if err := tn.check(ctx, t, c); err != nil {
			if len(cl.cases) > 1 {
				return fmt.Errorf("%v: %w", c.shape, err)
			}
			return err
		}
	}
	return nil
}

// race times the candidates ts on every case of cl in interleaved
// rounds, each round running each candidate once a case, in an order
// that turns by one each round (so that no candidate always runs after
// the same one, whose clocks and caches it would inherit), until at
// least tuneRounds rounds are done and the time until has passed, or
// tuneMaxRounds are. It returns each candidate's median at each case;
// false when the budget ran out before tuneRounds rounds were done.
func (tn *tuner) race(ctx context.Context, cl *tuneClass, ts []plan.Tuning, until time.Time) ([][]time.Duration, bool) {
	times := make([][][]time.Duration, len(ts)) // candidate, case, round
	for i := range times {
		times[i] = make([][]time.Duration, len(cl.cases))
	}
	least, most := tuneRounds, tuneMaxRounds
	if tn.cfg.rounds > 0 {
		least, most = tn.cfg.rounds, tn.cfg.rounds
	}
rounds:
	for rounds := 0; rounds < most; rounds++ {
		if rounds >= least && !time.Now().Before(until) {
			break
		}
		for ci, c := range cl.cases {
			for j := range ts {
				i := (j + rounds) % len(ts)
				d, err := tn.run(ctx, ts[i], c)
				if err != nil {
					// A candidate that passed its check fails here
					// only for the budget: the rounds done stand if
					// they are enough.
					if rounds < least {
						return nil, false
					}
					break rounds
				}
				times[i][ci] = append(times[i][ci], d)
			}
		}
	}
	meds := make([][]time.Duration, len(ts))
	for i := range ts {
		meds[i] = make([]time.Duration, len(cl.cases))
		for ci := range cl.cases {
			meds[i][ci] = medianDur(times[i][ci])
		}
	}
	return meds, true
}

func medianDur(xs []time.Duration) time.Duration {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := len(xs)
	if n%2 == 0 {
		return (xs[n/2-1] + xs[n/2]) / 2
	}
	return xs[n/2]
}

// geoRatio is the geometric mean over the cases of a's time over b's:
// each shape counts alike, whatever its size.
func geoRatio(a, b []time.Duration) float64 {
	s := 0.0
	for i := range a {
		s += math.Log(float64(max(a[i], 1)) / float64(max(b[i], 1)))
	}
	return math.Exp(s / float64(len(a)))
}

// report prints each class's outcome: the winner and its time against
// the defaults', or why the defaults stay, and the candidates dropped.
func (tn *tuner) report(res tuneResult) {
	for _, cl := range res.classes {
		if cl.tuned {
			tn.printf("%v: %s, %.2f× the defaults' time (%v → %v, the medians summed over its shapes)\n",
				cl.class, cl.best, float64(cl.bestT)/float64(cl.defT), cl.defT, cl.bestT)
		} else {
			tn.printf("%v: the defaults stay: %s\n", cl.class, cl.note)
		}
		for _, d := range cl.dropped {
			tn.printf("  dropped %s\n", d)
		}
	}
}

// writeTuned writes the tuning file of res's classes for key to path
// (the winners, and the defaults where a whole sweep kept them), through a file beside it renamed into place, so that a process
// reading it sees the old file or the new one, never a part.
func writeTuned(path string, key plan.TuneKey, res tuneResult, device bool) error {
	f := plan.TuneFile{Format: plan.TuneFormat, Key: key, Writer: "attn " + plan.ModuleVersion(), Classes: []plan.TunedClass{}}
	timer := "wall"
	if device {
		timer = "device"
	}
	for _, cl := range res.classes {
		if !cl.tuned && !cl.kept {
			continue
		}
		var shapes []string
		for _, c := range cl.cases {
			shapes = append(shapes, c.shape.String())
		}
		e := plan.TunedClass{Class: cl.class, Tune: cl.best.String(), Shapes: shapes, Timer: timer}
		if cl.tuned {
			e.DefaultS, e.TunedS = cl.defT.Seconds(), cl.bestT.Seconds()
		}
		f.Classes = append(f.Classes, e)
	}
	data, err := plan.EncodeTuned(f)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".attn-tune-*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return nil
}
