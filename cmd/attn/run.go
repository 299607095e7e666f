package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attn-go/attn/bench/heatmap"
	"github.com/attn-go/attn/kernels"
)

const runSynopsis = "attn run -q Q.npy -k K.npy -v V.npy -o OUT.npy [-bias B.npy] [-mask M.npy] [-causal] [-scale S] [-backend auto|cpu|gpu] [-strategy auto|staged|fused] [-weights P.npy] [-lse L.npy] [-heatmap P.png [-heatmap-head b,h]] [-layout bhnd|bnhd] [-allow-nonfinite]"

const runHelp = `Computes O = softmax(scale·Q·Kᵀ + bias, masked)·V and writes it to OUT.npy.

Q, K and V have the same rank: 2 [N, D], 3 [H, N, D] or 4 [B, H, N, D]
(with -layout bnhd: 3 [N, H, D] or 4 [B, N, H, D]; the output follows).
K and V may have fewer heads than Q when they divide its head count
(grouped-query attention); K's shape gives the KV head count. Nq may differ
from Nk, and V's last dimension from D. The bias (float) and mask (bool or
numeric, nonzero = keep) broadcast right-aligned to [B, H, Nq, Nk], each
dimension 1 or the full size. Causal masking is bottom-right aligned.

Inputs are float32 or float64 .npy files (either byte order, C or Fortran
order); outputs are float32 .npy files with the query's rank, written
atomically. -weights needs the staged strategy (auto picks it).

-heatmap draws the weights of one head (-heatmap-head b,h, default 0,0) as
an image, its format chosen by the extension (png, jpg, tif, svg, pdf), as
"attn heatmap" does: it asks for the weights, so it needs the staged
strategy too, and it draws at most 512 queries and 512 keys (slice longer
inputs).
`

// runFlags are the flags of attn run.
type runFlags struct {
	q, k, v, bias, mask string
	out, weights, lse   string
	heatmap             string
	heatmapFormat       string
	heatmapHead         [2]int
	heatmapHeadSet      bool
	causal              bool
	scale               float64
	scaleSet            bool
	backendName         string
	strategy            kernels.Strategy
	allowNonFinite      bool
	layout              kernels.Layout
}

func runRun(c *cmdEnv, args []string) error {
	var f runFlags
	fs := flag.NewFlagSet("attn run", flag.ContinueOnError)
	fs.StringVar(&f.q, "q", "", "queries `Q.npy` (required)")
	fs.StringVar(&f.k, "k", "", "keys `K.npy` (required)")
	fs.StringVar(&f.v, "v", "", "values `V.npy` (required)")
	fs.StringVar(&f.out, "o", "", "output `OUT.npy` (required)")
	fs.StringVar(&f.bias, "bias", "", "additive bias `B.npy`, broadcast to [B, H, Nq, Nk]; -Inf hides a key")
	fs.StringVar(&f.mask, "mask", "", "keep-mask `M.npy`, broadcast to [B, H, Nq, Nk]; nonzero keeps a key")
	fs.BoolVar(&f.causal, "causal", false, "causal masking, bottom-right aligned")
	fs.Func("scale", "multiply Q·Kᵀ by `S` (default 1/√D)", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		switch {
		case err != nil:
			return fmt.Errorf("not a number")
		case math.IsNaN(v) || math.IsInf(v, 0):
			return fmt.Errorf("scale must be finite")
		case v == 0:
			return fmt.Errorf("scale 0 is not allowed (omit -scale for the default 1/√D)")
		case math.Abs(v) > math.MaxFloat32:
			return fmt.Errorf("scale does not fit in float32")
		}
		f.scale, f.scaleSet = v, true
		return nil
	})
	fs.StringVar(&f.backendName, "backend", "auto", "`name` of the backend: auto, cpu or gpu (auto honours $ATTN_BACKEND)")
	fs.Func("strategy", "`strategy`: auto, staged or fused", func(s string) error {
		st, err := kernels.ParseStrategy(s)
		f.strategy = st
		return err
	})
	fs.StringVar(&f.weights, "weights", "", "also write the attention weights to `P.npy` (staged only)")
	fs.StringVar(&f.lse, "lse", "", "also write the per-row log-sum-exp to `L.npy`")
	fs.StringVar(&f.heatmap, "heatmap", "", "also draw the weights of one head as an image `P.png` (staged only; Nq, Nk ≤ 512)")
	fs.Func("heatmap-head", "the batch and head `b,h` -heatmap draws (default 0,0; h alone means 0,h)", func(s string) error {
		hd, err := parseHead(s)
		f.heatmapHead, f.heatmapHeadSet = hd, true
		return err
	})
	fs.BoolVar(&f.allowNonFinite, "allow-nonfinite", false, "do not reject NaN or infinite inputs")
	fs.Func("layout", "`order` of the dimensions of q, k, v and the output: bhnd [B, H, N, D] or bnhd [B, N, H, D] (default bhnd)", func(s string) error {
		l, err := parseLayout(s)
		f.layout = l
		return err
	})
	if err := c.parseFlags(fs, runSynopsis, runHelp, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return c.attention(ctx, &f)
}

// check validates the flags on their own, before any file is opened.
func (f *runFlags) check() error {
	var missing []string
	for _, r := range []struct{ name, val string }{{"-q", f.q}, {"-k", f.k}, {"-v", f.v}, {"-o", f.out}} {
		if r.val == "" {
			missing = append(missing, r.name)
		}
	}
	if len(missing) > 0 {
		return usagef("missing required flag %s", strings.Join(missing, ", "))
	}
	if f.weights != "" && f.strategy == kernels.Fused {
		return usagef("-weights needs the staged strategy; -strategy fused never materialises the weights (use -strategy staged or auto)")
	}
	if f.heatmap != "" && f.strategy == kernels.Fused {
		return usagef("-heatmap draws the weights, which need the staged strategy; -strategy fused never materialises them (use -strategy staged or auto)")
	}
	if f.heatmapHeadSet && f.heatmap == "" {
		return usagef("-heatmap-head picks the head -heatmap draws; give -heatmap too")
	}
	if f.heatmap != "" {
		format, err := imageFormat("-heatmap", f.heatmap)
		if err != nil {
			return err
		}
		f.heatmapFormat = format
	}
	if err := checkBackendName(f.backendName); err != nil {
		return err
	}
	// An output may not replace an input or another output.
	ins := map[string]string{"-q": f.q, "-k": f.k, "-v": f.v, "-bias": f.bias, "-mask": f.mask}
	outs := []struct{ name, path string }{{"-o", f.out}, {"-weights", f.weights}, {"-lse", f.lse}, {"-heatmap", f.heatmap}}
	for i, o := range outs {
		if o.path == "" {
			continue
		}
		for _, in := range []string{"-q", "-k", "-v", "-bias", "-mask"} {
			if ins[in] != "" && samePath(o.path, ins[in]) {
				return usagef("%s %s would overwrite the input %s %s", o.name, o.path, in, ins[in])
			}
		}
		for _, p := range outs[:i] {
			if p.path != "" && samePath(o.path, p.path) {
				return usagef("%s and %s both name %s", p.name, o.name, o.path)
			}
		}
	}
	return nil
}

// samePath reports whether a and b name the same file, existing or not.
func samePath(a, b string) bool {
	if sa, err := os.Stat(a); err == nil {
		if sb, err := os.Stat(b); err == nil {
			return os.SameFile(sa, sb)
		}
	}
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	return err1 == nil && err2 == nil && aa == ab
}

// attention reads and checks the inputs, runs attention and writes the
// outputs.
func (c *cmdEnv) attention(ctx context.Context, f *runFlags) error {
	// Every header is read and every shape checked before any data.
	files := map[string]*npyFile{}
	defer func() {
		for _, nf := range files {
			nf.f.Close()
		}
	}()
	for _, in := range []struct{ key, path string }{{"q", f.q}, {"k", f.k}, {"v", f.v}, {"bias", f.bias}, {"mask", f.mask}} {
		if in.path == "" {
			continue
		}
		nf, err := openNpy(in.path)
		if err != nil {
			return err
		}
		files[in.key] = nf
		check := nf.checkFloat
		if in.key == "mask" {
			check = nf.checkKeep
		}
		if err := check(); err != nil {
			return err
		}
	}
	q, k, v := files["q"], files["k"], files["v"]
	if err := checkQKV(q, k, v, f.layout); err != nil {
		return err
	}
	full := fullShape(q, k, f.layout)
	for _, key := range []string{"bias", "mask"} {
		if nf := files[key]; nf != nil {
			if err := checkBroadcast(key, nf, full); err != nil {
				return err
			}
		}
	}
	if f.heatmap != "" {
		if err := checkHead(f.heatmapHead, full[0], full[1], q.path, q.shape); err != nil {
			return fmt.Errorf("-heatmap-head: %v", err)
		}
		if err := checkHeatmapSize(full[2], full[3]); err != nil {
			return fmt.Errorf("-heatmap: %v", err)
		}
	}

	var tensors [3]*kernels.Tensor
	for i, nf := range []*npyFile{q, k, v} {
		a, err := nf.readFloats()
		if err != nil {
			return err
		}
		if !f.allowNonFinite {
			if err := a.checkFinite(false); err != nil {
				return err
			}
		}
		tensors[i] = &kernels.Tensor{Shape: a.shape, Layout: f.layout, Data: a.data}
	}
	opts := &kernels.Options{
		Scale:          f.scale,
		Causal:         f.causal,
		Strategy:       f.strategy,
		Weights:        f.weights != "" || f.heatmap != "",
		LSE:            f.lse != "",
		AllowNonFinite: f.allowNonFinite,
	}
	if nf := files["bias"]; nf != nil {
		a, err := nf.readFloats()
		if err != nil {
			return err
		}
		if !f.allowNonFinite {
			if err := a.checkFinite(true); err != nil {
				return err
			}
		}
		opts.Bias = &kernels.Tensor{Shape: a.shape, Layout: kernels.BHND, Data: a.data}
	}
	if nf := files["mask"]; nf != nil {
		keep, err := nf.readKeep()
		if err != nil {
			return err
		}
		opts.Mask = &kernels.Mask{Shape: nf.shape, Keep: keep}
	}

	be, err := c.openBackend(f.backendName)
	if err != nil {
		return err
	}
	defer be.Close()
	res, err := kernels.Attention(ctx, be, tensors[0], tensors[1], tensors[2], opts)
	if err != nil {
		return err
	}

	// The image is drawn, and written to a temporary file, before any
	// output replaces its target: a failure leaves every target as it
	// was.
	var heatTmp string
	if f.heatmap != "" {
		if res.Weights == nil {
			return fmt.Errorf("the %s strategy returned no weights", res.Strategy)
		}
		if heatTmp, err = drawRunHeatmap(f, full, res.Weights.Data); err != nil {
			return err
		}
		defer func() {
			if heatTmp != "" {
				os.Remove(heatTmp)
			}
		}()
	}
	outs := []output{{f.out, res.Out.Shape, res.Out.Data}}
	if f.weights != "" {
		if res.Weights == nil {
			return fmt.Errorf("the %s strategy returned no weights", res.Strategy)
		}
		outs = append(outs, output{f.weights, res.Weights.Shape, res.Weights.Data})
	}
	if f.lse != "" {
		if res.LSE == nil {
			return fmt.Errorf("the %s strategy returned no log-sum-exp", res.Strategy)
		}
		outs = append(outs, output{f.lse, res.LSE.Shape, res.LSE.Data})
	}
	if err := writeOutputs(outs); err != nil {
		return err
	}
	for _, o := range outs {
		fmt.Fprintf(c.stdout, "wrote %s: float32 %s (%s, %s)\n", o.path, kernels.NpyShape(o.shape), be.Name(), res.Strategy)
	}
	if heatTmp != "" {
		err := commitTemp(heatTmp, f.heatmap)
		heatTmp = ""
		if err != nil {
			return err
		}
		fmt.Fprintf(c.stdout, "wrote %s: the %d×%d weights of head %d,%d (%s, %s)\n", f.heatmap, full[2], full[3], f.heatmapHead[0], f.heatmapHead[1], be.Name(), res.Strategy)
	}
	return nil
}

// drawRunHeatmap draws the weights of the -heatmap-head head out of all the
// [B, H, Nq, Nk] weights p into a temporary file beside -heatmap and
// returns its name.
func drawRunHeatmap(f *runFlags, full [4]int, p []float32) (string, error) {
	b, h, nq, nk := f.heatmapHead[0], f.heatmapHead[1], full[2], full[3]
	off := (b*full[1] + h) * nq * nk
	title := fmt.Sprintf("Attention weights: %s · %s", filepath.Base(f.q), filepath.Base(f.k))
	if full[0] > 1 || full[1] > 1 {
		title += fmt.Sprintf(", head %d,%d", b, h)
	}
	if f.causal {
		title += ", causal"
	}
	img, err := drawHeatmap(f.heatmapFormat, nq, nk, p[off:off+nq*nk], &heatmap.Options{Title: title})
	if err != nil {
		return "", fmt.Errorf("-heatmap %s: %v", f.heatmap, err)
	}
	return writeTempFile(f.heatmap, writeBytes(img))
}

// checkQKV checks the ranks and sizes of Q, K and V against each other,
// naming the files in its messages. kernels.Attention checks them again;
// checking here names the files and avoids reading data that cannot be
// used.
func checkQKV(q, k, v *npyFile, layout kernels.Layout) error {
	const ranks = "q, k and v must be rank 2 [N, D], 3 [H, N, D] or 4 [B, H, N, D]"
	for _, nf := range []*npyFile{q, k, v} {
		if r := len(nf.shape); r < 2 || r > 4 {
			return fmt.Errorf("%s has rank %d, shape %s; %s", nf.path, r, kernels.NpyShape(nf.shape), ranks)
		}
	}
	for _, nf := range []*npyFile{k, v} {
		if len(nf.shape) != len(q.shape) {
			return fmt.Errorf("%s has rank %d but %s has rank %d; q, k and v must have the same rank", q.path, len(q.shape), nf.path, len(nf.shape))
		}
	}
	for _, nf := range []*npyFile{q, k, v} {
		if nf.n == 0 {
			return fmt.Errorf("%s is empty: shape %s", nf.path, kernels.NpyShape(nf.shape))
		}
	}
	qb, qh, _, qd := kernels.Dims(q.shape, layout)
	kb, kh, kn, kd := kernels.Dims(k.shape, layout)
	vb, vh, vn, _ := kernels.Dims(v.shape, layout)
	switch {
	case kb != qb || vb != qb:
		return fmt.Errorf("batch sizes differ: %s has B=%d, %s B=%d, %s B=%d", q.path, qb, k.path, kb, v.path, vb)
	case kd != qd:
		return fmt.Errorf("head dims differ: %s has D=%d but %s has D=%d", q.path, qd, k.path, kd)
	case vn != kn:
		return fmt.Errorf("key counts differ: %s has N=%d keys but %s has N=%d values", k.path, kn, v.path, vn)
	case vh != kh:
		return fmt.Errorf("KV head counts differ: %s has %d heads but %s has %d", k.path, kh, v.path, vh)
	case qh%kh != 0:
		return fmt.Errorf("%s has H=%d heads, not a multiple of the %d KV heads of %s", q.path, qh, kh, k.path)
	}
	return nil
}

// fullShape is [B, H, Nq, Nk], what a bias or mask broadcasts to.
func fullShape(q, k *npyFile, layout kernels.Layout) [4]int {
	b, h, nq, _ := kernels.Dims(q.shape, layout)
	_, _, nk, _ := kernels.Dims(k.shape, layout)
	return [4]int{b, h, nq, nk}
}

// checkBroadcast checks that a bias or mask broadcasts, right-aligned, to
// full.
func checkBroadcast(what string, nf *npyFile, full [4]int) error {
	names := [4]string{"B", "H", "Nq", "Nk"}
	r := len(nf.shape)
	if r < 1 || r > 4 {
		return fmt.Errorf("%s %s has rank %d, shape %s; it must be rank 1 to 4, broadcasting to (B, H, Nq, Nk) = %s",
			what, nf.path, r, kernels.NpyShape(nf.shape), kernels.NpyShape(full[:]))
	}
	for i, s := range nf.shape {
		d := 4 - r + i
		if s != 1 && s != full[d] {
			return fmt.Errorf("%s %s of shape %s does not broadcast to (B, H, Nq, Nk) = %s: its %s dimension is %d, want 1 or %d",
				what, nf.path, kernels.NpyShape(nf.shape), kernels.NpyShape(full[:]), names[d], s, full[d])
		}
	}
	return nil
}
