// Command registry serves an OCI distribution registry (go-containerregistry's pkg/registry: the
// registry API of the distribution spec, blobs and manifests in memory) on a local address, for
// the release test (test/release/release_test.go): `make release` pushes into it and the test
// installs from it, as users install from a real registry.
//
// Usage: registry --addr=127.0.0.1:0 --addr-file=FILE
//
// It writes the address it listens on to --addr-file once it accepts connections, and serves until
// it is killed.
package main

import (
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"

	"github.com/google/go-containerregistry/pkg/registry"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "address to listen on")
	addrFile := flag.String("addr-file", "", "file to write the address listened on to")
	flag.Parse()
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	if *addrFile != "" {
		// Written to a temporary name and renamed, so a reader never sees half an address.
		if err := os.WriteFile(*addrFile+".tmp", []byte(listener.Addr().String()), 0o644); err != nil {
			log.Fatal(err)
		}
		if err := os.Rename(*addrFile+".tmp", *addrFile); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Fprintf(os.Stderr, "registry: serving on %s\n", listener.Addr())
	log.Fatal(http.Serve(listener, registry.New(registry.Logger(log.New(os.Stderr, "registry: ", log.LstdFlags)))))
}
