package main

// attn run's outputs: reserved before any work, written atomically
// once it is done (O, the weights, scores, LSE, a heatmap), or discarded.

import (
	"fmt"
	"io"
	"path/filepath"

	"github.com/attn-go/attn/cmd/attn/internal/heatmap"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
)

// runOutputs are attn run's outputs, each reserved (nil when its flag
// is not given).
type runOutputs struct {
	out, weights, scores, lse, heatmap, presentK, presentV *pending
}

// reserveOutputs reserves every output before anything is computed: a
// run that cannot write its results fails now, not after the work. The
// outputs are returned on an error too, for the caller to discard.
func reserveOutputs(f *runFlags) (*runOutputs, error) {
	o := &runOutputs{}
	for _, r := range []struct {
		flag, path string
		dst        **pending
	}{{"-o", f.out, &o.out}, {"-weights", f.weights, &o.weights}, {"-scores", f.scores, &o.scores}, {"-lse", f.lse, &o.lse},
		{"-heatmap", f.heatmap, &o.heatmap}, {"-present-k", f.presentK, &o.presentK}, {"-present-v", f.presentV, &o.presentV}} {
		if r.path == "" {
			continue
		}
		p, err := reserve(r.flag, r.path)
		if err != nil {
			return o, err
		}
		*r.dst = p
	}
	return o, nil
}

// discard removes every temporary file not committed.
func (o *runOutputs) discard() {
	for _, p := range []*pending{o.out, o.weights, o.scores, o.lse, o.heatmap, o.presentK, o.presentV} {
		p.discard()
	}
}

// write writes every output, the image too, and syncs it, replacing no
// target: the caller commits the files returned only once all are
// written, so that a failure, or a signal, leaves every target as it
// was. qkv are the tensors attention read, the present keys and values.
func (o *runOutputs) write(f *runFlags, plan *runPlan, res *kernels.Result, qkv [3]*kernels.Tensor) ([]*pending, error) {
	written := []*pending{o.out}
	if err := o.out.write(res.Out.WriteNpy); err != nil {
		return nil, err
	}
	if o.weights != nil {
		if res.Weights == nil {
			return nil, fmt.Errorf("the %s strategy returned no weights", res.Strategy)
		}
		if err := o.weights.write(res.Weights.WriteNpy); err != nil {
			return nil, err
		}
		written = append(written, o.weights)
	}
	if o.scores != nil {
		if res.Scores == nil {
			return nil, fmt.Errorf("the %s strategy returned no scores", res.Strategy)
		}
		if err := o.scores.write(res.Scores.WriteNpy); err != nil {
			return nil, err
		}
		written = append(written, o.scores)
	}
	if o.lse != nil {
		if res.LSE == nil {
			return nil, fmt.Errorf("the %s strategy returned no log-sum-exp", res.Strategy)
		}
		if err := o.lse.write(npyWriter(res.LSE.Shape, res.LSE.Data)); err != nil {
			return nil, err
		}
		written = append(written, o.lse)
	}
	if o.heatmap != nil {
		if res.Weights == nil {
			return nil, fmt.Errorf("the %s strategy returned no weights", res.Strategy)
		}
		img, err := drawRunHeatmap(f, plan.full, res.Weights.Float32s())
		if err != nil {
			return nil, err
		}
		if err := o.heatmap.write(writeBytes(img)); err != nil {
			return nil, err
		}
		written = append(written, o.heatmap)
	}
	for _, pr := range []struct {
		p *pending
		t *kernels.Tensor
	}{{o.presentK, qkv[1]}, {o.presentV, qkv[2]}} {
		if pr.p != nil {
			if err := pr.p.write(pr.t.WriteNpy); err != nil {
				return nil, err
			}
			written = append(written, pr.p)
		}
	}
	return written, nil
}

// report prints a line for each output written, naming the backend and
// the strategy that ran.
func (o *runOutputs) report(w io.Writer, f *runFlags, plan *runPlan, beName string, res *kernels.Result, qkv [3]*kernels.Tensor) {
	for _, r := range []struct {
		p    *pending
		t    *kernels.Tensor
		what string
	}{{o.out, res.Out, ""}, {o.weights, res.Weights, ""}, {o.scores, res.Scores, ", " + f.stage.String() + " scores"}, {o.lse, res.LSE, ""},
		{o.presentK, qkv[1], ", past and new keys"}, {o.presentV, qkv[2], ", past and new values"}} {
		if r.p != nil {
			fmt.Fprintf(w, "wrote %s: %s %s (%s, %s%s)\n", r.p.path, npyTypeName(r.t), operand.NpyShape(r.t.Shape), beName, res.Strategy, r.what)
		}
	}
	if o.heatmap != nil {
		full := plan.full
		fmt.Fprintf(w, "wrote %s: the %d×%d weights of head %d,%d (%s, %s)\n", f.heatmap, full[2], full[3], f.heatmapHead[0], f.heatmapHead[1], beName, res.Strategy)
	}
}

// npyTypeName is the NumPy type WriteNpy writes t as: float16 for a
// Float16 tensor, float32 otherwise (NumPy has no bfloat16).
func npyTypeName(t *kernels.Tensor) string {
	if t.DType == kernels.Float16 {
		return "float16"
	}
	return "float32"
}

// npyWriter is a pending.write of a float32 .npy file.
func npyWriter(shape []int, data []float32) func(io.Writer) error {
	return (&kernels.Tensor{Shape: shape, Data: data}).WriteNpy
}

// drawRunHeatmap draws the weights of the -heatmap-head head out of all the
// [B, H, Nq, Nk] weights p and returns the encoded image.
func drawRunHeatmap(f *runFlags, full [4]int, p []float32) ([]byte, error) {
	b, h, nq, nk := f.heatmapHead[0], f.heatmapHead[1], full[2], full[3]
	off := (b*full[1] + h) * nq * nk
	title := fmt.Sprintf("Attention weights: %s · %s", filepath.Base(f.q), filepath.Base(f.k))
	if full[0] > 1 || full[1] > 1 {
		title += fmt.Sprintf(", head %d,%d", b, h)
	}
	if f.causal && f.variants.CausalOffset == nil {
		title += ", causal"
	}
	if v := variantPhrase(f.variants); v != "" {
		title += ", " + v
	}
	for _, vf := range []struct{ path, what string }{{f.alibi, "ALiBi"}, {f.sinks, "sinks"}, {f.kvLens, "key lengths"}} {
		if vf.path != "" {
			title += ", " + vf.what
		}
	}
	img, err := drawHeatmap(f.heatmapFormat, nq, nk, p[off:off+nq*nk], &heatmap.Options{Title: title})
	if err != nil {
		return nil, fmt.Errorf("-heatmap %s: %v", f.heatmap, err)
	}
	return img, nil
}
