package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"testing"
)

func parse(t *testing.T, src string) (*token.FileSet, *ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "x.go", "package x\n"+src, 0)
	if err != nil {
		t.Fatal(err)
	}
	return fset, f
}

func TestBoolParams(t *testing.T) {
	for _, tc := range []struct {
		src  string
		want int
	}{
		{"func f(x string, on bool) {}", 1},
		{"func (r R) f(a, b bool) {}", 1},
		{"var f = func(done bool) {}", 1},
		{"type I interface{ F(force bool) error }", 1},
		{"type S struct{ after func(user string, ok bool) }", 1},
		{"type fn func(name string, force bool)", 1},
		{"func f(x string, flags ...bool) {}", 1},
		{"type onOff bool\ntype sw onOff\nfunc f(x string, on sw) {}", 1},
		{"func f(x string) bool { return true }", 0},
		{"func f(p *bool, s struct{ b bool }) {}", 0},
		{"type S struct{ On bool }", 0},
	} {
		fset, f := parse(t, tc.src)
		got := boolParams(fset, f, "x.go", boolTypes([]*ast.File{f}))
		if len(got) != tc.want {
			t.Errorf("%q: %d problems %q, want %d", tc.src, len(got), got, tc.want)
		}
	}
}

func TestLongFuncs(t *testing.T) {
	long := "func f(x int) {\n" + strings.Repeat("\tx++\n", 61) + "}\n"
	branchy := "func g(x int) {\n" + strings.Repeat("\tif x > 0 {\n\t\tx++\n\t}\n", 16) + "}\n"
	schema := "func homeStorageSchema() []int {\n\treturn []int{\n" + strings.Repeat("\t\t1,\n", 80) + "\t}\n}\n"
	schemaWithBranches := "func checkSchemaDrift(x int) {\n" + strings.Repeat("\tif x > 0 {\n\t\tx++\n\t}\n", 16) + "}\n"
	for _, tc := range []struct {
		src  string
		want int
	}{
		{long, 1},
		{branchy, 1},
		{schema, 0},
		{schemaWithBranches, 1},
		{"func h() {\n\tswitch {\n\tcase true:\n\tdefault:\n\t}\n}\n", 0},
	} {
		fset, f := parse(t, tc.src)
		if got := longFuncs(fset, f, "x.go"); len(got) != tc.want {
			t.Errorf("%d long functions %q, want %d", len(got), got, tc.want)
		}
	}
}

func TestImportProblems(t *testing.T) {
	layers := map[string]layer{
		".": {"commands", 0}, "internal/provider": {"product", 0}, "internal/claims": {"product", 1},
		"internal/acctest": {"test support", 0}, "internal/tofurun": {"test support", 1},
	}
	imp := func(p string) string { return modulePath + "/" + p }
	for _, tc := range []struct {
		self string
		deps []string
		want int
	}{
		{"", []string{imp("internal/provider"), imp("internal/acctest")}, 0},
		{"internal/provider", []string{imp("internal/claims"), "fmt"}, 0},
		{"internal/claims", []string{imp("internal/provider")}, 1},
		{"internal/claims", []string{imp("internal/tofurun")}, 1},
		{"internal/acctest", []string{imp("internal/tofurun")}, 0},
		{"internal/acctest", []string{imp("internal/claims")}, 1},
		{"internal/provider", []string{imp("internal/unknown")}, 1},
	} {
		path := modulePath
		if tc.self != "" {
			path += "/" + tc.self
		}
		if got := importProblems(pkg{ImportPath: path, Imports: tc.deps}, layers); len(got) != tc.want {
			t.Errorf("%s → %v: %q, want %d problems", tc.self, tc.deps, got, tc.want)
		}
	}
}

func TestNamedAfterSource(t *testing.T) {
	sources := map[string]bool{"copy": true, "resource_home_storage": true}
	for name, want := range map[string]bool{"copy": true, "copy_acc": true, "resource_home_storage_merge": true, "copyjobs": false, "record": false} {
		if got := namedAfterSource(name, sources); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}
