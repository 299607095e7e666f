package cpu

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// xmm matches an operand that is an XMM register (X0 … X31) as Go's
// assembler names it.
var xmm = regexp.MustCompile(`\bX([0-9]|[12][0-9]|3[01])\b`)

// TestNoLegacySSE holds the amd64 assembly to VEX and EVEX encodings
// wherever it touches an XMM register: a legacy SSE instruction (MOVSD,
// MOVQ X…, CVTSD2SS …) run while the upper halves of the vector
// registers are in use stalls Intel's cores. A single MOVSD load and
// store a row in softmaxRowsAVX512 once cost an Intel Xeon more than half
// its BenchmarkSoftmaxRows rate and a good part of fused attention's,
// where AMD's Zen 5 showed nothing; the commit that dropped them has the
// figures. Every mnemonic with an XMM operand must start with V (VMOVSD,
// VMOVQ …).
func TestNoLegacySSE(t *testing.T) {
	files, err := filepath.Glob("*_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	more, err := filepath.Glob("internal/sgemm/*_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, more...)
	if len(files) < 4 {
		t.Fatalf("found only %v", files)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(src), "\n") {
			line, _, _ = strings.Cut(line, "//")
			// A macro's body is instructions separated by ';', each line
			// ending in a backslash.
			for _, ins := range strings.Split(strings.TrimSuffix(strings.TrimSpace(line), `\`), ";") {
				fields := strings.Fields(ins)
				if len(fields) < 2 || strings.HasPrefix(fields[0], "#") || strings.HasSuffix(fields[0], ":") {
					continue
				}
				op := fields[0]
				if xmm.MatchString(strings.Join(fields[1:], " ")) && !strings.HasPrefix(op, "V") {
					t.Errorf("%s:%d: %s is a legacy SSE instruction on an XMM register; use its VEX form (V%s)", f, n+1, strings.TrimSpace(ins), op)
				}
			}
		}
	}
}
