// Command e2esummary reads the `go test -json` logs of the end-to-end shards (hack/e2e.sh) and
// prints, for each shard, its top-level tests by time, the output of every failed test, and the
// phase line; then one closing line for the whole suite: "e2e: N passed, N failed, N skipped".
// Beside each <shard>.json it writes <shard>.log, the test output as go test -v prints it.
//
//	go run ./hack/e2esummary _output/e2e/main.json _output/e2e/serial-1.json ...
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// event is one line of `go test -json` (cmd/test2json).
type event struct {
	Action  string
	Test    string
	Elapsed float64
	Output  string
}

// shard is what one log says.
type shard struct {
	name                   string
	top                    []result // top-level tests
	failed                 []string // failed tests, leaves first
	output                 map[string][]string
	passed, fails, skipped int
	phases                 string
	packageFailed          bool
}

type result struct {
	test    string
	action  string
	elapsed float64
}

func main() {
	var total shard
	for _, path := range os.Args[1:] {
		s, err := read(path)
		if err != nil {
			fmt.Fprintln(os.Stderr, "e2esummary:", err)
			os.Exit(2)
		}
		s.print()
		total.passed += s.passed
		total.fails += s.fails
		total.skipped += s.skipped
	}
	fmt.Printf("e2e: %d passed, %d failed, %d skipped\n", total.passed, total.fails, total.skipped)
}

func read(path string) (*shard, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &shard{name: strings.TrimSuffix(filepath.Base(path), ".json"), output: map[string][]string{}}
	log, err := os.Create(strings.TrimSuffix(path, ".json") + ".log")
	if err != nil {
		return nil, err
	}
	defer log.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			fmt.Fprintln(log, sc.Text()) // not an event: a build error, say
			continue
		}
		fmt.Fprint(log, ev.Output)
		s.add(ev)
	}
	return s, sc.Err()
}

func (s *shard) add(ev event) {
	switch ev.Action {
	case "output":
		if strings.HasPrefix(ev.Output, "e2e phases:") {
			s.phases = strings.TrimSpace(ev.Output)
		}
		if ev.Test != "" {
			s.output[ev.Test] = append(s.output[ev.Test], ev.Output)
		}
	case "pass", "fail", "skip":
		if ev.Test == "" {
			s.packageFailed = s.packageFailed || ev.Action == "fail"
			return
		}
		if !strings.Contains(ev.Test, "/") {
			s.top = append(s.top, result{ev.Test, ev.Action, ev.Elapsed})
			s.count(ev.Action)
		}
		if ev.Action == "fail" {
			s.failed = append(s.failed, ev.Test)
		}
	}
}

func (s *shard) count(action string) {
	switch action {
	case "pass":
		s.passed++
	case "fail":
		s.fails++
	case "skip":
		s.skipped++
	}
}

func (s *shard) print() {
	sort.Slice(s.top, func(i, j int) bool { return s.top[i].elapsed > s.top[j].elapsed })
	fmt.Printf("== shard %s: %d passed, %d failed, %d skipped\n", s.name, s.passed, s.fails, s.skipped)
	for _, r := range s.top {
		fmt.Printf("   %8.1f s  %-4s %s\n", r.elapsed, r.action, r.test)
	}
	if s.phases != "" {
		fmt.Println("   " + s.phases)
	}
	if s.packageFailed && s.fails == 0 {
		fmt.Printf("-- shard %s failed outside any test (see its .log)\n", s.name)
	}
	for _, test := range s.failed {
		if s.hasFailedChild(test) {
			continue // its failed subtests say why
		}
		lines := testLines(s.output[test])
		if len(lines) > 60 {
			lines = lines[len(lines)-60:]
		}
		fmt.Printf("-- %s failed:\n%s", test, strings.Join(lines, ""))
	}
}

func (s *shard) hasFailedChild(test string) bool {
	for _, other := range s.failed {
		if strings.HasPrefix(other, test+"/") {
			return true
		}
	}
	return false
}

// testLines drops the client's log lines (klog: "I1126 17:55:16.319198 ...", warnings the server
// sent) from a test's output, keeping what the test itself printed.
func testLines(lines []string) []string {
	var out []string
	for _, l := range lines {
		if len(l) > 5 && strings.ContainsRune("IWEF", rune(l[0])) && l[1] >= '0' && l[1] <= '9' && l[5] == ' ' {
			continue
		}
		out = append(out, l)
	}
	return out
}
