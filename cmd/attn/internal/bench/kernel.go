package bench

import (
	"runtime"
	"slices"
	"strings"
	"unicode"

	"golang.org/x/sys/cpu"

	"github.com/attn-go/attn/backend"
)

// The same build of attn runs at very different speeds on different
// x86 CPUs: the AVX-512 micro-kernel does about twice the GFLOP/s of the
// AVX2 one, which a CPU without AVX-512 (or GODEBUG=cpu.avx512f=off)
// gets. A number that does not say which kernel it ran on cannot be
// compared with another, so every point of attn's CPU backend records
// it, and the table, the CSV, the Markdown and the charts name it.

// CPUKernel names the matrix-multiply kernel a CPU backend runs on, in a
// few words: "AVX-512 8×32" or "AVX2+FMA 6×16" (attn's own micro-kernels),
// "gonum pure Go", or "OpenBLAS 0.3.21 Cooperlake" (the version and the
// core type OpenBLAS picked). It is read from the backend's own account
// of its BLAS (Info().Adapter.Driver, falling back to Info().Detail), so
// it is the kernel that backend really runs, GODEBUG and build tags
// included. It is "" for a backend that is not a CPU one.
func CPUKernel(info backend.Info) string {
	if info.Kind != backend.KindCPU {
		return ""
	}
	if k := kernelName(info.Adapter.Driver); k != "" {
		return k
	}
	return kernelName(info.Detail)
}

// kernelName finds the kernel in s, a CPU backend's Driver, Detail, or
// a point's Version (which holds the Detail): the cpu package names its
// BLAS (cpu/blas.go) as
//
//	attn sgemm (AVX-512 8×32 micro-kernel), gonum v0.17.0
//	gonum v0.17.0 (pure Go)
//	OpenBLAS OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Cooperlake MAX_THREADS=64 via gonum/netlib
//
// It returns "" when s names none of them.
func kernelName(s string) string {
	if _, rest, ok := strings.Cut(s, "attn sgemm ("); ok {
		if k, _, ok := strings.Cut(rest, ")"); ok {
			return strings.TrimSuffix(k, " micro-kernel")
		}
	}
	if i := strings.Index(s, "OpenBLAS "); i >= 0 {
		return openBLASName(s[i:])
	}
	if strings.Contains(s, "(pure Go)") {
		return "gonum pure Go"
	}
	return ""
}

// openBLASName shortens OpenBLAS's openblas_get_config() to its version
// and the core type it runs on: the words with a digit first, and the
// words in mixed case (the core: Haswell, SkylakeX, Cooperlake), leaving
// out the build options in capitals (DYNAMIC_ARCH, MAX_THREADS=64).
func openBLASName(s string) string {
	s, _, _ = strings.Cut(s, " via ")
	s, _, _ = strings.Cut(s, ",")
	name := []string{"OpenBLAS"}
	for _, w := range strings.Fields(s) {
		if w == "OpenBLAS" || strings.ContainsAny(w, "=/") {
			continue
		}
		if r := []rune(w); unicode.IsDigit(r[0]) || strings.ToUpper(w) != w {
			name = append(name, w)
		}
	}
	return strings.Join(name, " ")
}

// backendKernel is CPUKernel of be.
func backendKernel(be backend.Backend) string { return CPUKernel(be.Info()) }

// UnknownKernel stands for the kernel of an attn-cpu point that does not
// say which it ran on.
const UnknownKernel = "unknown kernel"

// KernelName is the CPU kernel pt ran on: its CPUKernel, or for a point of
// a report written before points recorded it, the kernel its Version
// names (the CPU backend's Detail holds its BLAS), or UnknownKernel. It
// is "" for a point not of attn's CPU backend.
func (pt Point) KernelName() string {
	if pt.Impl != "attn-cpu" {
		return ""
	}
	if pt.CPUKernel != "" {
		return pt.CPUKernel
	}
	if k := kernelName(pt.Version); k != "" {
		return k
	}
	return UnknownKernel
}

// cpuKernels lists the distinct kernels attn-cpu's points ran on, in the
// order they first appear; nil when no point is attn-cpu's.
func cpuKernels(points []Point) []string {
	var ks []string
	for _, pt := range points {
		if k := pt.KernelName(); k != "" && !slices.Contains(ks, k) {
			ks = append(ks, k)
		}
	}
	return ks
}

// kernelPhrase says which kernel attn-cpu ran on, "attn-cpu kernel
// AVX-512 8×32", or "" when no point is attn-cpu's.
func kernelPhrase(points []Point) string {
	ks := cpuKernels(points)
	switch len(ks) {
	case 0:
		return ""
	case 1:
		return "attn-cpu kernel " + ks[0]
	}
	return "attn-cpu kernels " + strings.Join(ks, ", ")
}

// cpuFeatures records the instruction-set extensions attn's kernels (and
// a peer's) choose between, as golang.org/x/sys/cpu reports them: after
// GODEBUG, so cpu.avx512f=off reads false here, as the kernels see it.
// Nil on an architecture where attn picks no kernel by feature.
func cpuFeatures() map[string]bool {
	switch runtime.GOARCH {
	case "amd64", "386":
		return map[string]bool{
			"avx2":        cpu.X86.HasAVX2,
			"fma":         cpu.X86.HasFMA,
			"avx512f":     cpu.X86.HasAVX512F,
			"avx512_bf16": cpu.X86.HasAVX512BF16,
		}
	case "arm64":
		return map[string]bool{
			"asimd": cpu.ARM64.HasASIMD,
			"sve":   cpu.ARM64.HasSVE,
		}
	}
	return nil
}

// featureList is the features m says the CPU has, space-separated in
// alphabetical order: "avx2 avx512_bf16 avx512f fma".
func featureList(m map[string]bool) string {
	var have []string
	for f, ok := range m {
		if ok {
			have = append(have, f)
		}
	}
	slices.Sort(have)
	return strings.Join(have, " ")
}
