// Package docs reads the project's Markdown (README.md and docs/**/*.md) for the tests that keep
// it true: every relative link and anchor resolves, every page is reachable from the README, and
// every command block is either run against the local cluster (test/e2e, TestDocs) or says why not.
//
// The marking convention, on the line before a fenced block:
//
//	<!-- test: run -->                    run the block against the local cluster
//	<!-- test: run NAME=x NS=y -->        the same, with the placeholders NAME and NS (whole words)
//	                                      replaced by x and y first
//	<!-- test: skip REASON -->            never run it; REASON says why (a real cluster, Helm with
//	                                      images, something destroyed, a placeholder, ...)
//
// Command blocks are fenced blocks tagged sh, bash, shell or console, and untagged blocks whose
// first line starts with "$ " or "kubectl ": each must carry one of the marks. An sh block runs
// as one bash script (set -euo pipefail); a console block runs its "$ " lines and ignores the
// output lines. YAML blocks of a SidecarSet or NamespacedSidecarSet are applied with
// --dry-run=server unless marked skip.
package docs

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// Files returns README.md and every Markdown file under docs/, relative to root, sorted.
func Files(root string) ([]string, error) {
	files := []string{"README.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files[1:])
	return files, err
}

// Block is a fenced code block.
type Block struct {
	File string // relative to the repository root
	Line int    // of the opening fence, 1-based
	Lang string // the info string's first word
	Text string // the content, its fence's indentation removed
	// Mark is "run", "skip" or "" (none); Reason the skip's reason; Vars the run's placeholders.
	Mark   string
	Reason string
	Vars   map[string]string
}

// Where is the block's file:line.
func (b Block) Where() string { return fmt.Sprintf("%s:%d", b.File, b.Line) }

// IsCommand reports whether the block holds commands a user types.
func (b Block) IsCommand() bool {
	switch b.Lang {
	case "sh", "bash", "shell", "console":
		return true
	case "", "text":
		first := strings.TrimSpace(strings.SplitN(strings.TrimLeft(b.Text, "\n"), "\n", 2)[0])
		return strings.HasPrefix(first, "$ ") || strings.HasPrefix(first, "kubectl ")
	}
	return false
}

// IsSidecarSetYAML reports whether the block is a YAML manifest of a SidecarSet or a
// NamespacedSidecarSet of this server's group.
func (b Block) IsSidecarSetYAML() bool {
	if b.Lang != "yaml" && b.Lang != "yml" {
		return false
	}
	return strings.Contains(b.Text, "apiVersion: apps.kruise.io/") &&
		regexp.MustCompile(`(?m)^kind: (Namespaced)?SidecarSet\s*$`).MatchString(b.Text)
}

// Script returns what a user types: the commands of a console block (its "$ " lines, with their
// continuation lines), the whole of any other block, with the run's placeholders replaced.
func (b Block) Script() string {
	text := b.Text
	if b.Lang == "console" || strings.HasPrefix(strings.TrimSpace(text), "$ ") {
		var cmds []string
		cont := false
		for _, l := range strings.Split(text, "\n") {
			if c, ok := strings.CutPrefix(l, "$ "); ok || cont {
				if !ok {
					c = l
				}
				cmds = append(cmds, c)
				cont = strings.HasSuffix(c, "\\")
			}
		}
		text = strings.Join(cmds, "\n") + "\n"
	}
	keys := make([]string, 0, len(b.Vars))
	for k := range b.Vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		text = regexp.MustCompile(`\b`+regexp.QuoteMeta(k)+`\b`).ReplaceAllLiteralString(text, b.Vars[k])
	}
	return text
}

var (
	fence = regexp.MustCompile("^( *)(```+|~~~+)\\s*([^`\\s]*)")
	mark  = regexp.MustCompile(`^\s*<!--\s*test:\s*(run|skip)\b(.*?)-->\s*$`)
)

// Blocks returns the fenced blocks of a Markdown file, with the mark on the line before each
// (the nearest non-blank line). A malformed mark is an error.
func Blocks(file, content string) ([]Block, error) {
	lines := strings.Split(content, "\n")
	var out []Block
	for i := 0; i < len(lines); i++ {
		m := fence.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		indent, delim := len(m[1]), m[2]
		b := Block{File: file, Line: i + 1, Lang: strings.ToLower(m[3])}
		for j := i - 1; j >= 0; j-- {
			if strings.TrimSpace(lines[j]) == "" {
				continue
			}
			if mm := mark.FindStringSubmatch(lines[j]); mm != nil {
				b.Mark = mm[1]
				arg := strings.TrimSpace(mm[2])
				if b.Mark == "skip" {
					b.Reason = arg
				} else if arg != "" {
					b.Vars = map[string]string{}
					for _, kv := range strings.Fields(arg) {
						k, v, ok := strings.Cut(kv, "=")
						if !ok || k == "" {
							return nil, fmt.Errorf("%s:%d: %q: a run mark takes NAME=VALUE placeholders only", file, j+1, lines[j])
						}
						b.Vars[k] = v
					}
				}
			} else if strings.Contains(lines[j], "<!--") && strings.Contains(lines[j], "test:") {
				return nil, fmt.Errorf("%s:%d: %q is not <!-- test: run [NAME=VALUE...] --> nor <!-- test: skip REASON -->", file, j+1, lines[j])
			}
			break
		}
		var body []string
		closed := false
		for i++; i < len(lines); i++ {
			l := lines[i]
			if t := strings.TrimLeft(l, " "); strings.HasPrefix(t, delim) && strings.TrimSpace(strings.TrimLeft(t, delim[:1])) == "" {
				closed = true
				break
			}
			for k := 0; k < indent && strings.HasPrefix(l, " "); k++ {
				l = l[1:]
			}
			body = append(body, l)
		}
		if !closed {
			return nil, fmt.Errorf("%s:%d: the block is not closed", file, b.Line)
		}
		b.Text = strings.Join(body, "\n") + "\n"
		out = append(out, b)
	}
	return out, nil
}

// Link is a Markdown link or image in a file's text (outside code).
type Link struct {
	Line   int
	Target string
}

var (
	inlineLink = regexp.MustCompile(`!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	htmlHref   = regexp.MustCompile(`(?:href|src)="([^"]+)"`)
)

// Links returns the links of a Markdown file, outside code blocks and code spans.
func Links(content string) []Link {
	var out []Link
	inCode, delim := false, ""
	for i, l := range strings.Split(content, "\n") {
		if m := fence.FindStringSubmatch(l); m != nil {
			if !inCode {
				inCode, delim = true, m[2]
				continue
			}
			if strings.HasPrefix(strings.TrimLeft(l, " "), delim) {
				inCode = false
				continue
			}
		}
		if inCode {
			continue
		}
		l = codeSpan.ReplaceAllString(l, "")
		for _, m := range inlineLink.FindAllStringSubmatch(l, -1) {
			out = append(out, Link{Line: i + 1, Target: m[1]})
		}
		for _, m := range htmlHref.FindAllStringSubmatch(l, -1) {
			out = append(out, Link{Line: i + 1, Target: m[1]})
		}
	}
	return out
}

var (
	heading   = regexp.MustCompile(`^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$`)
	mdLink    = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	notAnchor = regexp.MustCompile(`[^\p{L}\p{M}\p{N}\p{Pc}\- ]`)
)

// Anchor is GitHub's anchor of a heading's text: the rendered text lowercased, punctuation
// dropped (letters, digits, '-', '_' and spaces stay), spaces turned into '-'.
func Anchor(text string) string {
	text = mdLink.ReplaceAllString(text, "$1")
	text = strings.NewReplacer("`", "", "**", "", "*", "").Replace(text)
	text = strings.ToLower(strings.TrimSpace(text))
	text = notAnchor.ReplaceAllString(text, "")
	return strings.ReplaceAll(text, " ", "-")
}

// Anchors returns the anchors of a Markdown file's headings (outside code blocks), repeated
// headings numbered as GitHub numbers them (-1, -2, ...), and the ids of HTML anchors.
func Anchors(content string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inCode, delim := false, ""
	for _, l := range strings.Split(content, "\n") {
		if m := fence.FindStringSubmatch(l); m != nil {
			if !inCode {
				inCode, delim = true, m[2]
				continue
			}
			if strings.HasPrefix(strings.TrimLeft(l, " "), delim) {
				inCode = false
				continue
			}
		}
		if inCode {
			continue
		}
		for _, m := range regexp.MustCompile(`<a (?:name|id)="([^"]+)"`).FindAllStringSubmatch(l, -1) {
			out[m[1]] = true
		}
		m := heading.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		a := Anchor(m[2])
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// ReadFile reads a file relative to root.
func ReadFile(root, rel string) (string, error) {
	b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	return string(b), err
}
