// Command etcd is etcd's own server entrypoint, built from the Go module proxy so that tests never
// download a release binary.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
