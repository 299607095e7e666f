package bench

import (
	"runtime/debug"
	"strings"
	"testing"
)

func TestCommandLine(t *testing.T) {
	attn := &debug.BuildInfo{Path: "github.com/attn-go/attn/cmd/attn", Main: debug.Module{Path: "github.com/attn-go/attn"}}
	tagged := &debug.BuildInfo{Path: attn.Path, Main: attn.Main, Settings: []debug.BuildSetting{{Key: "-tags", Value: "openblas,nogpu"}}}
	outside := &debug.BuildInfo{Path: "example.com/tool", Main: debug.Module{Path: "github.com/attn-go/attn"}}
	const tmp = "/tmp/go-build2816094217/b001/exe/attn"
	for _, tc := range []struct {
		name  string
		args  []string
		build *debug.BuildInfo
		want  string
	}{
		{"go run", []string{tmp, "bench", "-n", "256,512"}, attn, "go run ./cmd/attn bench -n 256,512"},
		{"go run with tags", []string{tmp, "bench"}, tagged, "go run -tags openblas,nogpu ./cmd/attn bench"},
		{"go run outside the module", []string{tmp, "bench"}, outside, "go run example.com/tool bench"},
		{"go run, no build info", []string{tmp, "bench"}, nil, "attn bench"},
		{"GOTMPDIR", []string{"/scratch/me/go-build123/b001/exe/attn", "bench"}, attn, "go run ./cmd/attn bench"},
		{"windows", []string{`C:\Users\me\AppData\Local\Temp\go-build99\b001\exe\attn.exe`, "bench"}, nil, "attn bench"},
		{"installed", []string{"/home/me/go/bin/attn", "bench"}, attn, "/home/me/go/bin/attn bench"},
		{"an exe directory of its own", []string{"/opt/exe/attn", "bench"}, attn, "/opt/exe/attn bench"},
		{"quoted", []string{"attn", "bench", "-out", "my results", "-peers", "it's"}, nil, `attn bench -out 'my results' -peers 'it'\''s'`},
		{"empty argument", []string{"attn", "-x", ""}, nil, "attn -x ''"},
		{"none", nil, attn, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := commandLine(tc.args, tc.build); got != tc.want {
				t.Errorf("commandLine(%q) = %q, want %q", tc.args, got, tc.want)
			}
		})
	}
}

func TestRerunnable(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"/tmp/go-build2816094217/b001/exe/attn bench -backend cpu", "attn bench -backend cpu"},
		{"/tmp/go-build2816094217/b001/exe/attn", "attn"},
		{"go run ./cmd/attn bench", "go run ./cmd/attn bench"},
		{"attn bench -n 1024,4096 (trimmed from docs/bench/results.json)", "attn bench -n 1024,4096 (trimmed from docs/bench/results.json)"},
		{"", ""},
	} {
		if got := rerunnable(tc.cmd); got != tc.want {
			t.Errorf("rerunnable(%q) = %q, want %q", tc.cmd, got, tc.want)
		}
	}
}

// results.md shows a report's command as one a reader can run, even one
// recorded with the path of go run's binary before that was fixed.
func TestMarkdownCommand(t *testing.T) {
	r := &Report{Command: "/tmp/go-build2816094217/b001/exe/attn bench -backend cpu", Versions: map[string]string{}, Env: map[string]string{}}
	var md strings.Builder
	if err := r.WriteMarkdown(&md); err != nil {
		t.Fatal(err)
	}
	if got := md.String(); !strings.Contains(got, "\n    attn bench -backend cpu\n") || strings.Contains(got, "go-build") {
		t.Errorf("results.md does not give the command as attn bench -backend cpu:\n%s", got)
	}
}
