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
		var files []*ast.File
		for _, name := range p.GoFiles {
			file, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, 0)
			if err != nil {
				return nil, nil, err
			}
			files = append(files, file)
		}
		bools := boolTypes(files)
		for i, file := range files {
			rel := relPath(root, filepath.Join(p.Dir, p.GoFiles[i]))
			problems = append(problems, boolParams(fset, file, rel, bools)...)
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

// layer is a package's place in layers.txt: its section ([commands],
// [product] or [test support]) and its line, top first.
type layer struct {
	section string
	line    int
}

// readLayers reads layers.txt: sections headed [commands], [product] and
// [test support], one layer per line, top first, each a list of package
// paths relative to the module. A product package imports only product
// packages of lower lines; test support only test support of lower lines
// (nothing of the product, and the product nothing of it); a command any
// package of the other sections.
func readLayers(path string) (map[string]layer, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	layers := map[string]layer{}
	section, line := "", 0
	s := bufio.NewScanner(f)
	for s.Scan() {
		text := strings.TrimSpace(s.Text())
		if i := strings.Index(text, "#"); i >= 0 {
			text = strings.TrimSpace(text[:i])
		}
		switch {
		case text == "":
			continue
		case strings.HasPrefix(text, "[") && strings.HasSuffix(text, "]"):
			section = strings.Trim(text, "[]")
			continue
		case section == "":
			return nil, fmt.Errorf("%s: %q comes before any [section]", path, text)
		}
		for _, p := range strings.Fields(text) {
			layers[p] = layer{section, line}
		}
		line++
	}
	return layers, s.Err()
}

func importProblems(p pkg, layers map[string]layer) []string {
	self := strings.TrimPrefix(strings.TrimPrefix(p.ImportPath, modulePath), "/")
	if self == "" {
		self = "."
	}
	at, ok := layers[self]
	if !ok {
		return []string{fmt.Sprintf("%s: package not in %s: add it to its layer", self, layersFileName)}
	}
	var problems []string
	for _, imp := range p.Imports {
		if !strings.HasPrefix(imp, modulePath+"/") {
			continue
		}
		dep := strings.TrimPrefix(imp, modulePath+"/")
		to, ok := layers[dep]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s: imports %s, which is not in %s", self, dep, layersFileName))
		case at.section == "commands":
			if to.section == "commands" {
				problems = append(problems, fmt.Sprintf("%s imports %s, another command (%s)", self, dep, layersFileName))
			}
		case to.section != at.section:
			problems = append(problems, fmt.Sprintf("%s (%s) imports %s (%s): the product and test support do not import each other (%s)", self, at.section, dep, to.section, layersFileName))
		case to.line <= at.line:
			problems = append(problems, fmt.Sprintf("%s imports %s, a package of its own layer or one above it (%s)", self, dep, layersFileName))
		}
	}
	return problems
}

// boolParams names every function type of non-test code with a boolean
// parameter (declared functions and methods, literals, interface methods,
// fields and types of function type; a variadic ...bool; a named type whose
// underlying type is bool): a call reads f(x, true) and says nothing of what
// true means.
func boolParams(fset *token.FileSet, file *ast.File, rel string, bools map[string]bool) []string {
	var problems []string
	name := map[*ast.FuncType]string{}
	ast.Inspect(file, func(n ast.Node) bool {
		switch f := n.(type) {
		case *ast.FuncDecl:
			name[f.Type] = f.Name.Name
		case *ast.Field:
			if t, ok := f.Type.(*ast.FuncType); ok && len(f.Names) > 0 {
				name[t] = f.Names[0].Name
			}
		case *ast.TypeSpec:
			if t, ok := f.Type.(*ast.FuncType); ok {
				name[t] = f.Name.Name
			}
		case *ast.FuncType:
			if hasBool(f.Params, bools) {
				what := name[f]
				if what == "" {
					what = "a function literal or type"
				}
				problems = append(problems, fmt.Sprintf("%s: %s takes a boolean parameter: use a named function or an options struct", position(fset, f.Pos(), rel), what))
			}
		}
		return true
	})
	return problems
}

// boolTypes names the package's types whose underlying type is bool.
func boolTypes(files []*ast.File) map[string]bool {
	bools := map[string]bool{"bool": true}
	for changed := true; changed; {
		changed = false
		for _, file := range files {
			ast.Inspect(file, func(n ast.Node) bool {
				if t, ok := n.(*ast.TypeSpec); ok {
					if id, ok := t.Type.(*ast.Ident); ok && bools[id.Name] && !bools[t.Name.Name] {
						bools[t.Name.Name], changed = true, true
					}
				}
				return true
			})
		}
	}
	return bools
}

func hasBool(fields *ast.FieldList, bools map[string]bool) bool {
	if fields == nil {
		return false
	}
	for _, f := range fields.List {
		t := f.Type
		if e, ok := t.(*ast.Ellipsis); ok {
			t = e.Elt
		}
		if id, ok := t.(*ast.Ident); ok && bools[id.Name] {
			return true
		}
	}
	return false
}

// longFuncs lists the functions over the limits; schemas (isSchema, without
// a branch: one literal) are aside.
func longFuncs(fset *token.FileSet, file *ast.File, rel string) []string {
	var long []string
	for _, d := range file.Decls {
		f, ok := d.(*ast.FuncDecl)
		if !ok || f.Body == nil {
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
		if branches == 0 && isSchema(f.Name.Name) {
			continue // a schema: one literal, however long
		}
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

// isSchema: a resource's, data source's or provider's Schema (or a
// function building one, named …Schema), or a function's Definition.
func isSchema(name string) bool {
	return name == "Schema" || name == "Definition" || strings.HasSuffix(name, "Schema")
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
