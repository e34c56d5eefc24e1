package framework

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockTree takes the working tree's build lock and returns its release. make e2e-node runs the
// node suite's tests in several processes side by side (hack/testqueue), all in one working
// tree: `make image` rewrites dist/image while another process's `make image-push` or `make
// release` reads it, so each test holds this lock around the make it runs. An flock on a file in
// bin/: it goes with the process that holds it, however that process ends.
func LockTree(root string) (unlock func(), err error) {
	path := filepath.Join(root, "bin", ".tree.lock")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
