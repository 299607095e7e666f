package kernels_test

import (
	"bytes"
	"math"
	"slices"
	"testing"

	"github.com/attn-go/attn/kernels"
	"github.com/sbinet/npyio"
)

// What WriteNpy writes, npyio reads back with the same shape and values,
// and the data starts on a 64-byte boundary.
func TestWriteNpy(t *testing.T) {
	for _, tt := range []struct {
		shape []int
		data  []float32
	}{
		{[]int{}, []float32{1.5}},
		{[]int{3}, []float32{1, -2, float32(math.Inf(1))}},
		{[]int{2, 0, 4}, nil},
		{[]int{1, 2, 3, 2}, []float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
	} {
		var buf bytes.Buffer
		if err := (&kernels.Tensor{Shape: tt.shape, Data: tt.data}).WriteNpy(&buf); err != nil {
			t.Fatal(err)
		}
		if got := buf.Len() - 4*len(tt.data); got%64 != 0 {
			t.Errorf("shape %v: header of %d bytes, not a multiple of 64", tt.shape, got)
		}
		r, err := npyio.NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("shape %v: %v", tt.shape, err)
		}
		if r.Header.Descr.Type != "<f4" || r.Header.Descr.Fortran || !slices.Equal(r.Header.Descr.Shape, tt.shape) {
			t.Errorf("shape %v: header %+v", tt.shape, r.Header.Descr)
		}
		var got []float32
		if len(tt.data) > 0 {
			if err := r.Read(&got); err != nil {
				t.Fatal(err)
			}
		}
		if !slices.Equal(got, tt.data) {
			t.Errorf("shape %v: read %v, wrote %v", tt.shape, got, tt.data)
		}
	}
}

// A tensor whose data does not match its shape is refused, not written.
func TestWriteNpyShape(t *testing.T) {
	var buf bytes.Buffer
	if err := (&kernels.Tensor{Shape: []int{2, 3}, Data: make([]float32, 5)}).WriteNpy(&buf); err == nil || buf.Len() != 0 {
		t.Errorf("5 values for shape (2, 3): error %v, %d bytes written", err, buf.Len())
	}
}
