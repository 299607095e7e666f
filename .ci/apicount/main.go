// Command apicount counts the exported identifiers of attn's public
// packages: every package outside internal/ and cmd/ that is not a main
// package. A top-level name counts once, as do each exported method of an
// exported type (an interface's methods included) and each exported field
// of an exported struct. Files of every build tag are read, each name
// counted once whatever number of files declare it, and test files are
// left out. CI runs it, prints the count per package, and fails above
// the budget given as its argument.
//
//	go run ./.ci/apicount 700
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

func main() {
	budget := -1
	if len(os.Args) > 1 {
		b, err := strconv.Atoi(os.Args[1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "apicount: the budget must be a whole number:", err)
			os.Exit(2)
		}
		budget = b
	}
	counts := map[string]int{}
	names := map[string]map[string]bool{}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			base := d.Name()
			if path != "." && (strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") ||
				base == "testdata" || base == "internal" || base == "cmd") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		if f.Name.Name == "main" {
			return nil
		}
		dir := filepath.ToSlash(filepath.Dir(path))
		if names[dir] == nil {
			names[dir] = map[string]bool{}
		}
		for _, n := range exported(f) {
			names[dir][n] = true
		}
		return nil
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicount:", err)
		os.Exit(1)
	}
	dirs := make([]string, 0, len(names))
	total := 0
	for dir, set := range names {
		counts[dir] = len(set)
		total += len(set)
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		fmt.Printf("%5d  %s\n", counts[dir], dir)
	}
	fmt.Printf("%5d  exported identifiers in all", total)
	if budget >= 0 {
		fmt.Printf(" (budget %d)", budget)
	}
	fmt.Println()
	if budget >= 0 && total > budget {
		fmt.Fprintf(os.Stderr, "apicount: %d exported identifiers, over the budget of %d\n", total, budget)
		os.Exit(1)
	}
}

// exported lists a file's exported identifiers as "Name",
// "Type.Method" and "Type.Field".
func exported(f *ast.File) []string {
	var out []string
	for _, decl := range f.Decls {
		switch d := decl.(type) {
		case *ast.FuncDecl:
			if !d.Name.IsExported() {
				continue
			}
			if d.Recv == nil {
				out = append(out, d.Name.Name)
				continue
			}
			if recv := recvName(d.Recv.List[0].Type); ast.IsExported(recv) {
				out = append(out, recv+"."+d.Name.Name)
			}
		case *ast.GenDecl:
			for _, spec := range d.Specs {
				switch s := spec.(type) {
				case *ast.ValueSpec:
					for _, n := range s.Names {
						if n.IsExported() {
							out = append(out, n.Name)
						}
					}
				case *ast.TypeSpec:
					if !s.Name.IsExported() {
						continue
					}
					out = append(out, s.Name.Name)
					out = append(out, members(s.Name.Name, s.Type)...)
				}
			}
		}
	}
	return out
}

// members lists an exported type's exported fields or interface methods.
func members(typ string, expr ast.Expr) []string {
	var list *ast.FieldList
	switch t := expr.(type) {
	case *ast.StructType:
		list = t.Fields
	case *ast.InterfaceType:
		list = t.Methods
	default:
		return nil
	}
	var out []string
	for _, field := range list.List {
		for _, n := range field.Names {
			if n.IsExported() {
				out = append(out, typ+"."+n.Name)
			}
		}
		if len(field.Names) == 0 { // an embedded type: its name is the field's
			if n := recvName(field.Type); ast.IsExported(n) {
				out = append(out, typ+"."+n)
			}
		}
	}
	return out
}

// recvName is the type name in a receiver or embedded field:
// T, *T, T[P], pkg.T.
func recvName(expr ast.Expr) string {
	switch t := expr.(type) {
	case *ast.Ident:
		return t.Name
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.IndexListExpr:
		return recvName(t.X)
	case *ast.SelectorExpr:
		return t.Sel.Name
	}
	return ""
}
