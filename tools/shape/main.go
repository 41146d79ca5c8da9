// Command shape checks the code's shape (make lint runs it): packages import
// only the layers below them (DESIGN.md's map, in layers.txt), no function of
// the project's own code takes a positional boolean parameter, at most a few
// functions are long (more than 60 lines or 15 branches; schemas aside), and
// every test file is named after the source file it tests, and the package
// comment is in doc.go; the files DESIGN.md and README.md name exist.
//
//	go run ./shape -root ..          (from tools/)
//	go run ./shape -root .. -list    also list the long functions
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// The limits the project keeps (issue "Code shape, second pass").
const (
	maxLines       = 60
	maxBranches    = 15
	maxLongFuncs   = 6
	modulePath     = "github.com/jupyter-infra/terraform-provider-jupyter"
	layersFileName = "tools/shape/layers.txt"
)

func main() {
	root := flag.String("root", ".", "the repository's root")
	list := flag.Bool("list", false, "list every long function")
	flag.Parse()
	problems, long, err := check(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "shape:", err)
		os.Exit(2)
	}
	if *list || len(long) > maxLongFuncs {
		for _, l := range long {
			fmt.Println("long:", l)
		}
	}
	if len(long) > maxLongFuncs {
		problems = append(problems, fmt.Sprintf("%d functions exceed %d lines or %d branches (at most %d may): split them", len(long), maxLines, maxBranches, maxLongFuncs))
	}
	for _, p := range problems {
		fmt.Println(p)
	}
	if len(problems) > 0 {
		os.Exit(1)
	}
}

func check(root string) (problems, long []string, err error) {
	layers, err := readLayers(filepath.Join(root, layersFileName))
	if err != nil {
		return nil, nil, err
	}
	pkgs, err := goList(root)
	if err != nil {
		return nil, nil, err
	}
	for _, p := range pkgs {
		problems = append(problems, importProblems(p, layers)...)
		fset := token.NewFileSet()
		for _, name := range p.GoFiles {
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				return nil, nil, err
			}
			rel := relPath(root, filepath.Join(p.Dir, name))
			problems = append(problems, boolParams(fset, file, rel)...)
			long = append(long, longFuncs(fset, file, rel)...)
		}
		problems = append(problems, testNames(root, p)...)
		problems = append(problems, packageDoc(root, p)...)
	}
	sort.Strings(long)
	docs, err := docReferences(root)
	if err != nil {
		return nil, nil, err
	}
	return append(problems, docs...), long, nil
}

// The documents that name the code's files: a file they name must exist.
var mapDocuments = []string{"DESIGN.md", "README.md"}

// docReferences names every file or directory the documents name in
// backquotes (a path with a slash under internal/ or cmd/, or a Go file's
// name) that the repository does not hold.
func docReferences(root string) ([]string, error) {
	goFiles := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == ".test" || d.Name() == "tools" && path != root) {
			return filepath.SkipDir
		}
		if strings.HasSuffix(path, ".go") {
			goFiles[d.Name()] = true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	ref := regexp.MustCompile("`([^`\\s]+)`")
	var problems []string
	for _, doc := range mapDocuments {
		text, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			return nil, err
		}
		for _, m := range ref.FindAllStringSubmatch(string(text), -1) {
			name := strings.TrimSuffix(m[1], "/")
			switch {
			case strings.HasPrefix(name, "internal/") || strings.HasPrefix(name, "cmd/"):
				if _, err := os.Stat(filepath.Join(root, name)); err != nil {
					problems = append(problems, fmt.Sprintf("%s names %s, which does not exist", doc, name))
				}
			case strings.HasSuffix(name, ".go") && !strings.Contains(name, "/"):
				if !goFiles[name] {
					problems = append(problems, fmt.Sprintf("%s names %s, which no directory holds", doc, name))
				}
			}
		}
	}
	return problems, nil
}

type pkg struct {
	Dir          string
	ImportPath   string
	GoFiles      []string
	TestGoFiles  []string
	XTestGoFiles []string
	Imports      []string
}

func goList(root string) ([]pkg, error) {
	cmd := exec.Command("go", "list", "-json", "./...")
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
	return pkgs, nil
}

// readLayers reads layers.txt: one layer per line, top first, each a list of
// package paths relative to the module; a package may import those of lower
// lines only. Test-support packages are listed too.
func readLayers(path string) (map[string]int, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	layers := map[string]int{}
	line := 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		text := strings.TrimSpace(s.Text())
		if i := strings.Index(text, "#"); i >= 0 {
			text = strings.TrimSpace(text[:i])
		}
		if text == "" {
			continue
		}
		for _, p := range strings.Fields(text) {
			layers[p] = line
		}
		line++
	}
	return layers, s.Err()
}

func importProblems(p pkg, layers map[string]int) []string {
	self := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, modulePath), "/")
	if self == "" {
		self = "."
	}
	level, ok := layers[self]
	if !ok {
		return []string{fmt.Sprintf("%s: package not in %s: add it to its layer", self, layersFileName)}
	}
	var problems []string
	for _, imp := range p.Imports {
		if !strings.HasPrefix(imp, modulePath+"/") {
			continue
		}
		dep := strings.TrimPrefix(imp, modulePath+"/")
		depLevel, ok := layers[dep]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s: imports %s, which is not in %s", self, dep, layersFileName))
			continue
		}
		if depLevel <= level {
			problems = append(problems, fmt.Sprintf("%s imports %s, a package of its own layer or one above it (%s)", self, dep, layersFileName))
		}
	}
	return problems
}

// boolParams names every function of non-test code that takes a bool
// parameter: a call reads f(x, true) and says nothing of what true means.
func boolParams(fset *token.FileSet, file *ast.File, rel string) []string {
	var problems []string
	ast.Inspect(file, func(n ast.Node) bool {
		var ft *ast.FuncType
		name := "a function literal"
		switch f := n.(type) {
		case *ast.FuncDecl:
			ft, name = f.Type, f.Name.Name
		case *ast.FuncLit:
			ft = f.Type
		case *ast.InterfaceType:
			for _, m := range f.Methods.List {
				if t, ok := m.Type.(*ast.FuncType); ok && len(m.Names) > 0 && hasBool(t.Params) {
					problems = append(problems, fmt.Sprintf("%s: %s takes a boolean parameter: use a named function or an options struct", position(fset, m.Pos(), rel), m.Names[0].Name))
				}
			}
			return true
		default:
			return true
		}
		if hasBool(ft.Params) {
			problems = append(problems, fmt.Sprintf("%s: %s takes a boolean parameter: use a named function or an options struct", position(fset, n.Pos(), rel), name))
		}
		return true
	})
	return problems
}

func hasBool(fields *ast.FieldList) bool {
	if fields == nil {
		return false
	}
	for _, f := range fields.List {
		if id, ok := f.Type.(*ast.Ident); ok && id.Name == "bool" {
			return true
		}
	}
	return false
}

// longFuncs lists the functions over the limits; schemas (a function named
// Schema, or one returning a schema built as one literal) are aside.
func longFuncs(fset *token.FileSet, file *ast.File, rel string) []string {
	var long []string
	for _, d := range file.Decls {
		f, ok := d.(*ast.FuncDecl)
		if !ok || f.Body == nil || isSchema(f.Name.Name) {
			continue
		}
		lines := fset.Position(f.End()).Line - fset.Position(f.Pos()).Line + 1
		branches := 0
		ast.Inspect(f.Body, func(n ast.Node) bool {
			switch x := n.(type) {
			case *ast.IfStmt, *ast.ForStmt, *ast.RangeStmt:
				branches++
			case *ast.CaseClause:
				if x.List != nil {
					branches++
				}
			case *ast.CommClause:
				if x.Comm != nil {
					branches++
				}
			}
			return true
		})
		if lines > maxLines || branches > maxBranches {
			name := f.Name.Name
			if f.Recv != nil && len(f.Recv.List) > 0 {
				name = recvName(f.Recv.List[0].Type) + "." + name
			}
			long = append(long, fmt.Sprintf("%s: %s (%d lines, %d branches)", position(fset, f.Pos(), rel), name, lines, branches))
		}
	}
	return long
}

// isSchema: a resource's or data source's Schema, or a function's
// Definition (its schema), one literal however long.
func isSchema(name string) bool {
	return strings.Contains(strings.ToLower(name), "schema") || name == "Definition"
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	case *ast.IndexExpr:
		return recvName(t.X)
	}
	return "?"
}

// testNames requires X_test.go, or X_topic_test.go (a topic of X: X_acc for
// its acceptance tests, X_merge for its merges), beside X.go. Packages without source of their own (test
// suites) name their files as they like; main_test.go (TestMain) and
// helpers_test.go (shared test helpers) are allowed everywhere.
func testNames(root string, p pkg) []string {
	if len(p.GoFiles) == 0 || len(p.GoFiles) == 1 && p.GoFiles[0] == "doc.go" {
		return nil
	}
	sources := map[string]bool{}
	for _, f := range p.GoFiles {
		sources[strings.TrimSuffix(f, ".go")] = true
	}
	var problems []string
	for _, f := range append(append([]string{}, p.TestGoFiles...), p.XTestGoFiles...) {
		base := strings.TrimSuffix(f, "_test.go")
		if base == "main" || base == "helpers" {
			continue
		}
		if sources[base] {
			continue
		}
		if !namedAfterSource(base, sources) {
			problems = append(problems, fmt.Sprintf("%s: no %s.go beside it: name a test file after the source file it tests", relPath(root, filepath.Join(p.Dir, f)), base))
		}
	}
	return problems
}

func position(fset *token.FileSet, pos token.Pos, rel string) string {
	return fmt.Sprintf("%s:%d", rel, fset.Position(pos).Line)
}

func relPath(root, path string) string {
	abs, err := filepath.Abs(root)
	if err != nil {
		return path
	}
	if r, err := filepath.Rel(abs, path); err == nil {
		return r
	}
	return path
}

func namedAfterSource(base string, sources map[string]bool) bool {
	for s := range sources {
		if base == s || strings.HasPrefix(base, s+"_") {
			return true
		}
	}
	return false
}

// packageDoc requires the package comment in doc.go, and only there (godoc
// drops one that floats after the imports; two disagree).
func packageDoc(root string, p pkg) []string {
	if len(p.GoFiles) == 0 {
		return nil
	}
	var problems []string
	hasDoc := false
	for _, name := range p.GoFiles {
		path := filepath.Join(p.Dir, name)
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil {
			return []string{err.Error()}
		}
		switch {
		case name == "doc.go":
			hasDoc = file.Doc != nil
		case file.Doc != nil:
			problems = append(problems, fmt.Sprintf("%s: a package comment outside doc.go: move it there", relPath(root, path)))
		}
	}
	if !hasDoc {
		problems = append(problems, fmt.Sprintf("%s: no package comment in doc.go", relPath(root, p.Dir)))
	}
	return problems
}
