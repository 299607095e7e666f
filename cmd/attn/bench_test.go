package main

import (
	"strings"
	"testing"
)

func TestBenchCommand(t *testing.T) {
	code, stdout, stderr := runCmd(t, "bench", "-backend", "cpu", "-n", "16,33", "-heads", "2", "-kvheads", "1", "-d", "8", "-causal", "-budget", "1ms", "-min-runs", "2")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if got := strings.Count(stdout, "cpu"); got != 4 {
		t.Errorf("table has %d cpu rows, want 4:\n%s", got, stdout)
	}
	if !strings.Contains(stderr, "[4/4") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
	for _, bad := range [][]string{
		{"bench", "-n", "0"},
		{"bench", "-heads", "3", "-kvheads", "2"},
		{"bench", "-strategy", "auto"},
		{"bench", "-backend", "tpu"},
	} {
		if code, _, stderr := runCmd(t, bad...); code != 2 {
			t.Errorf("attn %v: exit %d (%s), want 2", bad, code, stderr)
		}
	}
}
