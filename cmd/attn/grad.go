package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/attn-go/attn/kernels"
)

const gradSynopsis = "attn grad -q Q.npy -k K.npy -v V.npy -do DO.npy -dq DQ.npy -dk DK.npy -dv DV.npy [-causal] [-causal-offset N] [-window L,R] [-softcap C] [-scale S] [-layout bhnd|bnhd] [-backend auto|cpu|gpu]"

const gradHelp = `
attn grad computes the gradients of a loss through attention: given the
forward's inputs Q, K and V and DO = ∂L/∂O (the output's shape), it writes
∂L/∂Q, ∂L/∂K and ∂L/∂V (-dq -dk -dv, float32 .npy files of Q's, K's and
V's shapes; ∂L/∂K and ∂L/∂V summed over each KV group). It runs the
forward for O and the LSE, then the backend's backward pass
(kernels.AttentionGrad: FlashAttention-2's method, memory O(N)). Inputs
are float32 or float64 .npy files; the variant flags mean what they mean
for attn run. Only the CPU has a backward pass for now.
`

// gradFlags are attn grad's flags.
type gradFlags struct {
	q, k, v, do, dq, dk, dv string
	causal                  bool
	variants                kernels.Options
	scale                   float64
	layout                  kernels.Layout
	backendName             string
}

func runGrad(c *cmdEnv, args []string) error {
	var f gradFlags
	fs := flag.NewFlagSet("attn grad", flag.ContinueOnError)
	for _, s := range []struct {
		p          *string
		name, help string
	}{{&f.q, "q", "queries `Q.npy`"}, {&f.k, "k", "keys `K.npy`"}, {&f.v, "v", "values `V.npy`"},
		{&f.do, "do", "∂L/∂O `DO.npy`, the output's shape"}, {&f.dq, "dq", "write ∂L/∂Q to `DQ.npy`"},
		{&f.dk, "dk", "write ∂L/∂K to `DK.npy`"}, {&f.dv, "dv", "write ∂L/∂V to `DV.npy`"}} {
		fs.StringVar(s.p, s.name, "", s.help+" (required)")
	}
	fs.BoolVar(&f.causal, "causal", false, "causal masking, bottom-right aligned")
	fs.Func("causal-offset", "causal masking with query row i at key position `N` + i (implies -causal)", func(s string) error {
		o, err := parseOffset(s)
		f.variants.CausalOffset = o
		return err
	})
	fs.Func("window", "sliding window `L,R`", func(s string) error {
		w, err := parseWindow(s)
		f.variants.Window = w
		return err
	})
	fs.Func("softcap", "cap the scaled scores at ±`C`", func(s string) error {
		c, err := parseSoftcap(s)
		f.variants.Softcap = float64(c)
		return err
	})
	fs.Func("scale", "multiply Q·Kᵀ by `S`; 0 means 1/√D", func(s string) error {
		v, err := parseScale(s)
		f.scale = v
		return err
	})
	fs.Func("layout", "`layout` of Q, K, V and DO: bhnd (default) or bnhd", func(s string) error {
		switch s {
		case "bhnd":
			f.layout = kernels.BHND
		case "bnhd":
			f.layout = kernels.BNHD
		default:
			return fmt.Errorf("unknown layout %q (want bhnd or bnhd)", s)
		}
		return nil
	})
	fs.StringVar(&f.backendName, "backend", "auto", "`name` of the backend: auto, cpu or gpu")
	if err := c.parseFlags(fs, gradSynopsis, gradHelp, args); err != nil {
		return err
	}
	for _, r := range []struct{ name, val string }{{"-q", f.q}, {"-k", f.k}, {"-v", f.v}, {"-do", f.do}, {"-dq", f.dq}, {"-dk", f.dk}, {"-dv", f.dv}} {
		if r.val == "" {
			return usagef("missing required flag %s", r.name)
		}
	}
	if err := checkBackendName(f.backendName); err != nil {
		return err
	}
	return interruptible(func(ctx context.Context) error { return c.grad(ctx, &f) })
}

// grad reads the inputs, computes the gradients and writes them, each
// output replacing its target only once all are written.
func (c *cmdEnv) grad(ctx context.Context, f *gradFlags) error {
	var ts [4]*kernels.Tensor
	for i, path := range []string{f.q, f.k, f.v, f.do} {
		nf, err := openNpy(path)
		if err != nil {
			return err
		}
		if err := nf.checkFloat(); err != nil {
			nf.f.Close()
			return err
		}
		a, err := nf.readFloats(ctx)
		nf.f.Close()
		if err != nil {
			return err
		}
		if err := a.checkFinite(false); err != nil {
			return err
		}
		f32 := kernels.Float32
		if ts[i], err = a.tensor(f.layout, &f32); err != nil {
			return err
		}
	}
	var outs [3]*pending
	defer func() {
		for _, p := range outs {
			p.discard()
		}
	}()
	for i, o := range []struct{ flag, path string }{{"-dq", f.dq}, {"-dk", f.dk}, {"-dv", f.dv}} {
		var err error
		if outs[i], err = reserve(o.flag, o.path); err != nil {
			return err
		}
	}
	be, err := c.openBackend(f.backendName)
	if err != nil {
		return err
	}
	defer be.Close()
	opts := f.variants
	opts.Scale, opts.Causal = f.scale, f.causal || opts.CausalOffset != nil
	g, err := kernels.AttentionGrad(ctx, be, ts[0], ts[1], ts[2], ts[3], &opts)
	if err != nil {
		return err
	}
	for i, t := range []*kernels.Tensor{g.DQ, g.DK, g.DV} {
		if err := outs[i].write(t.WriteNpy); err != nil {
			return err
		}
	}
	for _, p := range outs {
		if err := p.commit(); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.stdout, "wrote %s, %s, %s (%s)\n", f.dq, f.dk, f.dv, be.Name())
	return nil
}
