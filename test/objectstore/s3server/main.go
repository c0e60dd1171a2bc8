// Command s3server is a local S3-compatible object store for tests: github.com/rclone/gofakes3
// in memory, which checks AWS Signature Version 4 (a request signed with another key or over
// other bytes is refused), on a loopback address, with one bucket and one access key.
// TestBackupRestore (test/e2e) copies a snapshot through it with the server's `snapshot upload`
// and `snapshot download`.
//
//	s3server -listen 127.0.0.1:0 -bucket backups -access-key KEY -secret-key SECRET
//
// It prints "s3server: listening on http://ADDR" once it accepts connections, and serves until
// SIGINT or SIGTERM.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"

	"github.com/sidecarset/apiserver/test/objectstore/fakes3"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "address to listen on (loopback)")
	bucket := flag.String("bucket", "", "the bucket to create")
	accessKey := flag.String("access-key", "", "the access key ID requests must be signed with")
	secretKey := flag.String("secret-key", "", "its secret")
	flag.Parse()
	if *bucket == "" || *accessKey == "" || *secretKey == "" {
		log.Fatal("s3server: -bucket, -access-key and -secret-key are required")
	}
	handler, err := fakes3.New(*bucket, *accessKey, *secretKey)
	if err != nil {
		log.Fatal(err)
	}
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	if ip := l.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
		log.Fatalf("s3server: %s is not a loopback address", l.Addr())
	}
	fmt.Printf("s3server: listening on http://%s\n", l.Addr())
	go func() {
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
		<-sig
		_ = l.Close()
		os.Exit(0)
	}()
	log.Fatal(http.Serve(l, handler))
}
