package cpu

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu/internal/sgemm"
)

// TestKernelsExpected logs the kernels this CPU runs and, where
// ATTN_EXPECT_KERNELS lists family=name pairs (comma-separated), fails
// unless each family runs that kernel: CI says what the emulated CPU
// must pick, e.g. "sgemm=NEON 8×12,bf16narrow=integer NEON" under qemu's
// cortex-a72, which lacks FEAT_BF16, so that a fallback is seen to run
// rather than assumed.
func TestKernelsExpected(t *testing.T) {
	have := map[string]string{"sgemm": sgemm.Kernel()}
	for k, v := range archKernels() {
		have[k] = v
	}
	t.Logf("kernels: %v", have)
	want := os.Getenv("ATTN_EXPECT_KERNELS")
	if want == "" {
		return
	}
	for _, kv := range strings.Split(want, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			t.Fatalf("ATTN_EXPECT_KERNELS: %q is not family=name", kv)
		}
		if got, ok := have[k]; !ok || got != v {
			t.Errorf("%s runs %q, ATTN_EXPECT_KERNELS wants %q", k, got, v)
		}
	}
}

// $ATTN_CPU_KERNEL and $ATTN_CPU_BF16 are read at start-up, so each
// setting runs in a child test process: one naming no choice this CPU
// has makes New fail with ErrUnavailable, naming the variable; one naming
// the kernel this CPU runs first opens as usual.
func TestKernelEnv(t *testing.T) {
	if v := os.Getenv("ATTN_TEST_KERNEL_CHILD"); v != "" {
		_, err := New()
		switch want := os.Getenv("ATTN_TEST_KERNEL_WANT"); {
		case want == "error" && (!errors.Is(err, backend.ErrUnavailable) || !strings.Contains(err.Error(), v)):
			t.Fatalf("New() with %s=%q: %v, want ErrUnavailable naming the variable", v, os.Getenv(v), err)
		case want != "error" && (err != nil || sgemm.Kernel() != want):
			t.Fatalf("New() with %s=%q: %v, kernel %q; want kernel %q", v, os.Getenv(v), err, sgemm.Kernel(), want)
		}
		return
	}
	cases := [][3]string{{sgemm.EnvKernel, "4x4", "error"}, {sgemm.EnvBF16, "fast", "error"}, {sgemm.EnvBF16, "widen", sgemm.Kernel()}}
	if sgemm.Accelerated() {
		name := sgemm.Kernel() // "AVX-512 6×64": its shape is the last field
		cases = append(cases, [3]string{sgemm.EnvKernel, name[strings.LastIndex(name, " ")+1:], name})
	}
	for _, c := range cases {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKernelEnv$", "-test.count=1")
		cmd.Env = append(os.Environ(), c[0]+"="+c[1], "ATTN_TEST_KERNEL_CHILD="+c[0], "ATTN_TEST_KERNEL_WANT="+c[2])
		out, err := cmd.CombinedOutput()
		if errors.Is(err, syscall.ENOEXEC) {
			// Under an emulator such as qemu-user without binfmt_misc
			// (go test -exec qemu-aarch64-static), the test binary is
			// not one this host can exec.
			t.Skipf("cannot run the test binary as a child: %v", err)
		}
		if err != nil {
			t.Errorf("%s=%s: %v\n%s", c[0], c[1], err, out)
		}
	}
}
