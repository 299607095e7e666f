package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cmd/attn/internal/heatmap"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
)

const heatmapSynopsis = "attn heatmap [-q Q.npy -k K.npy [-head b,h] [-layout bhnd|bnhd] | -x X.npy -wq WQ.npy -wk WK.npy] [-scale S] [-causal] [-labels a,b,… | -qlabels … -klabels …] [-title T] [-max M] [-annotate auto|on|off] [-o attn-heatmap.png] [-backend auto|cpu|gpu]"

const heatmapHelp = `Draws the attention weights softmax(scale·Q·Kᵀ) of one head as a heatmap:
the queries down the side, the first at the top, the keys along the bottom,
one cell per weight, and a colour bar from 0 to the largest weight (-max
sets the top, 1 for probabilities on a fixed scale). The weights come from
the chosen backend, computed staged with the weights asked for.

Without inputs it draws the tutorial's example that "attn explain" walks
through: queries = x·W_q and keys = x·W_k for its three inputs, with scale 1,
labelled "input 1" to "input 3". -x, -wq and -wk each replace one of the
tutorial's matrices: x is [N, Din], W_q and W_k are [Din, Dk]. -q and -k
give the queries and keys instead: rank 2 [N, D], or rank 3 [H, N, D] or 4
[B, H, N, D] (with -layout bnhd: [N, H, D], [B, N, H, D]) with -head b,h
picking one head (K may have fewer heads, as in grouped-query attention).

The scale is 1 with the tutorial's or -x inputs, as in explain, and 1/√D
with -q and -k, as in run, unless -scale is given. Causal masking is
bottom-right aligned. At most 512 queries and 512 keys are drawn: slice
longer inputs. The image format follows the extension of -o (png, jpg,
tif, svg, pdf); the file is written atomically. With at most 12 queries
and keys the weights are also printed and written in the cells.
`

// heatmapMaxN is the most queries or keys attn draws: 512 × 512 cells
// are already a pixel or two each in a figure that fits on a screen.
const heatmapMaxN = 512

// heatmapFlags are the flags of attn heatmap.
type heatmapFlags struct {
	q, k, x, wq, wk          string
	head                     [2]int
	headSet                  bool
	layout                   kernels.Layout
	layoutSet                bool
	scale                    float64
	scaleSet                 bool
	causal                   bool
	labels, qlabels, klabels string
	title                    string
	vmax                     float64
	annotate                 heatmap.Annotation
	out                      string
	format                   string
	backendName              string
}

func runHeatmap(c *cmdEnv, args []string) error {
	var f heatmapFlags
	fs := flag.NewFlagSet("attn heatmap", flag.ContinueOnError)
	fs.StringVar(&f.q, "q", "", "queries `Q.npy`, rank 2 [N, D], 3 or 4 (with -k)")
	fs.StringVar(&f.k, "k", "", "keys `K.npy`, the rank of Q (with -q)")
	fs.Func("head", "the batch and head `b,h` of rank-3 or -4 -q/-k to draw (default 0,0; h alone means 0,h)", func(s string) error {
		hd, err := parseHead(s)
		f.head, f.headSet = hd, true
		return err
	})
	fs.Func("layout", "`order` of the dimensions of -q and -k: bhnd [B, H, N, D] or bnhd [B, N, H, D] (default bhnd)", func(s string) error {
		l, err := parseLayout(s)
		f.layout, f.layoutSet = l, true
		return err
	})
	fs.StringVar(&f.x, "x", "", "inputs `X.npy`, [N, Din] (default: the tutorial's)")
	fs.StringVar(&f.wq, "wq", "", "query weights `WQ.npy`, [Din, Dk] (default: the tutorial's)")
	fs.StringVar(&f.wk, "wk", "", "key weights `WK.npy`, [Din, Dk] (default: the tutorial's)")
	fs.Func("scale", "multiply Q·Kᵀ by `S`; 0 means 1/√D (default 1 for the tutorial and -x, 1/√D for -q/-k)", func(s string) error {
		v, err := parseScale(s)
		f.scale, f.scaleSet = v, true
		return err
	})
	fs.BoolVar(&f.causal, "causal", false, "causal masking, bottom-right aligned")
	fs.StringVar(&f.labels, "labels", "", "comma-separated `names` of the tokens, for queries and keys alike (self-attention)")
	fs.StringVar(&f.qlabels, "qlabels", "", "comma-separated `names` of the queries")
	fs.StringVar(&f.klabels, "klabels", "", "comma-separated `names` of the keys")
	fs.StringVar(&f.title, "title", "", "`title` of the figure (default: what was drawn)")
	fs.Func("max", "weight `M` at the dark end of the colours (default: the largest weight)", func(s string) error {
		v, err := strconv.ParseFloat(s, 64)
		switch {
		case err != nil:
			return fmt.Errorf("not a number")
		case !(v > 0) || math.IsInf(v, 0):
			return fmt.Errorf("want a finite weight above 0")
		}
		f.vmax = v
		return nil
	})
	fs.Func("annotate", "`mode` of writing the weights in the cells: auto (up to 12×12), on or off (default auto)", func(s string) error {
		switch strings.ToLower(s) {
		case "auto":
			f.annotate = heatmap.AnnotateAuto
		case "on":
			f.annotate = heatmap.AnnotateOn
		case "off":
			f.annotate = heatmap.AnnotateOff
		default:
			return fmt.Errorf("want auto, on or off")
		}
		return nil
	})
	fs.StringVar(&f.out, "o", "attn-heatmap.png", "output `image`; its extension chooses the format")
	fs.StringVar(&f.backendName, "backend", "auto", "`name` of the backend: auto, cpu or gpu (auto honours $ATTN_BACKEND)")
	if err := c.parseFlags(fs, heatmapSynopsis, heatmapHelp, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return c.heatmap(ctx, &f)
}

// check validates the flags on their own, before any file is opened.
func (f *heatmapFlags) check() error {
	qk := f.q != "" || f.k != ""
	switch {
	case qk && (f.q == "" || f.k == ""):
		return usagef("-q and -k go together")
	case qk && (f.x != "" || f.wq != "" || f.wk != ""):
		return usagef("-q/-k give the queries and keys; -x, -wq and -wk compute them: use one or the other")
	case !qk && f.headSet:
		return usagef("-head picks a head of -q and -k")
	case !qk && f.layoutSet:
		return usagef("-layout orders the dimensions of -q and -k")
	case f.labels != "" && (f.qlabels != "" || f.klabels != ""):
		return usagef("-labels names queries and keys alike; use it or -qlabels/-klabels")
	case f.out == "":
		return usagef("-o needs a file name")
	}
	format, err := imageFormat("-o", f.out)
	if err != nil {
		return err
	}
	f.format = format
	for _, in := range []struct{ name, path string }{{"-q", f.q}, {"-k", f.k}, {"-x", f.x}, {"-wq", f.wq}, {"-wk", f.wk}} {
		if in.path != "" && samePath(f.out, in.path) {
			return usagef("-o %s would overwrite the input %s %s", f.out, in.name, in.path)
		}
	}
	return checkBackendName(f.backendName)
}

// imageFormat is the image format the extension of an output flag's
// path asks for; a usage error names the formats there are.
func imageFormat(flag, path string) (string, error) {
	format, err := heatmap.FormatOf(path)
	if err != nil {
		ext := filepath.Ext(path)
		if ext == "" {
			return "", usagef("%s %s has no extension to choose the image format by (%s)", flag, path, strings.Join(heatmap.Formats(), ", "))
		}
		return "", usagef("%s %s: image format %q is not one of %s", flag, path, strings.TrimPrefix(ext, "."), strings.Join(heatmap.Formats(), ", "))
	}
	return format, nil
}

// heatmapProblem is the queries and keys of one head and how to draw
// them.
type heatmapProblem struct {
	q, k           *kernels.Tensor // [Nq, D], [Nk, D]
	scale          float64         // 0: 1/√D
	qnames, knames []string        // default tick labels; nil for indices
	what           string          // for the default title
}

func (c *cmdEnv) heatmap(ctx context.Context, f *heatmapFlags) error {
	var p *heatmapProblem
	var err error
	if f.q != "" {
		p, err = loadHeads(f.q, f.k, f.layout, f.head)
	} else {
		p, err = projectTutorial(f.x, f.wq, f.wk)
	}
	if err != nil {
		return err
	}
	if f.scaleSet {
		p.scale = f.scale
	}
	nq, nk := p.q.Shape[0], p.k.Shape[0]
	qnames, knames := p.qnames, p.knames
	if f.labels != "" {
		if nq != nk {
			return fmt.Errorf("-labels names queries and keys alike, but there are %d queries and %d keys: use -qlabels and -klabels", nq, nk)
		}
		qnames, knames = splitLabels(f.labels), splitLabels(f.labels)
	}
	if f.qlabels != "" {
		qnames = splitLabels(f.qlabels)
	}
	if f.klabels != "" {
		knames = splitLabels(f.klabels)
	}
	for _, l := range []struct {
		flag, what string
		names      []string
		n          int
	}{{"-qlabels", "queries", qnames, nq}, {"-klabels", "keys", knames, nk}} {
		if l.names != nil && len(l.names) != l.n {
			flag := l.flag
			if f.labels != "" {
				flag = "-labels"
			}
			return fmt.Errorf("%s has %d names but there are %d %s", flag, len(l.names), l.n, l.what)
		}
	}

	be, err := c.openBackend(f.backendName)
	if err != nil {
		return err
	}
	defer be.Close()
	w, err := headWeights(ctx, be, p.q, p.k, p.scale, f.causal)
	if err != nil {
		return err
	}

	scale := p.scale
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(p.q.Shape[1]))
	}
	title := f.title
	if title == "" {
		title = fmt.Sprintf("Attention weights: %s, scale %s", p.what, compact(scale))
		if f.causal {
			title += ", causal"
		}
	}
	img, err := drawHeatmap(f.format, nq, nk, w, &heatmap.Options{
		Title: title, RowLabels: qnames, ColLabels: knames, Max: f.vmax, Annotate: f.annotate,
	})
	if err != nil {
		return err
	}
	if err := replaceFile(f.out, img); err != nil {
		return err
	}
	if nq <= heatmap.AnnotateLimit && nk <= heatmap.AnnotateLimit {
		printWeights(c.stdout, fmt.Sprintf("weights, one row per query (backend %s, scale %s):", be.Name(), compact(scale)), nq, nk, w, qnames, knames)
	}
	fmt.Fprintf(c.stdout, "wrote %s: %d×%d weights (%s)\n", f.out, nq, nk, be.Name())
	return nil
}

// projectTutorial computes the queries x·W_q and keys x·W_k of the
// tutorial's example with any of its matrices replaced by a file.
func projectTutorial(xPath, wqPath, wkPath string) (*heatmapProblem, error) {
	var x, wq, wk *kernels.Tensor
	var err error
	for _, m := range []struct {
		path string
		def  [][]float32
		dst  **kernels.Tensor
	}{{xPath, tutorialX, &x}, {wqPath, tutorialWQ, &wq}, {wkPath, tutorialWK, &wk}} {
		if *m.dst, err = loadMatrix(m.path, m.def, 0); err != nil {
			return nil, err
		}
	}
	xName, wqName, wkName := orDefault(xPath, "x"), orDefault(wqPath, "W_q"), orDefault(wkPath, "W_k")
	n, din := x.Shape[0], x.Shape[1]
	for _, w := range []struct {
		name string
		t    *kernels.Tensor
	}{{wqName, wq}, {wkName, wk}} {
		if w.t.Shape[0] != din {
			return nil, fmt.Errorf("%s is %s but %s has %d features per input: its first dimension must be %d",
				w.name, operand.NpyShape(w.t.Shape), xName, din, din)
		}
	}
	if wq.Shape[1] != wk.Shape[1] {
		return nil, fmt.Errorf("%s is %s and %s is %s: queries and keys need the same width", wqName, operand.NpyShape(wq.Shape), wkName, operand.NpyShape(wk.Shape))
	}
	if n > heatmapMaxN {
		return nil, fmt.Errorf("%s has %d inputs; attn heatmap draws at most %d×%d weights: slice the inputs", xName, n, heatmapMaxN, heatmapMaxN)
	}
	p := &heatmapProblem{scale: 1, qnames: make([]string, n), what: "the tutorial's example"}
	if xPath != "" || wqPath != "" || wkPath != "" {
		p.what = fmt.Sprintf("queries %s·%s, keys %s·%s", xName, wqName, xName, wkName)
	}
	for i := range p.qnames {
		p.qnames[i] = fmt.Sprintf("input %d", i+1) // as explain names them
	}
	p.knames = p.qnames
	if p.q, err = (kernels.Linear{W: wq}).Apply(x); err != nil {
		return nil, err
	}
	if p.k, err = (kernels.Linear{W: wk}).Apply(x); err != nil {
		return nil, err
	}
	return p, nil
}

// loadHeads reads the queries and keys of head (b, h) from .npy files of
// rank 2, 3 or 4: every header and shape is checked, and the sizes
// limited, before any data is read.
func loadHeads(qPath, kPath string, layout kernels.Layout, head [2]int) (*heatmapProblem, error) {
	var files [2]*npyFile
	defer func() {
		for _, nf := range files {
			if nf != nil {
				nf.f.Close()
			}
		}
	}()
	for i, path := range []string{qPath, kPath} {
		nf, err := openNpy(path)
		if err != nil {
			return nil, err
		}
		files[i] = nf
		if err := nf.checkFloat(); err != nil {
			return nil, err
		}
	}
	q, k := files[0], files[1]
	prob, err := checkHeaders(q, k, k, nil, nil, layout, nil)
	if err != nil {
		return nil, err
	}
	b, h, nq, hkv, nk := prob.B, prob.H, prob.Nq, prob.KVHeads, prob.Nk
	if err := checkHead(head, b, h, q.path, q.shape); err != nil {
		return nil, err
	}
	if err := checkHeatmapSize(nq, nk); err != nil {
		return nil, err
	}
	var heads [2]*kernels.Tensor
	for i, nf := range files {
		a, err := nf.readFloats(context.Background())
		if err != nil {
			return nil, err
		}
		if err := a.checkFinite(false); err != nil {
			return nil, err
		}
		hi := head[1]
		if i == 1 {
			hi = head[1] / (h / hkv) // the KV head query head h reads
		}
		heads[i] = headMatrix(a.data, a.shape, layout, head[0], hi)
	}
	p := &heatmapProblem{q: heads[0], k: heads[1], what: filepath.Base(qPath) + " · " + filepath.Base(kPath)}
	if len(q.shape) > 2 {
		p.what += fmt.Sprintf(", head %d,%d", head[0], head[1])
	}
	return p, nil
}

// checkHead checks that head (b, h) exists in a tensor of B batches and
// H heads.
func checkHead(head [2]int, b, h int, path string, shape []int) error {
	if head[0] >= b || head[1] >= h {
		return fmt.Errorf("head %d,%d is not in %s of shape %s: it has B=%d and H=%d (heads 0,0 to %d,%d)",
			head[0], head[1], path, operand.NpyShape(shape), b, h, b-1, h-1)
	}
	return nil
}

// checkHeatmapSize refuses more queries or keys than a heatmap shows.
func checkHeatmapSize(nq, nk int) error {
	if nq > heatmapMaxN || nk > heatmapMaxN {
		return fmt.Errorf("Nq=%d queries and Nk=%d keys: a heatmap draws at most %d×%d weights; slice the inputs (e.g. q[..., :%d, :] and k[..., :%d, :])",
			nq, nk, heatmapMaxN, heatmapMaxN, heatmapMaxN, heatmapMaxN)
	}
	return nil
}

// headMatrix copies head (b, h) of a rank 2, 3 or 4 tensor in the given
// layout out as an [N, D] matrix.
func headMatrix(data []float32, shape []int, layout kernels.Layout, b, h int) *kernels.Tensor {
	_, nh, n, d := operand.Dims(shape, layout)
	m := &kernels.Tensor{Shape: []int{n, d}, Layout: kernels.BHND, Data: make([]float32, n*d)}
	for i := range n {
		var off int
		if layout == kernels.BNHD && len(shape) > 2 {
			off = ((b*n+i)*nh + h) * d
		} else {
			off = ((b*nh+h)*n + i) * d
		}
		copy(m.Data[i*d:(i+1)*d], data[off:off+d])
	}
	return m
}

// headWeights runs attention on one head's [Nq, D] queries and [Nk, D]
// keys and returns its [Nq, Nk] weights. The weights do not depend on
// the values: a column of zeros stands in for them.
func headWeights(ctx context.Context, be backend.Backend, q, k *kernels.Tensor, scale float64, causal bool) ([]float32, error) {
	nk := k.Shape[0]
	v := &kernels.Tensor{Shape: []int{nk, 1}, Layout: kernels.BHND, Data: make([]float32, nk)}
	res, err := kernels.Attention(ctx, be, q, k, v, &kernels.Options{
		Scale: scale, Causal: causal,
		Strategy: kernels.Staged, Weights: true,
	})
	if err != nil {
		return nil, err
	}
	if res.Weights == nil {
		return nil, fmt.Errorf("backend %s returned no weights", be.Name())
	}
	return res.Weights.Data, nil
}

// drawHeatmap draws the weights into memory, so that nothing is written
// when drawing fails.
func drawHeatmap(format string, nq, nk int, w []float32, opt *heatmap.Options) ([]byte, error) {
	var buf bytes.Buffer
	if err := heatmap.Write(&buf, format, nq, nk, w, opt); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// printWeights prints an nq × nk matrix of weights as a table with the
// queries' and keys' names.
func printWeights(w io.Writer, heading string, nq, nk int, p []float32, qnames, knames []string) {
	if qnames == nil {
		qnames = indexNames(nq)
	}
	if knames == nil {
		knames = indexNames(nk)
	}
	num := fixed(6)
	rowW := 0
	for _, s := range qnames {
		rowW = max(rowW, len([]rune(s)))
	}
	colW := len(num(0))
	for _, s := range knames {
		colW = max(colW, len([]rune(s)))
	}
	pad := func(s string, n int) string { return strings.Repeat(" ", max(0, n-len([]rune(s)))) + s }
	var b strings.Builder
	b.WriteString(heading + "\n")
	b.WriteString(strings.Repeat(" ", rowW))
	for _, s := range knames {
		b.WriteString("  " + pad(s, colW))
	}
	b.WriteString("\n")
	for i := range nq {
		b.WriteString(pad(qnames[i], rowW))
		for j := range nk {
			b.WriteString("  " + pad(num(float64(p[i*nk+j])), colW))
		}
		b.WriteString("\n")
	}
	io.WriteString(w, b.String())
}

func indexNames(n int) []string {
	s := make([]string, n)
	for i := range s {
		s[i] = strconv.Itoa(i)
	}
	return s
}

// splitLabels splits comma-separated names, trimming the spaces around
// each.
func splitLabels(s string) []string {
	names := strings.Split(s, ",")
	for i := range names {
		names[i] = strings.TrimSpace(names[i])
	}
	return names
}

// parseHead reads "b,h", or "h" for batch 0.
func parseHead(s string) ([2]int, error) {
	parts := strings.Split(s, ",")
	if len(parts) > 2 {
		return [2]int{}, fmt.Errorf("want b,h")
	}
	var v [2]int
	for i, p := range parts {
		n, err := strconv.Atoi(strings.TrimSpace(p))
		if err != nil || n < 0 {
			return [2]int{}, fmt.Errorf("want b,h: two indices ≥ 0")
		}
		v[i+2-len(parts)] = n
	}
	return v, nil
}

// parseLayout reads bhnd or bnhd.
func parseLayout(s string) (kernels.Layout, error) {
	switch strings.ToLower(s) {
	case "bhnd":
		return kernels.BHND, nil
	case "bnhd":
		return kernels.BNHD, nil
	}
	return kernels.BHND, fmt.Errorf("want bhnd or bnhd")
}

// parseScale reads a -scale value: finite and within float32. 0 means
// 1/√D, as a zero scale does in every layer of attn (package backend's
// doc, "Zero values").
func parseScale(s string) (float64, error) {
	v, err := strconv.ParseFloat(s, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("not a number")
	case math.IsNaN(v) || math.IsInf(v, 0):
		return 0, fmt.Errorf("scale must be finite")
	case math.Abs(v) > math.MaxFloat32:
		return 0, fmt.Errorf("scale does not fit in float32")
	}
	return v, nil
}
