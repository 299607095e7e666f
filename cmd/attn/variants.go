package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/internal/operand"
	"github.com/attn-go/attn/kernels"
)

// parseWindow reads -window L,R: the keys a query sees on each side of
// its position, −1 for an unbounded side. The range of each side is
// backend's to check (Variants.Check).
func parseWindow(s string) (*backend.Window, error) {
	l, r, ok := strings.Cut(s, ",")
	left, err1 := strconv.Atoi(strings.TrimSpace(l))
	right, err2 := strconv.Atoi(strings.TrimSpace(r))
	if !ok || err1 != nil || err2 != nil {
		return nil, fmt.Errorf("%q is not L,R: two integers, each ≥ 0 or −1 for unbounded (127,0 is a causal window of 128 keys)", s)
	}
	w := &backend.Window{Left: left, Right: right}
	return w, backend.Variants{Window: w}.Check()
}

// parseSoftcap reads -softcap C. backend takes 0 for "no softcap"; on the
// command line the flag's absence says that, so 0 is refused rather than
// silently meaning none.
func parseSoftcap(s string) (float32, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if v == 0 {
		return 0, fmt.Errorf("softcap 0 caps nothing; give C > 0, or leave -softcap out for none")
	}
	c := float32(v)
	return c, backend.Variants{Softcap: c}.Check()
}

// parseOffset reads -causal-offset N.
func parseOffset(s string) (*int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("%q is not an integer", s)
	}
	return &n, backend.Variants{CausalOffset: &n}.Check()
}

// variantFiles are the .npy files of attn run's per-head and per-batch
// variants, as flags give them.
var variantFiles = []struct {
	key, flag string
	ints      bool // key lengths: int32 or int64; the others float
}{
	{"alibi", "-alibi", false},
	{"sinks", "-sinks", false},
	{"kvlens", "-kv-lens", true},
}

// checkVariantHeader refuses the variant file of key ("alibi", "sinks",
// "kvlens") when its type or rank cannot hold what its flag gives: a
// vector of floats (-alibi, -sinks) or of int32 or int64 (-kv-lens). Its
// length is backend's to check, against H or B, once it is read
// (applyVariantFiles).
func checkVariantHeader(key string, nf *npyFile) error {
	var flag string
	var ints bool
	for _, vf := range variantFiles {
		if vf.key == key {
			flag, ints = vf.flag, vf.ints
		}
	}
	t := nf.dtype
	want := "a vector of H float32 or float64 values, one per query head"
	if ints {
		want = "a vector of B int32 or int64 key counts, one per batch"
	}
	if ints && (t.kind != 'i' || (t.size != 4 && t.size != 8)) || !ints && (t.kind != 'f' || (t.size != 4 && t.size != 8)) {
		return fmt.Errorf("%s %s: dtype %s (%s); want %s", flag, nf.path, t.name(), t.descr, want)
	}
	if len(nf.shape) != 1 {
		return fmt.Errorf("%s %s has shape %s; want %s", flag, nf.path, operand.NpyShape(nf.shape), want)
	}
	return nil
}

// readInts reads an int32 or int64 vector.
func (nf *npyFile) readInts(ctx context.Context) ([]int, error) {
	t := nf.dtype
	out := make([]int, nf.n)
	err := nf.elements(ctx, func(i int, b []byte) {
		if t.size == 4 {
			out[i] = int(int32(t.order.Uint32(b)))
		} else {
			out[i] = int(int64(t.order.Uint64(b)))
		}
	})
	return out, err
}

// applyVariantFiles reads the variant files among files into opts and
// has backend validate each against the problem p (its sizes from the
// headers, its variants those opts had when Shapes.Check gave it): an
// error names the flag and the file, and wraps backend's, which names
// the value and the sizes. The files hold a value per head or per batch;
// reading them costs nothing next to Q, K and V, which are not read yet.
func applyVariantFiles(ctx context.Context, p backend.Problem, files map[string]*npyFile, opts *kernels.Options) error {
	for _, vf := range variantFiles {
		nf := files[vf.key]
		if nf == nil {
			continue
		}
		// Each file is checked alone against p, whose variants are the
		// flags' and a paged cache's lengths (-cache-lens): without
		// those every block would count as full.
		one := p
		if vf.ints {
			lens, err := nf.readInts(ctx)
			if err != nil {
				return err
			}
			opts.KVLens, one.KVLens = lens, lens
		} else {
			a, err := nf.readFloats(ctx)
			if err != nil {
				return err
			}
			if vf.key == "alibi" {
				opts.ALiBi, one.ALiBi = a.data, a.data
			} else {
				opts.Sinks, one.Sinks = a.data, a.data
			}
		}
		if err := one.Validate(); err != nil {
			return fmt.Errorf("%s %s: %w", vf.flag, nf.path, err)
		}
	}
	return nil
}

// variantPhrase describes the variants of v for the messages and the
// heatmap title: "causal offset -2, window 127,0, softcap 30, ALiBi,
// sinks, key lengths"; "" for none.
func variantPhrase(v backend.Variants) string {
	var parts []string
	if v.CausalOffset != nil {
		parts = append(parts, fmt.Sprintf("causal offset %d", *v.CausalOffset))
	}
	if w := v.Window; w != nil {
		parts = append(parts, fmt.Sprintf("window %d,%d", w.Left, w.Right))
	}
	if v.Softcap != 0 {
		parts = append(parts, fmt.Sprintf("softcap %g", v.Softcap))
	}
	if v.ALiBi != nil {
		parts = append(parts, "ALiBi")
	}
	if v.Sinks != nil {
		parts = append(parts, "sinks")
	}
	if v.KVLens != nil {
		parts = append(parts, "key lengths")
	}
	return strings.Join(parts, ", ")
}
