package kernels_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"strings"
	"testing"
)

// The README's first Go example is Example_readme's body, so that the
// example a new user copies first is one go test runs and checks.
func TestReadmeExample(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(readme), "```go\n")
	block, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("README.md has no ```go block")
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "README.md", block, parser.ParseComments)
	if err != nil {
		t.Fatalf("README's first example does not parse: %v", err)
	}
	if f.Name.Name != "main" {
		t.Fatalf("README's first example is package %s, want a main program", f.Name.Name)
	}
	src, err := os.ReadFile("examples_test.go")
	if err != nil {
		t.Fatal(err)
	}
	ef, err := parser.ParseFile(fset, "examples_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	got, want := body(t, fset, f, "main"), body(t, fset, ef, "Example_readme")
	if i := strings.Index(want, "// Output:"); i >= 0 {
		want = strings.TrimSpace(want[:i])
	}
	if got != want {
		t.Errorf("README's example differs from Example_readme:\n%s\nwant\n%s", got, want)
	}
}

// body prints function name's statements in f, comments included, as
// lines without their indentation.
func body(t *testing.T, fset *token.FileSet, f *ast.File, name string) string {
	t.Helper()
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != name {
			continue
		}
		var b bytes.Buffer
		cfg := printer.Config{Mode: printer.RawFormat}
		if err := cfg.Fprint(&b, fset, &printer.CommentedNode{Node: fn.Body, Comments: f.Comments}); err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, l := range strings.Split(b.String(), "\n") {
			if l = strings.TrimSpace(l); l != "" && l != "{" && l != "}" {
				lines = append(lines, l)
			}
		}
		return strings.TrimSpace(strings.Join(lines, "\n"))
	}
	t.Fatalf("no func %s", name)
	return ""
}
