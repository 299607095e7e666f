// Command mutants applies the mutations listed in .ci/mutants/list.txt
// to attn's kernels, one at a time, runs the command named beside each,
// and fails if any mutant survives: if its command passes, or fails
// without a test failing ("--- FAIL" in its output, so that a skip, a
// build that no longer compiles or a missing adapter counts for
// nothing). Before the mutants, each distinct command runs once on the
// unmutated tree and must pass (-baseline=false: not, where the tests
// have just passed, as in CI).
//
// It works on a copy of the tracked files in a temporary folder, never
// on the checkout, so that a mutant cannot be left behind.
//
//	go run ./.ci/mutants [-list .ci/mutants/list.txt] [-only name,...] [-rev commit]
//
// The list holds blocks separated by blank lines, lines starting with #
// are comments:
//
//	name: lanedecode.wgsl: the teams' common maximum misses the last team
//	file: gpu/internal/shaders/lanedecode.wgsl
//	old:  for (var s = 1u; s < T; s++) {
//	new:  for (var s = 1u; s + 1u < T; s++) {
//	run:  ATTN_GPU_PLAN=hardware go test -count=1 -run '^TestConformance$/^FarScores$' ./gpu/conformance
//
// needs, optional, lists the CPU flags a kernel runs on (avx512f): where
// /proc/cpuinfo lacks one the mutant is not run, and says so.
// old must occur in file exactly once (else the list is stale and the
// run fails); old and new may be Go-quoted strings, for \n or \t. run is
// a bash command run in the copy's root.
package main

import (
	"bufio"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

type mutant struct {
	name, file, old, new, run string
	needs                     []string // CPU flags (/proc/cpuinfo's) the kernel runs on
	line                      int      // of its name in the list
}

func main() {
	list := flag.String("list", ".ci/mutants/list.txt", "the mutations")
	only := flag.String("only", "", "comma-separated names (or prefixes of names) to run; all when empty")
	baseline := flag.Bool("baseline", true, "run each command on the unmutated tree first (CI, whose test command ran them, does not)")
	rev := flag.String("rev", "", "a commit to judge (git archive); the checkout's tracked files, edits included, when empty")
	flag.Parse()
	ms, err := parse(*list)
	if err != nil {
		fatal(err)
	}
	if *only != "" {
		ms = pick(ms, strings.Split(*only, ","))
	}
	ms = runnable(ms)
	if len(ms) == 0 {
		fatal(errors.New("no mutant to run"))
	}
	root, err := copyTree(*rev)
	if err != nil {
		fatal(err)
	}
	defer os.RemoveAll(root)

	// Each mutation must apply, before anything runs.
	for _, m := range ms {
		src, err := os.ReadFile(filepath.Join(root, m.file))
		if err != nil {
			fatal(fmt.Errorf("%s:%d (%s): %v", *list, m.line, m.name, err))
		}
		if n := bytes.Count(src, []byte(m.old)); n != 1 {
			fatal(fmt.Errorf("%s:%d (%s): %q occurs %d times in %s, want once: the list is stale", *list, m.line, m.name, m.old, n, m.file))
		}
	}
	seen := map[string]bool{}
	for _, m := range ms {
		if !*baseline || seen[m.run] {
			continue
		}
		seen[m.run] = true
		fmt.Printf("== baseline: %s\n", m.run)
		out, err, d := runIn(root, m.run)
		if err != nil {
			os.Stdout.Write(tail(out, 4000))
			fatal(fmt.Errorf("the unmutated tree fails %q (%v): fix it before judging mutants", m.run, err))
		}
		if bytes.Contains(out, []byte("no tests to run")) {
			fatal(fmt.Errorf("%q runs no test in some package: its -run names a test that is not there", m.run))
		}
		fmt.Printf("   passes (%s)\n", d.Round(time.Second))
	}
	var survived []string
	for i, m := range ms {
		fmt.Printf("== mutant %d/%d: %s\n   %s: %q → %q\n", i+1, len(ms), m.name, m.file, m.old, m.new)
		path := filepath.Join(root, m.file)
		src, err := os.ReadFile(path)
		if err != nil {
			fatal(err)
		}
		if err := os.WriteFile(path, bytes.Replace(src, []byte(m.old), []byte(m.new), 1), 0o644); err != nil {
			fatal(err)
		}
		out, err, d := runIn(root, m.run)
		if werr := os.WriteFile(path, src, 0o644); werr != nil {
			fatal(werr)
		}
		switch {
		case err == nil:
			fmt.Printf("   SURVIVED: %s passes (%s)\n", m.run, d.Round(time.Second))
			survived = append(survived, m.name)
		case !bytes.Contains(out, []byte("--- FAIL")):
			os.Stdout.Write(tail(out, 2000))
			fmt.Printf("   SURVIVED: %s failed (%v) with no test failing (%s)\n", m.run, err, d.Round(time.Second))
			survived = append(survived, m.name)
		default:
			fmt.Printf("   killed: %s (%s)\n", firstFail(out), d.Round(time.Second))
		}
	}
	if len(survived) > 0 {
		fatal(fmt.Errorf("%d of %d mutants survived:\n  %s", len(survived), len(ms), strings.Join(survived, "\n  ")))
	}
	fmt.Printf("all %d mutants killed\n", len(ms))
}

// parse reads the list's blocks.
func parse(path string) ([]mutant, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var ms []mutant
	var cur *mutant
	end := func() error {
		if cur == nil {
			return nil
		}
		if cur.name == "" || cur.file == "" || cur.old == "" || cur.run == "" {
			return fmt.Errorf("%s:%d: a mutant needs name, file, old, new and run", path, cur.line)
		}
		ms = append(ms, *cur)
		cur = nil
		return nil
	}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		if strings.TrimSpace(line) == "" {
			if err := end(); err != nil {
				return nil, err
			}
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want key: value, got %q", path, n, line)
		}
		val = strings.TrimSpace(val)
		if strings.HasPrefix(val, `"`) {
			if val, err = strconv.Unquote(val); err != nil {
				return nil, fmt.Errorf("%s:%d: %v", path, n, err)
			}
		}
		if cur == nil {
			cur = &mutant{line: n}
		}
		switch key {
		case "name":
			cur.name = val
		case "file":
			cur.file = val
		case "old":
			cur.old = val
		case "new":
			cur.new = val
		case "run":
			cur.run = val
		case "needs":
			cur.needs = strings.Fields(val)
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q", path, n, key)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return ms, end()
}

// runnable drops, saying so, the mutants of kernels this CPU does not
// run (a mutant of an AVX-512 kernel survives on an AVX2 CPU).
func runnable(ms []mutant) []mutant {
	info, _ := os.ReadFile("/proc/cpuinfo")
	have := map[string]bool{}
	for _, l := range strings.Split(string(info), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "flags" {
			for _, f := range strings.Fields(v) {
				have[f] = true
			}
		}
	}
	var out []mutant
	for _, m := range ms {
		var lacks []string
		for _, f := range m.needs {
			if !have[f] {
				lacks = append(lacks, f)
			}
		}
		if len(lacks) > 0 {
			fmt.Printf("== not run: %s (this CPU lacks %s)\n", m.name, strings.Join(lacks, ", "))
			continue
		}
		out = append(out, m)
	}
	return out
}

func pick(ms []mutant, names []string) []mutant {
	var out []mutant
	for _, m := range ms {
		for _, n := range names {
			if n != "" && strings.HasPrefix(m.name, n) {
				out = append(out, m)
				break
			}
		}
	}
	return out
}

// copyTree copies the tracked files (as they are in the checkout, edits
// included), or those of commit rev, into a temporary folder.
func copyTree(rev string) (string, error) {
	root, err := os.MkdirTemp("", "attn-mutants-")
	if err != nil {
		return "", err
	}
	if rev != "" {
		cmd := exec.Command("bash", "-c", `git archive "$1" | tar -x -C "$2"`, "archive", rev, root)
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("git archive %s: %v\n%s", rev, err, out)
		}
		return root, nil
	}
	files, err := exec.Command("git", "ls-files", "-z").Output()
	if err != nil {
		return "", fmt.Errorf("git ls-files: %v", err)
	}
	for _, f := range strings.Split(strings.TrimRight(string(files), "\x00"), "\x00") {
		info, err := os.Lstat(f)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // deleted in the checkout
			}
			return "", err
		}
		if !info.Mode().IsRegular() {
			continue
		}
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		dst := filepath.Join(root, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(dst, data, info.Mode().Perm()); err != nil {
			return "", err
		}
	}
	return root, nil
}

func runIn(dir, command string) ([]byte, error, time.Duration) {
	cmd := exec.Command("bash", "-c", command)
	cmd.Dir = dir
	// The copy has no .git: no VCS stamp.
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=false")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	return out, err, time.Since(start)
}

func firstFail(out []byte) string {
	for _, l := range strings.Split(string(out), "\n") {
		if i := strings.Index(l, "--- FAIL"); i >= 0 {
			return strings.TrimSpace(l[i:])
		}
	}
	return ""
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func fatal(err error) {
	fmt.Fprintln(os.Stderr, "mutants:", err)
	os.Exit(1)
}
