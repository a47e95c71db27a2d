//go:build unix

package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A config that is not a regular file is refused before it is read: a
// symbolic link to /dev/zero would be read without end, and a FIFO that
// nobody writes would block its open for ever.
func TestLoadSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	zero := filepath.Join(dir, "zero.json")
	if err := os.Symlink("/dev/zero", zero); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := write(t, filepath.Join(dir, "big.json"), `{"mcpServers": {}, "x": "`+strings.Repeat("a", MaxFileSize)+`"}`)
	tests := []struct {
		path, want string
	}{
		{zero, zero + ": read: not a regular file (a device); want a regular file"},
		{fifo, fifo + ": read: not a regular file (a named pipe); want a regular file"},
		{big, big + ": read: larger than 4 MiB; a config file is far smaller"},
	}
	for _, tt := range tests {
		_, err := Load(&LoadOptions{Paths: []string{tt.path}, LookupEnv: env(nil)})
		if errString(err) != tt.want {
			t.Errorf("Load(%s) error = %v, want %q", tt.path, err, tt.want)
		}
	}
	// Discovery refuses it too, before any trust is asked, and goes on
	// without it: a repository's file must not stop every verb.
	if err := os.Symlink("/dev/zero", filepath.Join(dir, ProjectFile)); err != nil {
		t.Fatal(err)
	}
	cfg, err := Load(&LoadOptions{Dir: dir, LookupEnv: env(nil), Trust: &TrustStore{}})
	want := filepath.Join(dir, ProjectFile) + ": read: not a regular file (a device); want a regular file; it is ignored"
	if err != nil || len(cfg.Warnings) != 1 || cfg.Warnings[0].Error() != want {
		t.Errorf("Load by discovery = %v, warnings %v; want the warning %q", err, cfg.Warnings, want)
	}
}
