package kernels_test

import (
	"context"
	"errors"
	"fmt"
	"log"

	_ "github.com/attn-go/attn/cpu" // registers the "cpu" backend
	"github.com/attn-go/attn/kernels"
)

// Open a backend by name. "auto" picks a GPU when one opens, else the
// CPU; only the backends a program imports (for their side effect) are
// registered.
func ExampleOpen() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	fmt.Println(be.Name(), "stores halves:", be.Caps().Half)

	_, err = kernels.Open("tpu")
	fmt.Println(errors.Is(err, kernels.ErrUnknownBackend))
	// Output:
	// cpu stores halves: true
	// true
}

// Causal attention over one sequence of three tokens, laid out as model
// code stores it ([B, N, H, D], BNHD), with two query heads sharing one
// key/value head (GQA), a sliding window of two keys (token 2 sees
// tokens 1 and 2) and each row's log-sum-exp, as the README's snippet
// asks for them.
func ExampleAttention() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()

	q := &kernels.Tensor{Shape: []int{1, 3, 2, 2}, Layout: kernels.BNHD, Data: []float32{
		1, 0, 0, 1, // token 0: head 0, head 1
		0, 1, 1, 0, // token 1
		1, 1, -1, -1, // token 2
	}}
	k := &kernels.Tensor{Shape: []int{1, 3, 1, 2}, Layout: kernels.BNHD, Data: []float32{1, 0, 0, 1, 1, 1}}
	v := &kernels.Tensor{Shape: []int{1, 3, 1, 2}, Layout: kernels.BNHD, Data: []float32{1, 0, 0, 1, 0.5, 0.5}}
	res, err := kernels.Attention(context.Background(), be, q, k, v, &kernels.Options{
		Causal: true,
		Window: &kernels.Window{Left: 1}, // a sliding window of 2 keys
		LSE:    true,
	})
	if err != nil {
		log.Fatal(err)
	}
	for n := range 3 {
		fmt.Printf("token %d: head 0 %.4f, head 1 %.4f\n", n, res.Out.Data[n*4:n*4+2], res.Out.Data[n*4+2:n*4+4])
	}
	fmt.Printf("LSE %.4f\n", res.LSE.Data) // [B, H, Nq]
	// Output:
	// token 0: head 0 [1.0000 0.0000], head 1 [1.0000 0.0000]
	// token 1: head 0 [0.3302 0.6698], head 1 [0.6698 0.3302]
	// token 2: head 0 [0.3349 0.6651], head 1 [0.1651 0.8349]
	// LSE [0.7071 1.1079 1.8150 0.0000 1.1079 -0.3063]
}

// The variants are options of their own, one level deep: here a causal
// sliding window of two keys (Mistral's), each query seeing its own key
// and the one before, and a causal offset that aligns the three queries
// at key positions 1, 2 and 3 of four (a past of one key), which needs
// Causal beside it. With every score equal, each output is the mean of
// the values its query sees.
func ExampleOptions() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()

	q := &kernels.Tensor{Shape: []int{3, 1}, Data: []float32{0, 0, 0}} // [Nq, D]
	k := &kernels.Tensor{Shape: []int{4, 1}, Data: []float32{0, 0, 0, 0}}
	v := &kernels.Tensor{Shape: []int{4, 1}, Data: []float32{1, 2, 3, 4}}
	one := 1
	res, err := kernels.Attention(context.Background(), be, q, k, v, &kernels.Options{
		Causal:       true,
		CausalOffset: &one,
		Window:       &kernels.Window{Left: 1, Right: 0},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.1f\n", res.Out.Data)

	_, err = kernels.Attention(context.Background(), be, q, k, v, &kernels.Options{CausalOffset: &one})
	fmt.Println(errors.Is(err, kernels.ErrShape))
	// Output:
	// [1.5 2.5 3.5]
	// true
}

// Sequences of different lengths packed end to end, as FlashAttention's
// varlen API takes them: rows cu[b] … cu[b+1]−1 of Q, K and V are
// sequence b's, and causal masking is per sequence.
func ExampleAttention_packed() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()

	// Two sequences, of 1 and 3 tokens: [total, H, D] with H=1, D=2.
	x := &kernels.Tensor{Shape: []int{4, 1, 2}, Layout: kernels.BNHD, Data: []float32{
		5, 5, // sequence 0
		1, 0, 0, 1, 1, 1, // sequence 1
	}}
	cu := []int{0, 1, 4}
	res, err := kernels.Attention(context.Background(), be, x, x, x, &kernels.Options{
		Causal:     true,
		CuSeqlensQ: cu,
		CuSeqlensK: cu,
	})
	if err != nil {
		log.Fatal(err)
	}
	for row := range 4 {
		fmt.Printf("row %d: %.4f\n", row, res.Out.Data[row*2:row*2+2])
	}
	// Output:
	// row 0: [5.0000 5.0000]
	// row 1: [1.0000 0.0000]
	// row 2: [0.3302 0.6698]
	// row 3: [0.7517 0.7517]
}

// A contiguous KV cache for two sequences: append each prompt, then
// attend one new query per sequence over everything its sequence holds.
// Appends check and upload only the new rows; Attend uploads only the
// queries.
func ExampleKVCache() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	cache, err := kernels.NewKVCache(be, 2, 8, kernels.CacheConfig{KVHeads: 1, D: 2, Layout: kernels.BNHD})
	if err != nil {
		log.Fatal(err)
	}
	defer cache.Release()

	// rows makes n tokens' keys or values: [n, KVHeads, D].
	rows := func(xs ...float32) *kernels.Tensor {
		return &kernels.Tensor{Shape: []int{len(xs) / 2, 1, 2}, Data: xs}
	}
	if err := cache.Append(0, rows(1, 0, 0, 1), rows(10, 0, 0, 10)); err != nil {
		log.Fatal(err)
	}
	if err := cache.Append(1, rows(0, 1), rows(3, 4)); err != nil {
		log.Fatal(err)
	}
	q := &kernels.Tensor{Shape: []int{2, 1, 1, 2}, Layout: kernels.BNHD, Data: []float32{4, 0, 1, 1}} // [B, Nq, H, D]
	out, _ := kernels.NewTensor(kernels.BNHD, 2, 1, 1, 2)
	if err := cache.Attend(context.Background(), q, out, nil, nil); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("lengths %d %d: %.4f\n", cache.Len(0), cache.Len(1), out.Data)

	// A full sequence is ErrCacheFull, and the cache is unchanged.
	err = cache.Append(1, rows(make([]float32, 16)...), rows(make([]float32, 16)...))
	fmt.Println(errors.Is(err, kernels.ErrCacheFull), cache.Len(1))
	// Output:
	// lengths 2 1: [9.4419 0.5581 3.0000 4.0000]
	// true 1
}

// An MLA cache (multi-head latent attention, DeepSeek V2/V3) stores one
// latent row a token and reads V as its first VFromK columns: here rows
// of D = 3 whose first 2 values are V, two query heads over the one
// latent head, and no V appended.
func ExampleCacheConfig_vFromK() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	cfg := kernels.CacheConfig{KVHeads: 1, D: 3, Layout: kernels.BNHD, VFromK: 2}
	pool, err := kernels.NewPagePool(be, 16, 4, cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer pool.Release()
	seq, err := pool.NewSeq()
	if err != nil {
		log.Fatal(err)
	}
	defer seq.Release()
	latent := &kernels.Tensor{Shape: []int{2, 1, 3}, Data: []float32{ // [n, KVHeads, D]
		10, 0, 1, // token 0: V is (10, 0)
		0, 10, -1, // token 1: V is (0, 10)
	}}
	if err := seq.Append(latent, nil); err != nil {
		log.Fatal(err)
	}
	// Head 0's query matches token 0's last column, head 1's token 1's.
	q := &kernels.Tensor{Shape: []int{1, 1, 2, 3}, Layout: kernels.BNHD, Data: []float32{0, 0, 20, 0, 0, -20}}
	out, _ := kernels.NewTensor(kernels.BNHD, 1, 1, 2, 2) // [1, Nq, H, Dv]
	if err := pool.Attend(context.Background(), []*kernels.Seq{seq}, q, out, nil, &kernels.AttendOptions{Scale: 1}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("head 0 %.3f, head 1 %.3f\n", out.Data[:2], out.Data[2:])

	// A V given to it is refused.
	err = seq.Append(latent, latent)
	fmt.Println(errors.Is(err, kernels.ErrShape), seq.Len())
	// Output:
	// head 0 [10.000 0.000], head 1 [0.000 10.000]
	// true 2
}

// The conversions between dtypes round to nearest even; a finite value
// float16 cannot hold is refused, naming it.
func ExampleTensor_Convert() {
	t := &kernels.Tensor{Shape: []int{4}, Data: []float32{1, 1.0 / 3, 65504, -0.0001}}
	h, err := t.Convert(kernels.Float16)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%v %#04x\n", h.DType, h.Bits)
	fmt.Println(h.Float32s())

	big := &kernels.Tensor{Shape: []int{2}, Data: []float32{1, 70000}}
	_, err = big.Convert(kernels.Float16)
	fmt.Println(errors.Is(err, kernels.ErrNonFinite))
	// Output:
	// f16 [0x3c00 0x3555 0x7bff 0x868e]
	// [1 0.33325195 65504 -0.000100016594]
	// true
}

// ConcatSeq grows a past by this step's keys along the sequence axis
// (ONNX Attention's present_key), each read in its own layout: a BHND
// past ([B, H, P, D], as ONNX stores it) extends a BNHD step.
func ExampleConcatSeq() {
	past := &kernels.Tensor{Shape: []int{1, 2, 2, 1}, Layout: kernels.BHND, Data: []float32{
		1, 2, // head 0, tokens 0 and 1
		10, 20, // head 1
	}}
	cur := &kernels.Tensor{Shape: []int{1, 1, 2, 1}, Layout: kernels.BNHD, Data: []float32{3, 30}} // token 2, both heads
	present, err := kernels.ConcatSeq(past, cur)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(present.Layout, present.Shape, present.Data)
	// Output:
	// BNHD [1 3 2 1] [1 10 2 20 3 30]
}

// Multi-head attention with its projections, as a transformer layer
// runs it: x [N, Dmodel] is projected to two heads' queries, keys and
// values, attended causally, and projected back.
func ExampleMultiHead() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()

	// eye is the n×n identity, as a Linear's weight [In, Out].
	eye := func(n int) kernels.Linear {
		w := &kernels.Tensor{Shape: []int{n, n}, Data: make([]float32, n*n)}
		for i := range n {
			w.Data[i*n+i] = 1
		}
		return kernels.Linear{W: w}
	}
	m := &kernels.MultiHead{Heads: 2, Q: eye(4), K: eye(4), V: eye(4), O: eye(4)}
	x := &kernels.Tensor{Shape: []int{2, 4}, Data: []float32{
		1, 0, 0, 1,
		0, 2, 2, 0,
	}}
	res, err := m.Forward(context.Background(), be, x, &kernels.Options{Causal: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Out.Shape)
	fmt.Printf("%.4f\n%.4f\n", res.Out.Data[:4], res.Out.Data[4:])
	// Output:
	// [2 4]
	// [1.0000 0.0000 0.0000 1.0000]
	// [0.0558 1.8884 1.8884 0.0558]
}

// The README's first example, as it stands there (TestReadmeExample
// holds the two to one text).
func Example_readme() {
	be, err := kernels.Open("auto") // a hardware GPU if one opens, else the CPU (software adapters passed over)
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()
	x := &kernels.Tensor{Shape: []int{3, 2}, Data: []float32{1, 0, 0, 1, 1, 1}} // [N, D]
	res, err := kernels.Attention(context.Background(), be, x, x, x,
		&kernels.Options{Causal: true})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%.4f\n", res.Out.Data) // [1.0000 0.0000 0.3302 0.6698 0.7517 0.7517]
	// Output:
	// [1.0000 0.0000 0.3302 0.6698 0.7517 0.7517]
}
