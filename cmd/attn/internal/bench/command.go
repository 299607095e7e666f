package bench

import (
	"runtime/debug"
	"strings"
)

// A report records the command that produced it so that a reader can run
// it again. go run builds its binary as $GOTMPDIR/go-build…/b001/exe/NAME
// and removes it when it exits, so os.Args[0] names a file that is gone
// by the time anyone reads the report: such a path is written as the go
// run command that builds it again.

// pathParts splits path at either separator: a report read here may
// have been written on Windows.
func pathParts(path string) []string {
	return strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '\\' })
}

// goRunBinary reports whether path is the binary go run built: a file
// in an exe directory under a go-build temporary directory.
func goRunBinary(path string) bool {
	parts := pathParts(path)
	if len(parts) < 3 || parts[len(parts)-2] != "exe" {
		return false
	}
	for _, p := range parts[:len(parts)-2] {
		if strings.HasPrefix(p, "go-build") {
			return true
		}
	}
	return false
}

// binaryName is the name go run gave bin, the last element of its
// package's path.
func binaryName(bin string) string {
	parts := pathParts(bin)
	return strings.TrimSuffix(parts[len(parts)-1], ".exe")
}

// commandLine is args (os.Args) as a command to run again, each argument
// quoted where a shell would split or expand it. A binary go run built
// becomes "go run [-tags T] PKG", PKG the main package relative to its
// module (./cmd/attn) when it lies in it, from build, the binary's build
// information (nil when unknown: then the binary's name alone, as if
// installed).
func commandLine(args []string, build *debug.BuildInfo) string {
	if len(args) == 0 {
		return ""
	}
	words := make([]string, 0, len(args)+3)
	if bin := args[0]; goRunBinary(bin) {
		words = append(words, goRunWords(bin, build)...)
	} else {
		words = append(words, shellQuote(bin))
	}
	for _, a := range args[1:] {
		words = append(words, shellQuote(a))
	}
	return strings.Join(words, " ")
}

// goRunWords are the words that build and run bin again.
func goRunWords(bin string, build *debug.BuildInfo) []string {
	name := binaryName(bin)
	if build == nil || build.Path == "" {
		return []string{shellQuote(name)}
	}
	words := []string{"go", "run"}
	for _, s := range build.Settings {
		if s.Key == "-tags" && s.Value != "" {
			words = append(words, "-tags", shellQuote(s.Value))
		}
	}
	pkg := build.Path
	if mod := build.Main.Path; mod != "" && (pkg == mod || strings.HasPrefix(pkg, mod+"/")) {
		pkg = "." + strings.TrimPrefix(pkg, mod)
	}
	return append(words, shellQuote(pkg))
}

// rerunnable is a recorded command with a go run binary's path, which
// reports written before commandLine hold, replaced by the binary's name:
// the build information that would give the go run command is not in the
// report.
func rerunnable(cmd string) string {
	bin, rest, ok := strings.Cut(cmd, " ")
	if !goRunBinary(bin) {
		return cmd
	}
	name := binaryName(bin)
	if !ok {
		return name
	}
	return name + " " + rest
}

// shellQuote is s as one word of a POSIX shell: as it is when it holds
// only characters no shell treats specially, in single quotes otherwise.
func shellQuote(s string) string {
	special := func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-_=+/.,:@%", r))
	}
	if s != "" && !strings.ContainsFunc(s, special) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
