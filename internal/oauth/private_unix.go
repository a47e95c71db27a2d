//go:build !windows

package oauth

import (
	"fmt"
	"os"
	"syscall"
)

// private returns a *FileError unless f, a token file, is readable by its
// owner alone: no permission bit for group or others.
func private(f *os.File) error {
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("oauth: %w", err)
	}
	if mode := info.Mode().Perm(); mode&0o077 != 0 {
		return &FileError{Path: f.Name(), Problem: fmt.Sprintf("readable by others (mode %#o)", mode),
			Fix: fmt.Sprintf("run: chmod 600 %s", f.Name())}
	}
	return nil
}

// makePrivate does nothing on Unix: the store creates its directory with
// mode 0700 and its files, with os.CreateTemp, 0600.
func makePrivate(string) error { return nil }

// fileID identifies the file behind info: its inode.
func fileID(info os.FileInfo) string {
	if st, ok := info.Sys().(*syscall.Stat_t); ok {
		return fmt.Sprint(st.Ino)
	}
	return ""
}
