package userfile

import (
	"errors"
	"os"
)

// ErrLocked means that another holder has the lock [Lock] was asked for
// without waiting.
var ErrLocked = errors.New("locked by another process")

// Unlock releases a lock taken by [Lock]; nil is no lock.
func Unlock(f *os.File) {
	if f != nil {
		f.Close() // closing the file releases its flock
	}
}
