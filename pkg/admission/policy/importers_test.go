package policy

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// thisPackage is the import path of the policy compiler.
const thisPackage = "github.com/sidecarset/apiserver/pkg/admission/policy"

// allowedImporters are the only places, relative to the module root, whose non-test Go files may
// import the compiler: a directory allows its subdirectories, a file only itself. Everyone else
// reads the words of the injection paths (path names, reasons, the managed-by label, annotation
// names, the Widening) from pkg/apis/apps.
var allowedImporters = []string{
	"pkg/admission/policy",         // the compiler itself and its test helpers
	"pkg/controller/injectionsync", // the sync controller and its plan
	"pkg/apiserver",                // the injection wiring and the webhook's freshness barrier
}

// TestImporters: no package outside allowedImporters imports the compiler (what
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
	var importers []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
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
			if p, _ := strconv.Unquote(imp.Path.Value); p == thisPackage {
				importers = append(importers, rel)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	allowed := func(file string) bool {
		return slices.ContainsFunc(allowedImporters, func(a string) bool {
			return file == a || strings.HasPrefix(file, a+"/")
		})
	}
	// The walk must see the importers there are, or the test proves nothing.
	if !slices.ContainsFunc(importers, func(f string) bool { return strings.HasPrefix(f, "pkg/controller/injectionsync/") }) {
		t.Fatalf("no file of pkg/controller/injectionsync imports %s: the walk of %s is broken (found %v)", thisPackage, root, importers)
	}
	for _, f := range importers {
		if !allowed(f) {
			t.Errorf("%s imports the policy compiler %s: read the words of the injection paths from pkg/apis/apps (injection.go), or pass what needs the compiler down from pkg/apiserver", f, thisPackage)
		}
	}
	// An entry no file needs any more is a door left open: the list names the importers there are.
	for _, a := range allowedImporters {
		if !slices.ContainsFunc(importers, func(f string) bool { return f == a || strings.HasPrefix(f, a+"/") }) && a != "pkg/admission/policy" {
			t.Errorf("allowedImporters lists %s, which no longer imports %s: remove it", a, thisPackage)
		}
	}
}
