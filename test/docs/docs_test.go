package docs

import (
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
)

const root = "../.."

// TestLinks: every relative link and image of README.md and docs/**/*.md names a file or folder
// of the repository, and every #anchor a heading of the Markdown file it points into (GitHub's
// anchors).
func TestLinks(t *testing.T) {
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	anchors := map[string]map[string]bool{}
	anchorsOf := func(rel string) (map[string]bool, error) {
		if a, ok := anchors[rel]; ok {
			return a, nil
		}
		content, err := ReadFile(root, rel)
		if err != nil {
			return nil, err
		}
		anchors[rel] = Anchors(content)
		return anchors[rel], nil
	}
	links := 0
	for _, f := range files {
		content, err := ReadFile(root, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range Links(content) {
			links++
			target, err := resolve(f, l.Target)
			if err != nil {
				t.Errorf("%s:%d: %s: %v", f, l.Line, l.Target, err)
				continue
			}
			if target.external {
				continue
			}
			info, err := os.Stat(filepath.Join(root, filepath.FromSlash(target.path)))
			if err != nil {
				t.Errorf("%s:%d: %s: %s does not exist", f, l.Line, l.Target, target.path)
				continue
			}
			if target.anchor == "" {
				continue
			}
			if info.IsDir() || !strings.HasSuffix(target.path, ".md") {
				t.Errorf("%s:%d: %s: an anchor into %s, which is not a Markdown file", f, l.Line, l.Target, target.path)
				continue
			}
			a, err := anchorsOf(target.path)
			if err != nil {
				t.Fatal(err)
			}
			if !a[target.anchor] {
				t.Errorf("%s:%d: %s: %s has no heading with the anchor #%s", f, l.Line, l.Target, target.path, target.anchor)
			}
		}
	}
	if links < 50 {
		t.Errorf("only %d links found in %d files: the parser misses some", links, len(files))
	}
}

// TestReachable: every page under docs/ can be reached from README.md by following links between
// the pages (the README's table of contents, then the pages' own links).
func TestReachable(t *testing.T) {
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	reached := map[string]bool{"README.md": true}
	queue := []string{"README.md"}
	for len(queue) > 0 {
		f := queue[0]
		queue = queue[1:]
		content, err := ReadFile(root, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range Links(content) {
			target, err := resolve(f, l.Target)
			if err != nil || target.external || !strings.HasSuffix(target.path, ".md") || reached[target.path] {
				continue
			}
			if target.path != "README.md" && !strings.HasPrefix(target.path, "docs/") {
				continue
			}
			if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(target.path))); err != nil {
				continue // TestLinks reports it
			}
			reached[target.path] = true
			queue = append(queue, target.path)
		}
	}
	for _, f := range files {
		if !reached[f] {
			t.Errorf("%s: no link leads to it from README.md (add it to the README's table of contents or to a page linked from it)", f)
		}
	}
}

// TestCommandBlocksMarked: every command block of README.md and docs/ is marked either to run
// against the local cluster (test/e2e TestDocs runs it) or to be skipped, with the reason.
func TestCommandBlocksMarked(t *testing.T) {
	files, err := Files(root)
	if err != nil {
		t.Fatal(err)
	}
	run, skip := 0, 0
	for _, f := range files {
		content, err := ReadFile(root, f)
		if err != nil {
			t.Fatal(err)
		}
		blocks, err := Blocks(f, content)
		if err != nil {
			t.Error(err)
			continue
		}
		for _, b := range blocks {
			switch {
			case b.Mark == "skip" && b.Reason == "":
				t.Errorf("%s: <!-- test: skip --> without a reason", b.Where())
			case b.IsCommand() && (b.Lang == "" || b.Lang == "text"):
				t.Errorf("%s: commands in a block without a language: tag it sh (commands) or console ($ commands and their output)", b.Where())
			case b.IsCommand() && b.Mark == "":
				t.Errorf("%s: a %s block without <!-- test: run --> or <!-- test: skip REASON --> on the line before it", b.Where(), b.Lang)
			case b.Mark != "" && !b.IsCommand() && !b.IsSidecarSetYAML():
				t.Errorf("%s: a test mark on a %q block, which is neither commands nor a SidecarSet manifest", b.Where(), b.Lang)
			}
			switch {
			case b.Mark == "run" || (b.IsSidecarSetYAML() && b.Mark == ""):
				run++
			case b.Mark == "skip":
				skip++
			}
		}
	}
	t.Logf("%d blocks run by TestDocs, %d skipped", run, skip)
	if run == 0 {
		t.Error("no block runs: TestDocs would check nothing")
	}
}

func TestAnchor(t *testing.T) {
	for in, want := range map[string]string{
		"NamespacedSidecarSet: sidecars for namespace owners":  "namespacedsidecarset-sidecars-for-namespace-owners",
		"GitOps: Argo CD and Flux":                             "gitops-argo-cd-and-flux",
		"Security: the namespace boundary in policy injection": "security-the-namespace-boundary-in-policy-injection",
		"`kubectl sidecarset check` finds **nothing**":         "kubectl-sidecarset-check-finds-nothing",
		"What's `sidecarset_rollout_stalled`?":                 "whats-sidecarset_rollout_stalled",
		"[Link](x.md) text":                                    "link-text",
		"Istio, Linkerd and the order of injectors":            "istio-linkerd-and-the-order-of-injectors",
	} {
		if got := Anchor(in); got != want {
			t.Errorf("Anchor(%q) = %q, want %q", in, got, want)
		}
	}
	a := Anchors("# A\n## A\n```\n# not a heading\n```\n## A\n")
	for _, want := range []string{"a", "a-1", "a-2"} {
		if !a[want] {
			t.Errorf("Anchors: no %q in %v", want, a)
		}
	}
	if a["not-a-heading"] {
		t.Error("Anchors: a comment in a code block taken for a heading")
	}
}

func TestBlocks(t *testing.T) {
	md := "text\n\n<!-- test: run NAME=x -->\n```console\n$ kubectl get sidecarset NAME \\\n  -o name\noutput NAME\n$ kubectl get pods\n```\n\n" +
		"- item\n\n  <!-- test: skip needs a real cluster -->\n  ```sh\n  kubectl delete -k artifacts/deploy\n  ```\n"
	blocks, err := Blocks("f.md", md)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 {
		t.Fatalf("%d blocks, want 2: %+v", len(blocks), blocks)
	}
	if b := blocks[0]; b.Mark != "run" || b.Line != 4 || b.Script() != "kubectl get sidecarset x \\\n  -o name\nkubectl get pods\n" {
		t.Errorf("block 1: %+v, script %q", b, b.Script())
	}
	if b := blocks[1]; b.Mark != "skip" || b.Reason != "needs a real cluster" || b.Text != "kubectl delete -k artifacts/deploy\n" || !b.IsCommand() {
		t.Errorf("block 2: %+v", b)
	}
	if _, err := Blocks("f.md", "<!-- test: runs -->\n```sh\nx\n```\n"); err == nil {
		t.Error("a malformed mark accepted")
	}
}

type target struct {
	external bool
	path     string // relative to the repository root
	anchor   string
}

// resolve resolves a link of file (relative to the root) to a repository path and anchor.
func resolve(file, link string) (target, error) {
	u, err := url.Parse(link)
	if err != nil {
		return target{}, err
	}
	if u.Scheme != "" || u.Host != "" {
		return target{external: true}, nil
	}
	anchor := u.Fragment
	if u.Path == "" {
		return target{path: file, anchor: anchor}, nil
	}
	if strings.HasPrefix(u.Path, "/") {
		return target{}, errFmt("an absolute path; use a path relative to the file")
	}
	p := path.Clean(path.Join(path.Dir(file), u.Path))
	if p == ".." || strings.HasPrefix(p, "../") {
		return target{}, errFmt("outside the repository")
	}
	return target{path: p, anchor: anchor}, nil
}

type errFmt string

func (e errFmt) Error() string { return string(e) }
