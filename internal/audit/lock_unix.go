//go:build unix

package audit

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// lock takes the log at path for this process alone, with an exclusive
// lock on path+".lock" (made, mode 0600, if need be), held until the
// returned file is closed: two writers of one chain would break it where
// their lines interleave, which reads as tampering.
func lock(path string) (*os.File, error) {
	f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("audit log %s: %w", path, ErrInUse)
		}
		return nil, fmt.Errorf("audit log %s: locking %s.lock: %w", path, path, err)
	}
	return f, nil
}
