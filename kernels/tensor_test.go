package kernels_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu"
	"github.com/attn-go/attn/kernels"
)

// TestNewTensorTooLarge: NewTensor and NewTensorOf refuse, before
// allocating, a tensor past the memory available (ErrTooLarge naming
// its shape), as NewPagePool does on the CPU backend, where the Go
// runtime would abort the process; 100 GiB is a user's mistaken call.
func TestNewTensorTooLarge(t *testing.T) {
	huge := []int{1 << 20, 1 << 20, 1 << 10} // 4 PiB of f32: past any host
	cases := []struct {
		name  string
		dt    kernels.DType
		shape []int
	}{
		{"f32 4 PiB", kernels.Float32, huge},
		{"f16 2 PiB", kernels.Float16, huge},
		{"bf16 64 TiB", kernels.BFloat16, []int{1 << 45}},
	}
	avail, ok := cpu.AvailableMemory()
	if gib100 := uint64(100) << 30; ok && avail < gib100 {
		cases = append(cases, struct {
			name  string
			dt    kernels.DType
			shape []int
		}{"f32 100 GiB", kernels.Float32, []int{1, 25 << 10, 1 << 20}})
	} else {
		t.Logf("100 GiB left out: %d bytes available (known: %v)", avail, ok)
	}
	if ok && avail < 1<<44 {
		n := int(avail/2 + 1) // f32: twice the memory there is
		cases = append(cases, struct {
			name  string
			dt    kernels.DType
			shape []int
		}{"twice the memory", kernels.Float32, []int{n}})
	}
	for _, c := range cases {
		x, err := kernels.NewTensorOf(c.dt, kernels.BHND, c.shape...)
		if !errors.Is(err, backend.ErrTooLarge) || x != nil || !containsAll(err, "tensor of shape") {
			t.Errorf("%s: NewTensorOf: %v, want ErrTooLarge naming the shape", c.name, err)
		}
		if c.dt == kernels.Float32 {
			if x, err := kernels.NewTensor(kernels.BNHD, c.shape...); !errors.Is(err, backend.ErrTooLarge) || x != nil {
				t.Errorf("%s: NewTensor: %v, want ErrTooLarge", c.name, err)
			}
		}
	}
	// Beside them, the sizes that always worked still do.
	for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16, kernels.BFloat16} {
		x, err := kernels.NewTensorOf(dt, kernels.BHND, 2, 3, 0, 4)
		if err != nil || len(x.Data)+len(x.Bits) != 0 || x.DType != dt {
			t.Errorf("%v empty: %v", dt, err)
		}
		if x, err = kernels.NewTensorOf(dt, kernels.BHND, 1, 2, 3, 4); err != nil || len(x.Data)+len(x.Bits) != 24 || (len(x.Bits) == 24) != dt.Half() {
			t.Errorf("%v: %v", dt, err)
		}
	}
	if _, err := kernels.NewTensor(kernels.BHND, 2, -1); !errors.Is(err, backend.ErrShape) {
		t.Errorf("negative dimension: %v, want ErrShape", err)
	}
	if _, err := kernels.NewTensor(kernels.BHND, 1<<40, 1<<40); !errors.Is(err, backend.ErrTooLarge) {
		t.Errorf("overflow: %v, want ErrTooLarge", err)
	}
}

// A tensor holds f32, f16 or bf16: Convert, NewTensorOf, a tensor's own
// DType and Options.OutDType refuse a cache's dtype (q8, fp8, q4) with
// ErrShape naming it as one, where they said "unknown dtype q4", and an
// unknown dtype as unknown.
func TestTensorRefusesCacheDTypes(t *testing.T) {
	x := &kernels.Tensor{Shape: []int{2, 32}, Data: make([]float32, 64)}
	for _, dt := range []kernels.DType{kernels.Q8, kernels.FP8, kernels.Q4, kernels.DType(200)} {
		want := dt.String() + " is a cache's dtype (CacheConfig.DType), which no tensor holds: want f32, f16 or bf16"
		if !dt.Quantized() {
			want = "unknown dtype " + dt.String()
		}
		check := func(what string, err error) {
			t.Helper()
			if !errors.Is(err, backend.ErrShape) || !strings.Contains(err.Error(), want) || dt.Quantized() && strings.Contains(err.Error(), "unknown") {
				t.Errorf("%s %v: %v; want ErrShape saying %q", what, dt, err, want)
			}
		}
		y, err := x.Convert(dt)
		if y != nil {
			t.Errorf("Convert(%v) returned a tensor", dt)
		}
		check("Convert", err)
		_, err = kernels.NewTensorOf(dt, kernels.BNHD, 2, 32)
		check("NewTensorOf", err)
		_, err = (&kernels.Tensor{Shape: []int{2, 32}, DType: dt, Data: make([]float32, 64)}).Convert(kernels.Float32)
		check("a tensor of dtype", err)
		be, err := cpu.New()
		if err != nil {
			t.Fatal(err)
		}
		q := &kernels.Tensor{Shape: []int{1, 1, 2, 32}, Data: make([]float32, 64)}
		_, err = kernels.Attention(context.Background(), be, q, q, q, &kernels.Options{OutDType: &dt})
		check("OutDType", err)
		be.Close()
	}
	// The dtypes a tensor holds convert.
	for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16, kernels.BFloat16} {
		if y, err := x.Convert(dt); err != nil || y.DType != dt {
			t.Errorf("Convert(%v): %v", dt, err)
		}
	}
}
