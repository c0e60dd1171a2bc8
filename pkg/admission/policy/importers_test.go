package policy

import (
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// module is the import path of the module, whose root the paths below are relative to.
const module = "github.com/sidecarset/apiserver/"

// compiler is the directory of the policy compiler: the planner and its subpackages, which may
// import each other (as Go allows: without cycles).
const compiler = "pkg/admission/policy"

// allowedImporters are, for each package of the compiler, the only places outside it whose
// non-test Go files may import it: a directory allows its subdirectories, a file only itself. A
// package not listed has none. Everyone else reads the words of the injection paths (path names,
// reasons, the managed-by label, annotation names, the Widening) from pkg/apis/apps.
var allowedImporters = map[string][]string{
	compiler: { // the planner
		"pkg/controller/injectionsync", // the sync controller and its plan
	},
	compiler + "/webhookconfig": {
		"pkg/controller/injectionsync", // the webhook configuration it writes, the intake webhooks
		"pkg/apiserver",                // the webhook's freshness barrier
	},
}

// TestImporters: no package outside allowedImporters imports a package of the compiler (what
// `go list -f '{{.ImportPath}} {{.Imports}}' ./...` shows; test files are not checked). It parses
// the import blocks of every non-test Go file of the main module (nested modules and testdata
// excluded), whatever its build constraints.
func TestImporters(t *testing.T) {
	root, err := filepath.Abs("../../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	importers, err := compilerImporters(root)
	if err != nil {
		t.Fatal(err)
	}
	// The walk must see the importers there are, or the test proves nothing.
	if !slices.ContainsFunc(importers[compiler], func(f string) bool { return strings.HasPrefix(f, "pkg/controller/injectionsync/") }) {
		t.Fatalf("no file of pkg/controller/injectionsync imports %s: the walk of %s is broken (found %v)", module+compiler, root, importers)
	}
	within := func(file, place string) bool { return file == place || strings.HasPrefix(file, place+"/") }
	for _, pkg := range slices.Sorted(maps.Keys(importers)) {
		for _, f := range importers[pkg] {
			if !within(f, compiler) && !slices.ContainsFunc(allowedImporters[pkg], func(a string) bool { return within(f, a) }) {
				t.Errorf("%s imports the policy compiler's %s: read the words of the injection paths from pkg/apis/apps (injection.go), or pass what needs the compiler down from pkg/apiserver", f, module+pkg)
			}
		}
	}
	// An entry no file needs any more is a door left open: the lists name the importers there are.
	for pkg, places := range allowedImporters {
		for _, a := range places {
			if !slices.ContainsFunc(importers[pkg], func(f string) bool { return within(f, a) }) {
				t.Errorf("allowedImporters lists %s, which no longer imports %s: remove it", a, module+pkg)
			}
		}
	}
}

// compilerImporters returns, for each package of the compiler (relative to the module root), the
// non-test Go files under root that import it.
func compilerImporters(root string) (map[string][]string, error) {
	importers := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			name := d.Name()
			if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			if rel != "." {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // another module
				}
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if pkg, ok := strings.CutPrefix(p, module); ok && (pkg == compiler || strings.HasPrefix(pkg, compiler+"/")) {
				importers[pkg] = append(importers[pkg], rel)
			}
		}
		return nil
	})
	return importers, err
}
