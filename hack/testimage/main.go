// Command testimage is the program of the local real node's test images (sidecarset.dev/test:vN,
// built by hack/local-up.sh with -ldflags "-X main.version=vN", so that every version has its own
// digest). It prints what a test wants to see through the pod's log:
//
//	version=vN                         first line, and the version of every later line's container
//	env NAME=VALUE                     the environment it received, sorted
//	file PATH: CONTENT                 each file under the directories of LIST_DIRS (comma-separated),
//	                                   again whenever what they hold changes (checked every 200 ms)
//
// WRITE_FILE=PATH=CONTENT writes CONTENT to PATH at start (e.g. into a volume shared with another
// container). With PORT set it serves GET /ready (200, body "vN") and GET /version on that port,
// for a readiness probe. SIGTERM or SIGINT ends it with status 0.
package main

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

// version is set at build time (-ldflags "-X main.version=vN").
var version = "dev"

func main() {
	out := os.Stdout
	fmt.Fprintf(out, "version=%s\n", version)
	env := os.Environ()
	sort.Strings(env)
	for _, kv := range env {
		fmt.Fprintf(out, "env %s\n", kv)
	}
	if w := os.Getenv("WRITE_FILE"); w != "" {
		path, content, _ := strings.Cut(w, "=")
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			fmt.Fprintf(out, "write %s: %v\n", path, err)
		} else {
			fmt.Fprintf(out, "wrote %s\n", path)
		}
	}
	if port := os.Getenv("PORT"); port != "" {
		ln, err := net.Listen("tcp", ":"+port)
		if err != nil {
			fmt.Fprintf(out, "listen: %v\n", err)
			os.Exit(1)
		}
		mux := http.NewServeMux()
		for _, p := range []string{"/ready", "/version"} {
			mux.HandleFunc(p, func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, version) })
		}
		go func() { _ = http.Serve(ln, mux) }()
		fmt.Fprintf(out, "serving on :%s\n", port)
	}

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	var dirs []string
	for _, d := range strings.Split(os.Getenv("LIST_DIRS"), ",") {
		if d = strings.TrimSpace(d); d != "" {
			dirs = append(dirs, d)
		}
	}
	last := ""
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		if len(dirs) > 0 {
			if now := listing(dirs); now != last {
				fmt.Fprint(out, now)
				last = now
			}
		}
		select {
		case s := <-signals:
			fmt.Fprintf(out, "version=%s stopping on %s\n", version, s)
			os.Exit(0)
		case <-tick.C:
		}
	}
}

// listing returns one line per regular file under dirs: its path and its first 200 bytes.
func listing(dirs []string) string {
	var b strings.Builder
	for _, dir := range dirs {
		_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
			if err != nil {
				fmt.Fprintf(&b, "file %s: error %v\n", path, err)
				return nil
			}
			if !info.Mode().IsRegular() {
				return nil
			}
			data, err := os.ReadFile(path)
			if err != nil {
				fmt.Fprintf(&b, "file %s: error %v\n", path, err)
				return nil
			}
			if len(data) > 200 {
				data = data[:200]
			}
			fmt.Fprintf(&b, "file %s: %s\n", path, strings.ReplaceAll(string(data), "\n", `\n`))
			return nil
		})
	}
	return b.String()
}
