package cpu

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/attn-go/attn/backend"
	"github.com/attn-go/attn/cpu/internal/sgemm"
)

// TestKernelsExpected holds the kernels this CPU runs to what it must
// pick, derived apart from the code that picks them: on amd64 from
// /proc/cpuinfo's vendor and flags (less those GODEBUG turns off), by
// the rules kernel_amd64.go and bf16_amd64.go document (the f32 kernel
// by vendor, bfloat16 on AMX where the CPU has it, else VDPBF16PS on
// AMD's cores and widening on Intel's). Where /proc/cpuinfo says nothing
// of the CPU (another OS, qemu-user emulating arm64 on an x86 host) or a
// variable picks the kernel, a family is not asserted, and the test logs
// why. ATTN_EXPECT_KERNELS (family=name pairs, comma-separated) adds
// expectations of its own: CI says what an emulated CPU must pick, e.g.
// "sgemm=NEON 8×12,bf16narrow=integer NEON" under qemu's cortex-a72,
// which lacks FEAT_BF16, so that a fallback is seen to run rather than
// assumed.
func TestKernelsExpected(t *testing.T) {
	have := map[string]string{"sgemm": sgemm.Kernel(), "bf16": sgemm.BF16Kernel()}
	for k, v := range archKernels() {
		have[k] = v
	}
	t.Logf("kernels: %v", have)
	want, why := wantKernels(t)
	if why != "" {
		t.Logf("not asserted from /proc/cpuinfo: %s", why)
	}
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			t.Errorf("%s runs %q, this CPU must run %q", k, got, v)
		}
	}
}

// wantKernels is expectedKernels with $ATTN_EXPECT_KERNELS's
// family=name pairs over it (CI names what a qemu model must run, whose
// /proc/cpuinfo is the host's).
func wantKernels(t *testing.T) (map[string]string, string) {
	t.Helper()
	want, why := expectedKernels(t)
	if env := os.Getenv("ATTN_EXPECT_KERNELS"); env != "" {
		for _, kv := range strings.Split(env, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				t.Fatalf("ATTN_EXPECT_KERNELS: %q is not family=name", kv)
			}
			want[k] = v
		}
	}
	return want, why
}

// expectedKernels is what this CPU must run, by family, from
// /proc/cpuinfo, and why a family is left out.
func expectedKernels(t *testing.T) (map[string]string, string) {
	want := map[string]string{}
	if runtime.GOARCH != "amd64" || puregoBuild {
		if puregoBuild {
			want["sgemm"] = "none (gonum's pure-Go Sgemm)"
			want["bf16"] = "none (widened to float32 for Sgemm)"
		}
		return want, "only amd64's kernels are derived from /proc/cpuinfo"
	}
	info, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return want, err.Error()
	}
	flags := map[string]bool{}
	var intel bool
	for _, line := range strings.Split(string(info), "\n") {
		k, v, _ := strings.Cut(line, ":")
		switch strings.TrimSpace(k) {
		case "vendor_id":
			intel = strings.TrimSpace(v) == "GenuineIntel"
		case "flags":
			for _, f := range strings.Fields(v) {
				flags[f] = true
			}
		}
	}
	if len(flags) == 0 {
		return want, "/proc/cpuinfo lists no flags"
	}
	// GODEBUG=cpu.NAME=off takes a feature out; cpu.all=off all of them.
	off := map[string][]string{
		"avx512f": {"avx512f", "avx512dq", "avx512_bf16"}, "avx512dq": {"avx512dq"},
		"avx512bf16": {"avx512_bf16"}, "avx2": {"avx2"}, "fma": {"fma"},
		"amxtile": {"amx_tile"}, "amxbf16": {"amx_bf16"},
	}
	for _, kv := range strings.Split(os.Getenv("GODEBUG"), ",") {
		name, val, _ := strings.Cut(strings.TrimSpace(kv), "=")
		if f, ok := strings.CutPrefix(name, "cpu."); ok && val == "off" {
			if f == "all" {
				clear(flags)
			}
			for _, x := range off[f] {
				delete(flags, x)
			}
		}
	}
	var why []string
	// The vector loops, by family, as archKernels names them.
	width := x86Width
	avx2 := flags["avx2"] && flags["fma"]
	f16c := flags["avx2"] && flags["f16c"]
	want["exp"] = width(flags["avx512f"], avx2)
	want["half"] = width(flags["avx512f"], f16c)
	want["decode"] = width(flags["avx512f"], avx2 && f16c)
	want["decode8"] = width(flags["avx512f"] && avx2, avx2 && f16c)
	if os.Getenv(sgemm.EnvKernel) == "" {
		switch {
		case flags["avx512f"] && intel:
			want["sgemm"] = "AVX-512 6×64"
		case flags["avx512f"]:
			want["sgemm"] = "AVX-512 8×32"
		case flags["avx2"] && flags["fma"]:
			want["sgemm"] = "AVX2+FMA 6×16"
		default:
			want["sgemm"] = "none (gonum's pure-Go Sgemm)"
		}
	} else {
		why = append(why, "sgemm: "+sgemm.EnvKernel+" picks it")
	}
	dot := flags["avx512f"] && flags["avx512_bf16"]
	amx := dot && flags["amx_tile"] && flags["amx_bf16"]
	switch {
	case sgemm.BF16Setting() != "":
		why = append(why, "bf16: "+sgemm.EnvBF16+" picks it")
	case amx && strings.Contains(strings.Join(sgemm.BF16Notes(), "; "), "AMX off: refused"):
		why = append(why, "bf16: Linux refused AMX's tiles ("+strings.Join(sgemm.BF16Notes(), "; ")+")")
	case amx:
		want["bf16"] = "AMX-BF16 32×32 tiles (AVX512_BF16 8×32 at the edges)"
	case dot && !intel:
		want["bf16"] = "AVX512_BF16 8×32"
	default:
		want["bf16"] = "none (widened to float32 for Sgemm)"
	}
	return want, strings.Join(why, "; ")
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
		cmd := testChild("-test.run=^TestKernelEnv$", "-test.count=1")
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
