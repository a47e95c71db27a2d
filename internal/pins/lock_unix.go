//go:build unix

package pins

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// lock takes the pins file at path for this caller alone, waiting for it,
// with an exclusive lock on path+".lock" (made, mode 0600, with its
// directory if need be), held until unlock: flock locks belong to an open
// file, so that two goroutines of one process exclude each other as two
// processes do.
func lock(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("pins file %s: %w", path, err)
	}
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("pins file %s: %w", path, err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pins file %s: locking %s.lock: %w", path, path, err)
	}
	return f, nil
}

// unlock releases a lock taken by lock.
func unlock(f *os.File) {
	if f != nil {
		f.Close() // closing the file releases its flock
	}
}
