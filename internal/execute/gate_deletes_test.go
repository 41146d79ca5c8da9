package execute

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Every delete of a claim passes the gate: the provider's code calls
// RemoveClaim only from execute.Delete, and deletes PersistentVolumeClaims
// through the API only inside RemoveClaim.
func TestOneGate(t *testing.T) {
	fset := token.NewFileSet()
	var removeCalls, apiDeletes []string
	err := filepath.WalkDir("..", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		var fn string
		ast.Inspect(f, func(n ast.Node) bool {
			if d, ok := n.(*ast.FuncDecl); ok {
				fn = d.Name.Name
			}
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			where := filepath.ToSlash(path) + ":" + fn
			switch sel.Sel.Name {
			case "RemoveClaim":
				removeCalls = append(removeCalls, where)
			case "Delete":
				if inner, ok := sel.X.(*ast.CallExpr); ok {
					if s, ok := inner.Fun.(*ast.SelectorExpr); ok && s.Sel.Name == "PersistentVolumeClaims" {
						apiDeletes = append(apiDeletes, where)
					}
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(removeCalls, ",") != "../execute/gate.go:Delete" {
		t.Errorf("RemoveClaim is called from %v; only execute.Delete may call it", removeCalls)
	}
	if strings.Join(apiDeletes, ",") != "../kube/storage.go:RemoveClaim" {
		t.Errorf("claims are deleted through the API in %v; only kube's RemoveClaim may", apiDeletes)
	}
}
