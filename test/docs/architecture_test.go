package docs

import (
	"flag"
	"fmt"
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

var update = flag.Bool("update", false, "rewrite the package diagram of docs/architecture.md")

// module is the main module's path.
const module = "github.com/sidecarset/apiserver"

// components are the parts of the diagram, each a directory of the module (with its
// subdirectories); a package belongs to the longest that holds it. The API types, the generated
// clients and the small shared helpers are the vocabulary every part imports: left out.
var components = []string{
	"cmd/apiserver", "cmd/kubectl-sidecarset",
	"pkg/apiserver", "pkg/registry", "pkg/admission/webhook", "pkg/admission/policy", "pkg/admission/plugin",
	"pkg/injection", "pkg/sidecar", "pkg/explain", "pkg/migrate",
	"pkg/controller/sidecarset", "pkg/controller/injectionsync", "pkg/predownload", "pkg/certificates", "pkg/objectstore",
}

const (
	beginMark = "<!-- packages: begin (go test ./test/docs -run TestArchitectureDiagram -update) -->"
	endMark   = "<!-- packages: end -->"
)

// TestArchitectureDiagram: the package diagram of docs/architecture.md is what the code's
// imports draw (non-test files; an edge from a component to each it imports).
func TestArchitectureDiagram(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	want := diagram(t, root)
	path := filepath.Join(root, "docs", "architecture.md")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(data)
	begin, end := strings.Index(doc, beginMark), strings.Index(doc, endMark)
	if begin < 0 || end < begin {
		t.Fatalf("%s has no %q ... %q block", path, beginMark, endMark)
	}
	got := doc[begin+len(beginMark) : end]
	if got == want {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(doc[:begin+len(beginMark)]+want+doc[end:]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("the package diagram of docs/architecture.md is not the code's; run go test ./test/docs -run TestArchitectureDiagram -update\nwant:%s", want)
}

// diagram draws the components and their imports as a Mermaid graph.
func diagram(t *testing.T, root string) string {
	edges := map[[2]string]bool{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel != "." && (strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_") || d.Name() == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		from := component(filepath.ToSlash(filepath.Dir(rel)))
		if from == "" || !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if to := component(strings.TrimPrefix(p, module+"/")); strings.HasPrefix(p, module+"/") && to != "" && to != from {
				edges[[2]string{from, to}] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for e := range edges {
		lines = append(lines, fmt.Sprintf("  %s --> %s", node(e[0]), node(e[1])))
	}
	slices.Sort(lines)
	return "\n\n```mermaid\ngraph LR\n" + strings.Join(lines, "\n") + "\n```\n\n"
}

// component returns the component dir belongs to, "" for none.
func component(dir string) string {
	best := ""
	for _, c := range components {
		if (dir == c || strings.HasPrefix(dir, c+"/")) && len(c) > len(best) {
			best = c
		}
	}
	return best
}

// node is a component as a Mermaid node: an id and its path as the label.
func node(c string) string {
	id := strings.NewReplacer("/", "_", "-", "_").Replace(c)
	return fmt.Sprintf("%s[%s]", id, c)
}
