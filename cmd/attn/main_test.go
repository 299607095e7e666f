package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestUsageCommands: attn's usage, with no arguments (stderr, exit 2)
// and with -h (stdout, exit 0), names every command of the table with
// its summary, and each command's synopsis starts with its name. An
// unknown command is two lines: the problem with the commands' names,
// then the hint to run -h.
func TestUsageCommands(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
	}{
		{nil, 2},
		{[]string{"-h"}, 0},
		{[]string{"help"}, 0},
	} {
		code, stdout, stderr := runCmd(t, tc.args...)
		if code != tc.code {
			t.Errorf("attn %v: exit %d, want %d", tc.args, code, tc.code)
		}
		out := stdout + stderr
		for _, c := range commands {
			if c.summary == "" {
				t.Errorf("command %s has no summary", c.name)
			}
			if line := "\t" + pad(c.name) + " " + c.summary + "\n"; !strings.Contains(out, line) {
				t.Errorf("attn %v: the usage lacks %q:\n%s", tc.args, line, out)
			}
		}
	}
	code, stdout, stderr := runCmd(t, "frob")
	if code != 2 || stdout != "" || strings.Count(stderr, "\n") != 2 || !strings.HasSuffix(stderr, "Run \"attn -h\" for their usage.\n") {
		t.Errorf("attn frob: exit %d, stdout %q, stderr %q; want exit 2, the problem and the hint", code, stdout, stderr)
	}
	for _, c := range commands {
		if !strings.Contains(stderr, " "+c.name) {
			t.Errorf("attn frob: %q does not name the command %s", stderr, c.name)
		}
	}
	for _, c := range commands {
		if !strings.HasPrefix(c.synopsis, "attn "+c.name+" ") && c.synopsis != "attn "+c.name {
			t.Errorf("command %s: synopsis %q", c.name, c.synopsis)
		}
	}
}

// pad is name as the usage aligns it.
func pad(name string) string { return name + strings.Repeat(" ", max(9-len(name), 0)) }

// TestCLIDocFlags: docs/cli.md's synopsis gives every command of the
// table, and under each every flag that "attn <command> -h" lists, so
// that a flag added to a command is documented where a reader looks.
func TestCLIDocFlags(t *testing.T) {
	doc, err := os.ReadFile("../../docs/cli.md")
	if err != nil {
		t.Fatal(err)
	}
	synopses := cliSynopses(t, string(doc))
	flagLine := regexp.MustCompile(`(?m)^  (-[a-z0-9-]+)`)
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			syn, ok := synopses[c.name]
			if !ok {
				t.Fatalf("docs/cli.md's synopsis has no attn %s", c.name)
			}
			code, stdout, stderr := runCmd(t, c.name, "-h")
			if code != 0 {
				t.Fatalf("attn %s -h: exit %d: %s", c.name, code, stderr)
			}
			for _, m := range flagLine.FindAllStringSubmatch(stdout, -1) {
				if !regexp.MustCompile(regexp.QuoteMeta(m[1]) + `([^a-z0-9-]|$)`).MatchString(syn) {
					t.Errorf("attn %s -h lists %s, docs/cli.md's synopsis of attn %s does not", c.name, m[1], c.name)
				}
			}
		})
	}
}

// cliSynopses reads the synopsis block of docs/cli.md (its first code
// block): each command's line, "attn <name> …", with the indented lines
// that continue it.
func cliSynopses(t *testing.T, doc string) map[string]string {
	t.Helper()
	_, rest, ok := strings.Cut(doc, "```\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("docs/cli.md has no code block")
	}
	out := map[string]string{}
	name := ""
	for _, line := range strings.Split(block, "\n") {
		if cmd, ok := strings.CutPrefix(line, "attn "); ok {
			name, _, _ = strings.Cut(cmd, " ")
		} else if !strings.HasPrefix(line, " ") {
			name = ""
		}
		if name != "" {
			out[name] += line + "\n"
		}
	}
	return out
}
