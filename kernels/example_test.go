package kernels_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	_ "github.com/attn-go/attn/cpu" // registers the "cpu" backend
	"github.com/attn-go/attn/kernels"
)

// matrix builds a rank-2 tensor from rows.
func matrix(rows ...[]float32) *kernels.Tensor {
	t := &kernels.Tensor{Shape: []int{len(rows), len(rows[0])}}
	for _, r := range rows {
		t.Data = append(t.Data, r...)
	}
	return t
}

// show prints a rank-2 tensor as the tutorials do, one row per line.
func show(name, format string, t *kernels.Tensor) {
	fmt.Println(name + ":")
	cols := t.Shape[len(t.Shape)-1]
	for r := 0; r < len(t.Data)/cols; r++ {
		cells := make([]string, cols)
		for c := range cells {
			cells[c] = fmt.Sprintf(format, t.Data[r*cols+c])
		}
		fmt.Println("  [" + strings.Join(cells, ", ") + "]")
	}
}

// The illustrated self-attention walk-through: three tokens of four
// features, projected to keys, queries and values of three, scored with
// scale 1, softmaxed and summed.
func Example_selfAttention() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()

	x := matrix([]float32{1, 0, 1, 0}, []float32{0, 2, 0, 2}, []float32{1, 1, 1, 1})
	wk := kernels.Linear{W: matrix([]float32{0, 0, 1}, []float32{1, 1, 0}, []float32{0, 1, 0}, []float32{1, 1, 0})}
	wq := kernels.Linear{W: matrix([]float32{1, 0, 1}, []float32{1, 0, 0}, []float32{0, 0, 1}, []float32{0, 1, 1})}
	wv := kernels.Linear{W: matrix([]float32{0, 2, 0}, []float32{0, 3, 0}, []float32{1, 0, 3}, []float32{1, 1, 0})}

	keys, _ := wk.Apply(x)
	queries, _ := wq.Apply(x)
	values, _ := wv.Apply(x)
	show("keys", "%g", keys)
	show("queries", "%g", queries)
	show("values", "%g", values)

	res, err := kernels.Attention(context.Background(), be, queries, keys, values,
		&kernels.Options{Scale: 1, Scores: true, Weights: true})
	if err != nil {
		log.Fatal(err)
	}
	show("scores", "%g", res.Scores)
	show("softmax", "%.6f", res.Weights)
	show("outputs", "%.4f", res.Out)
	// Output:
	// keys:
	//   [0, 1, 1]
	//   [4, 4, 0]
	//   [2, 3, 1]
	// queries:
	//   [1, 0, 2]
	//   [2, 2, 2]
	//   [2, 1, 3]
	// values:
	//   [1, 2, 3]
	//   [2, 8, 0]
	//   [2, 6, 3]
	// scores:
	//   [2, 4, 4]
	//   [4, 16, 12]
	//   [4, 12, 10]
	// softmax:
	//   [0.063379, 0.468311, 0.468311]
	//   [0.000006, 0.982008, 0.017986]
	//   [0.000295, 0.880537, 0.119168]
	// outputs:
	//   [1.9366, 6.6831, 1.5951]
	//   [2.0000, 7.9640, 0.0540]
	//   [1.9997, 7.7599, 0.3584]
}

// The five-token example: each token's features serve as its query, key
// and value, and the default scale is 1/√4.
func Example_fiveTokens() {
	be, err := kernels.Open("cpu")
	if err != nil {
		log.Fatal(err)
	}
	defer be.Close()

	tokens := matrix(
		[]float32{1, 0, 1, 0},
		[]float32{0, 1, 0, 1},
		[]float32{1, 1, 0, 0},
		[]float32{0, 0, 1, 1},
		[]float32{1, 0.5, 0.5, 0},
	)
	res, err := kernels.Attention(context.Background(), be, tokens, tokens, tokens,
		&kernels.Options{Weights: true})
	if err != nil {
		log.Fatal(err)
	}
	show("weights", "%.4f", res.Weights)
	// Output:
	// weights:
	//   [0.2976, 0.1095, 0.1805, 0.1805, 0.2318]
	//   [0.1205, 0.3275, 0.1986, 0.1986, 0.1547]
	//   [0.1805, 0.1805, 0.2976, 0.1095, 0.2318]
	//   [0.1986, 0.1986, 0.1205, 0.3275, 0.1547]
	//   [0.2374, 0.1440, 0.2374, 0.1440, 0.2374]
}
