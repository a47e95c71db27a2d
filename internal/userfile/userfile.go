// Package userfile keeps the files that Switchboard writes for its user
// (OAuth tokens, trusted project files, the tool cache): where the state
// ones live, and how each is replaced at once, readable by its owner alone.
package userfile

import (
	"errors"
	"os"
	"path/filepath"
)

// ErrNoHome means that no environment variable names a directory for the
// user's state.
var ErrNoHome = errors.New("no state directory: neither XDG_STATE_HOME, HOME nor USERPROFILE is set")

// StateDir returns Switchboard's state directory: switchboard under
// $XDG_STATE_HOME, or under ~/.local/state, where ~ is $HOME, or without it
// $USERPROFILE (as Windows has), the home the user's config file is found
// in. lookupEnv reads the environment; nil means os.LookupEnv.
func StateDir(lookupEnv func(string) (string, bool)) (string, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if dir, _ := lookupEnv("XDG_STATE_HOME"); filepath.IsAbs(dir) {
		return filepath.Join(dir, "switchboard"), nil
	}
	for _, home := range []string{"HOME", "USERPROFILE"} {
		if dir, _ := lookupEnv(home); dir != "" {
			return filepath.Join(dir, ".local", "state", "switchboard"), nil
		}
	}
	return "", ErrNoHome
}

// Replace replaces path with data atomically, so that a reader sees the old
// file or the new one: it writes a temporary file in path's directory
// (created 0700 if missing), readable by its owner alone, syncs it and
// renames it over path. prepare, if not nil, is called with the temporary
// file's name before data is written to it; an error from it stops the
// write. On error, path is unchanged and the temporary file is removed.
func Replace(path string, data []byte, prepare func(tmp string) error) (err error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	// CreateTemp already uses 0600 on Unix; Chmod makes it explicit.
	if err := f.Chmod(0o600); err != nil {
		return err
	}
	if prepare != nil {
		if err := prepare(f.Name()); err != nil {
			return err
		}
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return err
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename in dir durable, where the platform allows it. It is
// best-effort: the rename has already happened.
func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	d.Sync()
	d.Close()
}
