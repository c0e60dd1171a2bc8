package injection

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// admissionPrefix is the import path of the server's admission packages: the webhook adapter, the
// policy compiler and the admission plugins of SidecarSet writes.
const admissionPrefix = "github.com/sidecarset/apiserver/pkg/admission"

// domainDirs, relative to the module root, reason about pods without being admission: they share
// the injector's rules through this package and never import pkg/admission, tests included.
var domainDirs = []string{"pkg/injection", "pkg/sidecar", "pkg/controller/sidecarset", "cmd/kubectl-sidecarset"}

// TestAdmissionImporters: no Go file under domainDirs imports a package of pkg/admission, so
// that the layout says who uses what (the injection sync, which applies the compiler's plan, and
// the server's wiring do).
func TestAdmissionImporters(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("module root not found at %s: %v", root, err)
	}
	files := 0
	for _, dir := range domainDirs {
		err := filepath.WalkDir(filepath.Join(root, dir), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			files++
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == admissionPrefix || strings.HasPrefix(p, admissionPrefix+"/") {
					rel, _ := filepath.Rel(root, path)
					t.Errorf("%s imports %s: read the injector's rules from pkg/injection and the words of the paths from pkg/apis/apps", rel, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	// The walk must have seen the directories, or it proves nothing.
	if files < 50 {
		t.Fatalf("only %d Go files under %v", files, domainDirs)
	}
}
