package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
)

const explainSynopsis = "attn explain [-x X.npy] [-wq WQ.npy] [-wk WK.npy] [-wv WV.npy] [-scale S] [-backend auto|cpu|gpu]"

const explainHelp = `Walks through self-attention in the eight steps of the illustrated
tutorials, printing every intermediate matrix:

	1 inputs x and the weights   5 scores = queries·keysᵀ·scale
	2 keys = x·W_k               6 softmax of each row of scores
	3 queries = x·W_q            7 weighted values softmax[i][j]·values[j]
	4 values = x·W_v             8 outputs = the sums of the weighted values

then shows why the tutorial's printed outputs differ from the exact ones
(it rounded the weights to one decimal before weighting the values).

Without flags it uses the tutorial's three 4-feature inputs and 4×3
weights. Each of -x, -wq, -wk, -wv replaces one of them: x is [N, Din],
the weights [Din, Dk] (W_q and W_k with the same Dk) and [Din, Dv]. The
scale is the tutorial's 1 unless -scale is given, also with your own
inputs; -scale 0 is the usual 1/√Dk (0.577… for Dk = 3), as a zero
scale means everywhere in attn.

explain prints every intermediate matrix, N×N·Dv weighted values among
them, so each of its matrices may be at most 16×16: at most 16 inputs of
at most 16 features, and weights at most 16 wide. A larger file is
refused from its header, before it is read. attn run computes attention
of any size.
`

// explainMaxDim bounds both dimensions of every matrix explain takes: at
// 16 inputs of 16 features and 16-wide weights it prints about 70 KB,
// where 64 inputs of 64 features printed 2.6 MB.
const explainMaxDim = 16

// The tutorial's inputs: three inputs of four features and the 4×3
// weights of keys, queries and values.
var (
	tutorialX  = [][]float32{{1, 0, 1, 0}, {0, 2, 0, 2}, {1, 1, 1, 1}}
	tutorialWK = [][]float32{{0, 0, 1}, {1, 1, 0}, {0, 1, 0}, {1, 1, 0}}
	tutorialWQ = [][]float32{{1, 0, 1}, {1, 0, 0}, {0, 0, 1}, {0, 1, 1}}
	tutorialWV = [][]float32{{0, 2, 0}, {0, 3, 0}, {1, 0, 3}, {1, 1, 0}}
)

func runExplain(c *cmdEnv, args []string) error {
	fs := flag.NewFlagSet("attn explain", flag.ContinueOnError)
	var xPath, wqPath, wkPath, wvPath, backendName string
	scale := 1.0
	fs.StringVar(&xPath, "x", "", "inputs `X.npy`, [N, Din] (default: the tutorial's)")
	fs.StringVar(&wqPath, "wq", "", "query weights `WQ.npy`, [Din, Dk] (default: the tutorial's)")
	fs.StringVar(&wkPath, "wk", "", "key weights `WK.npy`, [Din, Dk] (default: the tutorial's)")
	fs.StringVar(&wvPath, "wv", "", "value weights `WV.npy`, [Din, Dv] (default: the tutorial's)")
	fs.Func("scale", "multiply queries·keysᵀ by `S` (default 1, the tutorial's, also with your own inputs; 0 means 1/√Dk)", func(s string) error {
		v, err := parseScale(s)
		scale = v
		return err
	})
	fs.StringVar(&backendName, "backend", "auto", "`name` of the backend: auto, cpu or gpu")
	if err := c.parseFlags(fs, explainSynopsis, explainHelp, args); err != nil {
		return err
	}
	if err := checkBackendName(backendName); err != nil {
		return err
	}
	var in explainInputs
	var err error
	for _, m := range []struct {
		path string
		def  [][]float32
		dst  **kernels.Tensor
	}{{xPath, tutorialX, &in.x}, {wqPath, tutorialWQ, &in.wq}, {wkPath, tutorialWK, &in.wk}, {wvPath, tutorialWV, &in.wv}} {
		if *m.dst, err = loadMatrix(m.path, m.def, explainMaxDim); err != nil {
			return err
		}
	}
	in.names = [4]string{orDefault(xPath, "x"), orDefault(wqPath, "W_q"), orDefault(wkPath, "W_k"), orDefault(wvPath, "W_v")}
	in.scale = scale
	if err := in.check(); err != nil {
		return err
	}
	be, err := c.openBackend(backendName)
	if err != nil {
		return err
	}
	defer be.Close()
	ex, err := computeExplain(context.Background(), be, &in)
	if err != nil {
		return err
	}
	return ex.print(c.stdout)
}

func orDefault(path, def string) string {
	if path == "" {
		return def
	}
	return path
}

// loadMatrix reads a rank-2 float matrix from path, or returns def when
// path is empty. A matrix with a dimension over maxDim (explainMaxDim) is
// refused from its header; maxDim 0 means no limit.
func loadMatrix(path string, def [][]float32, maxDim int) (*kernels.Tensor, error) {
	if path == "" {
		return matrix(def), nil
	}
	nf, err := openNpy(path)
	if err != nil {
		return nil, err
	}
	defer nf.f.Close()
	if len(nf.shape) != 2 {
		return nil, fmt.Errorf("%s has rank %d, shape %s; explain needs matrices", path, len(nf.shape), operand.NpyShape(nf.shape))
	}
	if nf.n == 0 {
		return nil, fmt.Errorf("%s is empty: shape %s", path, operand.NpyShape(nf.shape))
	}
	if r, c := nf.shape[0], nf.shape[1]; maxDim > 0 && (r > maxDim || c > maxDim) {
		return nil, fmt.Errorf("%s is %s: explain prints every intermediate matrix and takes matrices of at most %d×%d (at most %d inputs of %d features, weights at most %d wide); attn run computes attention of any size",
			path, operand.NpyShape(nf.shape), maxDim, maxDim, maxDim, maxDim, maxDim)
	}
	a, err := nf.readFloats(context.Background())
	if err != nil {
		return nil, err
	}
	if err := a.checkFinite(false); err != nil {
		return nil, err
	}
	return &kernels.Tensor{Shape: a.shape, Layout: kernels.BHND, Data: a.data}, nil
}

func matrix(rows [][]float32) *kernels.Tensor {
	t := &kernels.Tensor{Shape: []int{len(rows), len(rows[0])}, Layout: kernels.BHND}
	for _, r := range rows {
		t.Data = append(t.Data, r...)
	}
	return t
}

// explainInputs are the inputs of the walk-through.
type explainInputs struct {
	x, wq, wk, wv *kernels.Tensor
	names         [4]string // x, W_q, W_k, W_v: a file name or the symbol
	scale         float64
}

// check names the files whose shapes do not fit together.
func (in *explainInputs) check() error {
	din := in.x.Shape[1]
	for i, w := range []*kernels.Tensor{in.wq, in.wk, in.wv} {
		if w.Shape[0] != din {
			return fmt.Errorf("%s is %s but %s has %d features per input: its first dimension must be %d",
				in.names[i+1], operand.NpyShape(w.Shape), in.names[0], din, din)
		}
	}
	if in.wq.Shape[1] != in.wk.Shape[1] {
		return fmt.Errorf("%s is %s and %s is %s: queries and keys need the same width", in.names[1], operand.NpyShape(in.wq.Shape), in.names[2], operand.NpyShape(in.wk.Shape))
	}
	return nil
}

// explanation holds every intermediate of the walk-through, computed by
// kernels on a backend.
type explanation struct {
	backend                 string
	scale                   float64
	in                      *explainInputs
	keys, queries, values   *kernels.Tensor
	scores, weights, output *kernels.Tensor
	// rounded are the weights rounded to tenths as the tutorial prints
	// them (roundTenths), and roundedOut the outputs computed with them.
	rounded, roundedOut *kernels.Tensor
}

func computeExplain(ctx context.Context, be backend.Backend, in *explainInputs) (*explanation, error) {
	ex := &explanation{backend: be.Name(), scale: in.scale, in: in}
	if ex.scale == 0 {
		ex.scale = 1 / math.Sqrt(float64(in.wq.Shape[1]))
	}
	var err error
	if ex.keys, err = (kernels.Linear{W: in.wk}).Apply(in.x); err != nil {
		return nil, err
	}
	if ex.queries, err = (kernels.Linear{W: in.wq}).Apply(in.x); err != nil {
		return nil, err
	}
	if ex.values, err = (kernels.Linear{W: in.wv}).Apply(in.x); err != nil {
		return nil, err
	}
	f32 := kernels.Float32 // it prints the weights and scores as computed
	res, err := kernels.Attention(ctx, be, ex.queries, ex.keys, ex.values, &kernels.Options{
		Scale:       in.scale,
		Strategy:    kernels.Staged,
		Weights:     true,
		Scores:      true,
		MatrixDType: &f32,
	})
	if err != nil {
		return nil, err
	}
	if res.Weights == nil || res.Scores == nil {
		return nil, fmt.Errorf("backend %s returned no weights or scores", be.Name())
	}
	ex.scores, ex.weights, ex.output = res.Scores, res.Weights, res.Out

	ex.rounded = &kernels.Tensor{Shape: append([]int(nil), ex.weights.Shape...), Layout: kernels.BHND, Data: make([]float32, len(ex.weights.Data))}
	nk := ex.weights.Shape[len(ex.weights.Shape)-1]
	for i := 0; i+nk <= len(ex.weights.Data); i += nk {
		roundTenths(ex.rounded.Data[i:i+nk], ex.weights.Data[i:i+nk])
	}
	// outputs with the rounded weights: rounded·values, values as the
	// weight matrix of a projection.
	if ex.roundedOut, err = (kernels.Linear{W: ex.values}).Apply(ex.rounded); err != nil {
		return nil, err
	}
	return ex, nil
}

// roundTenths rounds a row of weights to tenths the way the tutorial's
// figures are, keeping the row's sum: each weight is cut down to tenths
// and the tenths still missing go to the weights that lost most (largest
// remainder). Plain rounding would give 0.1, 0.5, 0.5 for the first row,
// which sums to 1.1; the tutorial prints 0.0, 0.5, 0.5.
func roundTenths(dst, src []float32) {
	var sum float64
	tenths := make([]float64, len(src))
	order := make([]int, len(src))
	for j, p := range src {
		sum += float64(p)
		tenths[j] = math.Floor(float64(p) * 10)
		order[j] = j
	}
	rest := func(j int) float64 { return float64(src[j])*10 - tenths[j] }
	sort.SliceStable(order, func(a, b int) bool { return rest(order[a]) > rest(order[b]) })
	missing := int(math.Round(sum * 10))
	for _, t := range tenths {
		missing -= int(t)
	}
	for _, j := range order {
		if missing <= 0 {
			break
		}
		tenths[j]++
		missing--
	}
	for j, t := range tenths {
		dst[j] = float32(t / 10)
	}
}

// print writes the walk-through to w.
func (ex *explanation) print(w io.Writer) error {
	p := &printer{w: w}
	in := ex.in
	n := in.x.Shape[0]
	p.printf("Self-attention step by step (backend %s, scale %s)\n", ex.backend, compact(ex.scale))

	p.printf("\nStep 1: the inputs and the weights\n")
	p.matrix("x", in.x, compact)
	p.matrix("W_k", in.wk, compact)
	p.matrix("W_q", in.wq, compact)
	p.matrix("W_v", in.wv, compact)

	p.printf("\nStep 2: keys, one per input: keys = x · W_k\n")
	p.matrix("keys", ex.keys, compact)
	p.printf("\nStep 3: queries: queries = x · W_q\n")
	p.matrix("queries", ex.queries, compact)
	p.printf("\nStep 4: values: values = x · W_v\n")
	p.matrix("values", ex.values, compact)

	p.printf("\nStep 5: attention scores, each query against each key: scores = queries · keysᵀ · %s\n", compact(ex.scale))
	p.matrix("scores", ex.scores, compact)
	p.printf("\nStep 6: softmax across each row of scores\n")
	p.matrix("softmax", ex.weights, fixed(6))

	p.printf("\nStep 7: weighted values, softmax[i][j] · values[j] for each key j\n")
	dv := ex.values.Shape[1]
	nk := ex.values.Shape[0]
	for i := 0; i < n; i++ {
		wv := &kernels.Tensor{Shape: []int{nk, dv}, Data: make([]float32, nk*dv)}
		for j := 0; j < nk; j++ {
			pij := ex.weights.Data[i*nk+j]
			for d := 0; d < dv; d++ {
				wv.Data[j*dv+d] = pij * ex.values.Data[j*dv+d]
			}
		}
		p.matrix(fmt.Sprintf("input %d", i+1), wv, fixed(4))
	}

	p.printf("\nStep 8: outputs, the sum of each input's weighted values\n")
	p.matrix("outputs", ex.output, fixed(4))

	p.printf("\nThe tutorial's rounding\n")
	p.printf("The tutorial rounds the softmax to one decimal (keeping each row's sum of 1)\n" +
		"and weights the values with the rounded numbers, which is why its printed\n" +
		"outputs differ from the exact ones.\n")
	p.matrix("softmax rounded", ex.rounded, fixed(1))
	p.matrix("outputs with rounded softmax", ex.roundedOut, compact)
	p.matrix("exact outputs", ex.output, fixed(4))
	return p.err
}

// printer writes formatted text and keeps the first error.
type printer struct {
	w   io.Writer
	err error
}

func (p *printer) printf(format string, args ...any) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, args...)
	}
}

// matrix prints "  name = [[a, b], [c, d]]" on one line when it is
// short, and one row per line otherwise.
func (p *printer) matrix(name string, t *kernels.Tensor, num func(float64) string) {
	rows, cols := 1, len(t.Data)
	if len(t.Shape) == 2 {
		rows, cols = t.Shape[0], t.Shape[1]
	}
	rs := make([]string, rows)
	for i := range rows {
		cs := make([]string, cols)
		for j := range cols {
			cs[j] = num(float64(t.Data[i*cols+j]))
		}
		rs[i] = "[" + strings.Join(cs, ", ") + "]"
	}
	line := "  " + name + " = [" + strings.Join(rs, ", ") + "]"
	if len(line) <= 100 {
		p.printf("%s\n", line)
		return
	}
	pad := strings.Repeat(" ", len(name)+6)
	p.printf("  %s = [%s", name, strings.Join(rs, ",\n"+pad))
	p.printf("]\n")
}

// compact prints v with at most six significant digits and no trailing
// zeros: 2 rather than 2.000000, and 7.8 for a float32 7.80000019.
func compact(v float64) string {
	if v == 0 {
		return "0" // also −0
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// fixed prints with a fixed number of decimals.
func fixed(decimals int) func(float64) string {
	return func(v float64) string {
		s := strconv.FormatFloat(v, 'f', decimals, 64)
		if strings.TrimLeft(s, "-0.") == "" {
			s = strings.TrimPrefix(s, "-") // no −0.0000
		}
		return s
	}
}
