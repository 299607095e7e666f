package kernels_test

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/printer"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// The README's other Go snippets are fragments of a function, each held
// to the Examples that the paragraph before it names (`ExampleX`): every
// kernels identifier, method call and option field a snippet uses
// appears in those Examples, which go test runs on the CPU backend. In
// the snippets and those Examples alike, an err is checked before it is
// assigned again or the function ends, and errors.Is(err, ErrCacheFull)
// reads the err of an Append or a Keep, the calls that return it (a
// test after Attend, as the README's decoding loop once had it, never
// sees a full cache).
func TestReadmeSnippets(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	examples := exampleFuncs(t)
	named := regexp.MustCompile("`(Example\\w*)`")
	parts := strings.Split(string(readme), "```go\n")
	if len(parts) < 3 {
		t.Fatalf("README.md has %d Go snippets, want its program and the Library's", len(parts)-1)
	}
	fence := 1 + strings.Count(parts[0], "\n") // the line of the snippet's ```go
	for i, part := range parts[1:] {
		block, _, ok := strings.Cut(part, "```")
		if !ok {
			t.Fatalf("README.md:%d: a Go snippet with no end", fence)
		}
		// The paragraph before the snippet, which names its Examples.
		prose := parts[i]
		if i > 0 {
			_, prose, _ = strings.Cut(prose, "```")
		}
		prose = strings.TrimSpace(prose)
		if j := strings.LastIndex(prose, "\n\n"); j >= 0 {
			prose = prose[j:]
		}
		start, src, at := fence, block, fence  // line L of src is the README's line at+L
		fence += 1 + strings.Count(part, "\n") // the split took the ```go line's newline
		if i > 0 {
			src, at = "package p\nfunc _() {\n"+block+"}\n", start-2 // a function's statements
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, "README.md", src, 0)
		if err != nil {
			t.Errorf("README.md:%d: the snippet does not parse: %v", start, err)
			continue
		}
		var body *ast.BlockStmt
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && (fn.Name.Name == "main" || fn.Name.Name == "_") {
				body = fn.Body
			}
		}
		if body == nil {
			t.Fatalf("README.md:%d: the program has no func main", start)
		}
		readmeLine := func(p token.Pos) string { return fmt.Sprintf("README.md:%d", at+fset.Position(p).Line) }
		for _, slip := range errFlow(body, readmeLine) {
			t.Error(slip)
		}
		if i == 0 {
			continue // the program, which TestReadmeExample holds to Example_readme
		}
		var names []string
		held := map[string]bool{}
		for _, m := range named.FindAllStringSubmatch(prose, -1) {
			ex, ok := examples[m[1]]
			if !ok {
				t.Errorf("README.md:%d: the snippet names %s, which kernels' tests do not hold", start, m[1])
				continue
			}
			names = append(names, m[1])
			for u := range uses(ex.fn.Body) {
				held[u] = true
			}
			for _, slip := range errFlow(ex.fn.Body, func(p token.Pos) string { return ex.fset.Position(p).String() }) {
				t.Error(slip)
			}
		}
		if len(names) == 0 {
			t.Errorf("README.md:%d: the paragraph before the snippet names no Example that runs it (`ExampleX`)", start)
			continue
		}
		var missing []string
		for u := range uses(body) {
			if !held[u] {
				missing = append(missing, u)
			}
		}
		slices.Sort(missing)
		if len(missing) > 0 {
			t.Errorf("README.md:%d: the snippet uses %s, found in none of its Examples (%s)", start, strings.Join(missing, ", "), strings.Join(names, ", "))
		}
	}
}

// example is an Example's declaration and the file set of its file.
type example struct {
	fn   *ast.FuncDecl
	fset *token.FileSet
}

// exampleFuncs returns the package's Examples by name, from every test
// file.
func exampleFuncs(t *testing.T) map[string]example {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fns := map[string]example{}
	for _, name := range files {
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Example") {
				fns[fn.Name.Name] = example{fn, fset}
			}
		}
	}
	return fns
}

// uses returns what n uses of the API, as text: kernels identifiers
// ("kernels.Attention"), the fields a kernels composite literal sets
// ("kernels.Options{Causal}"), calls of errors' functions
// ("errors.Is") and method calls (".Append").
func uses(n ast.Node) map[string]bool {
	u := map[string]bool{}
	ast.Inspect(n, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.SelectorExpr:
			if x, ok := n.X.(*ast.Ident); ok && x.Name == "kernels" {
				u["kernels."+n.Sel.Name] = true
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok {
				x, ok := sel.X.(*ast.Ident)
				switch {
				case ok && x.Name == "errors":
					u["errors."+sel.Sel.Name] = true
				case !ok || x.Name != "kernels" && x.Name != "fmt" && x.Name != "log" && x.Name != "context":
					u["."+sel.Sel.Name] = true
				}
			}
		case *ast.CompositeLit:
			typ, ok := n.Type.(*ast.SelectorExpr)
			if !ok {
				break
			}
			if x, ok := typ.X.(*ast.Ident); ok && x.Name == "kernels" {
				for _, e := range n.Elts {
					if kv, ok := e.(*ast.KeyValueExpr); ok {
						if key, ok := kv.Key.(*ast.Ident); ok {
							u[fmt.Sprintf("kernels.%s{%s}", typ.Sel.Name, key.Name)] = true
						}
					}
				}
			}
		}
		return true
	})
	return u
}

// errFlow walks body's statements in source order, as a reader does,
// and returns where an err is assigned again, or left at the end,
// before anything reads it, and where errors.Is tests for ErrCacheFull
// on an err that no Append or Keep returned; where names a position. A
// function literal is walked on its own.
func errFlow(body *ast.BlockStmt, where func(token.Pos) string) []string {
	type assign struct {
		call string
		pos  token.Pos
	}
	var slips []string
	var pending, last *assign
	var walk func(n ast.Node) bool
	walk = func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			slips = append(slips, errFlow(n.Body, where)...)
			return false
		case *ast.AssignStmt:
			for _, r := range n.Rhs {
				ast.Inspect(r, walk)
			}
			for _, l := range n.Lhs {
				if id, ok := l.(*ast.Ident); !ok || id.Name != "err" {
					ast.Inspect(l, walk)
					continue
				}
				a := &assign{call: "?", pos: n.Pos()}
				if len(n.Rhs) == 1 {
					a.call = callName(n.Rhs[0])
				}
				if pending != nil {
					slips = append(slips, fmt.Sprintf("%s: the err of %s is assigned again (%s, %s) before anything reads it",
						where(pending.pos), pending.call, a.call, where(a.pos)))
				}
				pending, last = a, a
			}
			return false
		case *ast.CallExpr:
			if callName(n) != "errors.Is" || len(n.Args) != 2 {
				break
			}
			if sel, ok := n.Args[1].(*ast.SelectorExpr); ok && sel.Sel.Name == "ErrCacheFull" {
				if last == nil {
					slips = append(slips, fmt.Sprintf("%s: errors.Is tests for ErrCacheFull before any err is assigned", where(n.Pos())))
				} else if last.call != "Append" && last.call != "AppendBuffers" && last.call != "Keep" {
					slips = append(slips, fmt.Sprintf("%s: errors.Is tests for ErrCacheFull on the err of %s (%s), which never returns it: Append and Keep do",
						where(n.Pos()), last.call, where(last.pos)))
				}
			}
		case *ast.Ident:
			if n.Name == "err" {
				pending = nil
			}
		}
		return true
	}
	ast.Inspect(body, walk)
	if pending != nil {
		slips = append(slips, fmt.Sprintf("%s: the err of %s is never read", where(pending.pos), pending.call))
	}
	return slips
}

// callName is the name of the function or method e calls ("Append",
// "errors.Is"), or "?".
func callName(e ast.Expr) string {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return "?"
	}
	switch f := c.Fun.(type) {
	case *ast.Ident:
		return f.Name
	case *ast.SelectorExpr:
		if x, ok := f.X.(*ast.Ident); ok && x.Name == "errors" {
			return "errors." + f.Sel.Name
		}
		return f.Sel.Name
	}
	return "?"
}
