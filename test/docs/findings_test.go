package docs

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestFindingsDocumented: every finding name of `kubectl sidecarset check` (the Finding*
// constants of pkg/apis/apps/v1alpha1/findings.go) is explained in docs/plugin.md, written as
// code.
func TestFindingsDocumented(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(root, "pkg/apis/apps/v1alpha1/findings.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(root, "docs/plugin.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := 0
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok || len(spec.Names) != 1 || !strings.HasPrefix(spec.Names[0].Name, "Finding") || len(spec.Values) != 1 {
			return true
		}
		lit, ok := spec.Values[0].(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return true
		}
		name, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		names++
		if !strings.Contains(string(doc), "`"+name+"`") {
			t.Errorf("docs/plugin.md does not explain check's finding %s (%q)", spec.Names[0].Name, name)
		}
		return true
	})
	if names == 0 {
		t.Fatal("no Finding constant in pkg/apis/apps/v1alpha1/findings.go: the test checks nothing")
	}
}
