package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/attn-go/attn/kernels"
)

const gradSynopsis = "attn grad -q Q.npy -k K.npy -v V.npy -do DO.npy -dq DQ.npy -dk DK.npy -dv DV.npy [-o O.npy -lse L.npy] [-dsinks DS.npy] [-dbias DB.npy] [attn run's variant flags: -causal -causal-offset -window -softcap -alibi -sinks -kv-lens -bias -mask -scale -dtype -layout -cu-seqlens-q -cu-seqlens-k] [-block-mask M.npy -block-size S] [-indices I.npy] [-v-from-k DV, with no -v or -dv] [-backend auto|cpu|gpu]"

const gradHelp = `
attn grad computes the gradients of a loss through attention: given the
forward's inputs Q, K and V and DO = ∂L/∂O (the output's shape), it writes
∂L/∂Q, ∂L/∂K and ∂L/∂V (-dq -dk -dv: .npy files of Q's, K's and V's
shapes and dtypes; ∂L/∂K and ∂L/∂V summed over each KV group), the sink
logits' gradient (-dsinks, [H] float32, with -sinks) and the bias's
(-dbias, the bias's shape, with -bias). The forward's output and LSE
(-o, -lse: attn run's -o and -lse of the same inputs and flags) skip its
recomputation; without them the forward runs first. The backward is the
backend's (kernels.AttentionGrad: FlashAttention-2's method, memory
O(N)). The variant flags mean what they mean for attn run, and so does
-block-mask with -block-size (both backends skip the off blocks in the
backward too), and -indices (index lists: dK and dV summed into the
named rows only, on both backends); what the backward pass does not
take (a paged cache, quantized dtypes) is refused before any work. With
-v-from-k DV (V is K's first DV columns, MLA's latent cache) there is no
-v and no -dv: -dk carries V's gradient on the columns they share.
`

// gradFlags are attn grad's flags: attn run's variant flags, and its own
// files.
type gradFlags struct {
	run                       runFlags
	do, o, lse                string
	dq, dk, dv, dSinks, dBias string
}

func runGrad(c *cmdEnv, args []string) error {
	var f gradFlags
	fs := flag.NewFlagSet("attn grad", flag.ContinueOnError)
	for _, s := range []struct {
		p          *string
		name, help string
	}{{&f.run.q, "q", "queries `Q.npy` (required)"}, {&f.run.k, "k", "keys `K.npy` (required)"}, {&f.run.v, "v", "values `V.npy` (required)"},
		{&f.do, "do", "∂L/∂O `DO.npy`, the output's shape (required)"}, {&f.dq, "dq", "write ∂L/∂Q to `DQ.npy` (required)"},
		{&f.dk, "dk", "write ∂L/∂K to `DK.npy` (required)"}, {&f.dv, "dv", "write ∂L/∂V to `DV.npy` (required)"},
		{&f.o, "o", "the forward's output `O.npy` (attn run -o), with -lse: the forward is not run again"},
		{&f.lse, "lse", "the forward's log-sum-exp `L.npy` (attn run -lse), with -o"},
		{&f.dSinks, "dsinks", "write ∂L/∂sinks to `DS.npy`, [H] float32 (with -sinks)"},
		{&f.dBias, "dbias", "write ∂L/∂bias to `DB.npy`, the bias's shape (with -bias)"}} {
		fs.StringVar(s.p, s.name, "", s.help)
	}
	f.run.variantFlags(fs)
	fs.IntVar(&f.run.vFromK, "v-from-k", 0, "V is K's first `DV` columns (MLA's latent cache): give -k and no -v or -dv; -dk carries V's gradient on those columns")
	fs.StringVar(&f.run.blockMask, "block-mask", "", "block-sparse mask `M.npy`, as attn run's: a block that is 0 is neither computed nor given a gradient (needs -block-size)")
	fs.IntVar(&f.run.blockSize, "block-size", 0, "the block mask's blocks: `S` query rows by S keys")
	fs.StringVar(&f.run.indices, "indices", "", "sparse attention over chosen keys `I.npy`, as attn run's: [B, Heads, Nq, K] int32 or int64 key positions (Heads 1 or KVH; −1 none); the gradients of K and V go to the named rows only")
	if err := c.parseFlags(fs, gradSynopsis, gradHelp, args); err != nil {
		return err
	}
	if err := f.check(); err != nil {
		return err
	}
	return interruptible(func(ctx context.Context) error { return c.grad(ctx, &f) })
}

// check validates the flags on their own, before any file is opened.
func (f *gradFlags) check() error {
	var missing []string
	for _, r := range []struct{ name, val string }{{"-q", f.run.q}, {"-k", f.run.k}, {"-v", f.run.v}, {"-do", f.do}, {"-dq", f.dq}, {"-dk", f.dk}, {"-dv", f.dv}} {
		if r.val == "" && (f.run.vFromK == 0 || r.name != "-v" && r.name != "-dv") {
			missing = append(missing, r.name)
		}
	}
	switch {
	case len(missing) > 0:
		return usagef("missing required flag %s", strings.Join(missing, ", "))
	case f.run.vFromK < 0:
		return usagef("-v-from-k %d: want V's head dim, ≥ 1", f.run.vFromK)
	case f.run.vFromK > 0 && (f.run.v != "" || f.dv != ""):
		return usagef("-v-from-k takes V from K: give no -v, and no -dv (-dk carries V's gradient)")
	case (f.o == "") != (f.lse == ""):
		return usagef("-o and -lse give the forward's output and LSE together: give both or neither")
	case f.dSinks != "" && f.run.sinks == "":
		return usagef("-dsinks is the gradient of the sink logits: give -sinks")
	case f.dBias != "" && f.run.bias == "":
		return usagef("-dbias is the gradient of the bias: give -bias")
	case f.run.dtype != nil && f.run.dtype.Quantized():
		return usagef("-dtype %v: the backward pass takes f32, f16 and bf16 (quantized caches are not trained)", *f.run.dtype)
	case f.run.blockMask != "" && f.run.blockSize < 1:
		return usagef("-block-mask needs -block-size S ≥ 1, its blocks' rows and keys")
	case f.run.blockMask == "" && f.run.blockSize != 0:
		return usagef("-block-size %d without -block-mask", f.run.blockSize)
	}
	if err := f.run.checkSeqFlags(); err != nil {
		return err
	}
	if err := checkBackendName(f.run.backendName); err != nil {
		return err
	}
	// An output may not replace an input or another output.
	ins := []struct{ name, path string }{{"-q", f.run.q}, {"-k", f.run.k}, {"-v", f.run.v}, {"-do", f.do}, {"-o", f.o}, {"-lse", f.lse},
		{"-bias", f.run.bias}, {"-mask", f.run.mask}, {"-alibi", f.run.alibi}, {"-sinks", f.run.sinks}, {"-kv-lens", f.run.kvLens},
		{"-cu-seqlens-q", f.run.cuQ}, {"-cu-seqlens-k", f.run.cuK}, {"-block-mask", f.run.blockMask}, {"-indices", f.run.indices}}
	outs := f.outputs()
	for i, o := range outs {
		if o.path == "" {
			continue
		}
		for _, in := range ins {
			if in.path != "" && samePath(o.path, in.path) {
				return usagef("%s %s would overwrite the input %s %s", o.flag, o.path, in.name, in.path)
			}
		}
		for _, p := range outs[:i] {
			if p.path != "" && samePath(o.path, p.path) {
				return usagef("%s and %s both name %s", p.flag, o.flag, o.path)
			}
		}
	}
	return nil
}

// outputs are attn grad's output flags and paths ("" when not given).
func (f *gradFlags) outputs() []struct{ flag, path string } {
	return []struct{ flag, path string }{{"-dq", f.dq}, {"-dk", f.dk}, {"-dv", f.dv}, {"-dsinks", f.dSinks}, {"-dbias", f.dBias}}
}

// grad reads and checks the inputs as attn run does (every header and
// shape before any data), computes the gradients and writes them, each
// output replacing its target only once all are written.
func (c *cmdEnv) grad(ctx context.Context, f *gradFlags) error {
	files := map[string]*npyFile{}
	defer func() {
		for _, nf := range files {
			nf.f.Close()
		}
	}()
	if err := openRunInputs(&f.run, files); err != nil {
		return err
	}
	for _, in := range []struct{ key, path string }{{"do", f.do}, {"o", f.o}, {"lse", f.lse}} {
		if in.path == "" {
			continue
		}
		nf, err := openNpy(in.path)
		if err != nil {
			return err
		}
		files[in.key] = nf
		if err := nf.checkFloat(); err != nil {
			return err
		}
	}
	plan, err := planRun(ctx, &f.run, files)
	if err != nil {
		return err
	}
	opts := plan.opts
	gopts := &kernels.GradOptions{Options: opts, DBias: f.dBias != ""}
	outs := f.outputs()
	reserved := make([]*pending, len(outs))
	defer func() {
		for _, p := range reserved {
			p.discard()
		}
	}()
	for i, o := range outs {
		if o.path == "" {
			continue
		}
		if reserved[i], err = reserve(o.flag, o.path); err != nil {
			return err
		}
	}
	be, err := c.openBackend(f.run.backendName)
	if err != nil {
		return err
	}
	defer be.Close()
	if err := applyVariantFiles(ctx, plan.prob, files, opts); err != nil {
		return err
	}
	qkv, err := readQKV(ctx, &f.run, files, plan.prob)
	if err != nil {
		return err
	}
	if err := readBiasMask(ctx, &f.run, files, plan.prob, opts); err != nil {
		return err
	}
	// DO and the forward's output in the output's layout, the LSE as
	// attn run writes it.
	var extra [3]*kernels.Tensor
	for i, key := range []string{"do", "o", "lse"} {
		nf := files[key]
		if nf == nil {
			continue
		}
		a, err := nf.readFloats(ctx)
		if err != nil {
			return err
		}
		if !f.run.allowNonFinite {
			if err := a.checkFinite(key == "lse"); err != nil {
				return err
			}
		}
		layout := f.run.layout
		if key == "lse" {
			layout = kernels.BHND
		}
		if extra[i], err = a.tensor(layout, nil); err != nil {
			return err
		}
	}
	var g *kernels.Grads
	if extra[1] != nil {
		g, err = kernels.AttentionGradFrom(ctx, be, qkv[0], qkv[1], qkv[2], extra[0], &kernels.Result{Out: extra[1], LSE: extra[2]}, gopts)
	} else {
		g, err = kernels.AttentionGrad(ctx, be, qkv[0], qkv[1], qkv[2], extra[0], gopts)
	}
	if err != nil {
		return err
	}
	results := []*kernels.Tensor{g.DQ, g.DK, g.DV, nil, g.DBias}
	if g.DSinks != nil {
		results[3] = &kernels.Tensor{Shape: []int{len(g.DSinks)}, Data: g.DSinks}
	}
	var wrote []string
	for i, p := range reserved {
		if p == nil {
			continue
		}
		if err := p.write(results[i].WriteNpy); err != nil {
			return err
		}
		wrote = append(wrote, outs[i].path)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, p := range reserved {
		if p == nil {
			continue
		}
		if err := p.commit(); err != nil {
			return err
		}
	}
	fmt.Fprintf(c.stdout, "wrote %s (%s)\n", strings.Join(wrote, ", "), be.Name())
	return nil
}
