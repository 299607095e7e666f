package spirvmix

import (
	"strings"
	"testing"
)

func TestRatio(t *testing.T) {
	tests := []struct {
		a, b int
		want string
	}{
		{12, 1, "12.0"},
		{20, 3, "6.7"},
		{0, 4, "0.0"},
		{5, 0, "-"},
	}
	for _, tt := range tests {
		if got := Ratio(tt.a, tt.b); got != tt.want {
			t.Errorf("Ratio(%d, %d) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
	}
}

func TestFormat(t *testing.T) {
	r := analyzeFile(t, "nested.spvasm")
	tests := []struct {
		name, got, want string
	}{
		{"summary", r.Summary(), "2 functions, 3 loops, 3 loop counters, 4 UMin, 3 index clamps (2 Workgroup, 1 vector), 3 FAdd/FMul, 1 barriers, 3 conversions"},
		// L2: 12 FMAs over 1 global load of 16 bytes and 1 workgroup
		// load, no barrier; 1 counter and 2 clamps; 1 conversion.
		{"inner row", r.Loops[0].Row(), "L2*\tL1\t2\t43\t12\t1\t1\t0\t0\t0\t1\t2\t0\t12.0\t12.0\t-\t16.0\t3\t1"},
		{"outer row", r.Loops[1].Row(), "L1\t%main\t1\t32\t2\t2\t0\t1\t1\t1\t1\t1\t1\t1.0\t-\t2.0\t10.0\t2\t1"},
		{"summary row", r.SummaryRow("w", "k", r.Loops[0], true), "| w | k | 3, 3 | 4, 3 | L2 in L1 | 12 | 1 | 16.0 | 1 | 0 | 0 | 12.0 | 12.0 | - | 3 | 1 |"},
		{"later summary row", r.SummaryRow("", "", r.Loops[1], false), "|  |  |  |  | L1 | 2 | 2 | 10.0 | 0 | 1 | 1 | 1.0 | - | 2.0 | 2 | 1 |"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s:\n got %q\nwant %q", tt.name, tt.got, tt.want)
		}
	}
	var b strings.Builder
	if err := r.WriteTable(&b, "  ", true); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], "fma/gld") || !strings.Contains(lines[1], "L2*") || !strings.Contains(lines[2], "L3*") {
		t.Errorf("WriteTable with inner: want the header and L2, L3:\n%s", b.String())
	}
}
